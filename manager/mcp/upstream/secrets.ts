/**
 * An upstream's env and header values, resolved: credential references are looked up in the
 * encrypted store each time the upstream is (re)connected, so the config holds names only; the
 * values used are kept to scrub them out of anything the upstream says back.
 */
import { scrubSecrets, type InjectedSecret } from "../../../skill/credential.ts";
import { OngridError } from "../../../skill/errors.ts";
import { redactString } from "../../../skill/redact.ts";
import type { McpSecretValue } from "../../config/schema.ts";
import type { CredentialStore } from "../../calls/credentials/store.ts";

/** Values by name, ready for a process environment or HTTP headers, and the secrets among them. */
export interface ResolvedValues {
  values: Record<string, string>;
  /** The credentials' values, by credential name: scrubbed from everything the upstream returns. */
  secrets: InjectedSecret[];
  /** Every value as the config or the store gave it, by credential or field (e.g. "env.api_url"): scrubbed from log lines too. */
  all: InjectedSecret[];
}

/** Resolves `{credential: NAME, prefix?}` values from the store; plain strings stay as they are. Throws naming the field and the credential, never a value. */
export async function resolveValues(
  what: string,
  entries: Readonly<Record<string, McpSecretValue>>,
  store: Pick<CredentialStore, "resolve"> | undefined,
): Promise<ResolvedValues> {
  const values: Record<string, string> = {};
  const secrets: InjectedSecret[] = [];
  const all: InjectedSecret[] = [];
  for (const [name, v] of Object.entries(entries)) {
    if (typeof v === "string") {
      values[name] = v;
      // Lower case: ongrid's redaction knows [credential:<lower-case name>] markers and leaves them readable.
      all.push({ name: `${what}.${name}`.toLowerCase(), value: v });
      continue;
    }
    if (!store) {
      throw new OngridError("failed_precondition", `${what}.${name}: credential "${v.credential}" cannot be read: this manager has no credential store`, "configure credentials.key_file (docs/security.md, \"Credentials\")");
    }
    let secret: string;
    try {
      secret = await store.resolve(v.credential);
    } catch (err) {
      const e = err as OngridError;
      throw new OngridError(e.code ?? "failed_precondition", `${what}.${name}: ${e.message}`, e.hint ?? "");
    }
    values[name] = `${v.prefix ?? ""}${secret}`;
    secrets.push({ name: v.credential, value: secret });
    all.push({ name: v.credential, value: secret });
  }
  return { values, secrets, all };
}

/** Longest text of an upstream's a log line or error message carries. */
export const MAX_UPSTREAM_TEXT = 2000;

/** Text from or about an upstream, fit for a log line, an error message or the audit log: secrets scrubbed, redacted, bounded. */
export function cleanText(text: string, secrets: readonly InjectedSecret[], max = MAX_UPSTREAM_TEXT): string {
  const scrubbed = redactString(scrubSecrets(text, secrets));
  return scrubbed.length > max ? `${scrubbed.slice(0, max)}…` : scrubbed;
}

/** An error's message (and its cause's, as fetch reports connection failures), cleaned like cleanText. */
export function describeError(err: unknown, secrets: readonly InjectedSecret[]): string {
  if (!(err instanceof Error)) return cleanText(String(err), secrets, 500);
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  const causeText = cause && typeof cause === "object" ? [cause.code, cause.message].filter((x) => typeof x === "string" && x).join(" ") : "";
  const text = causeText && !err.message.includes(causeText) ? `${err.message} (${causeText})` : err.message;
  return cleanText(text || err.name, secrets, 500);
}
