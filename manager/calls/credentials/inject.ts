/**
 * Injection at execution (G5): credential params name a stored credential; just before a call runs
 * the manager replaces each name with the value, and scrubs every value out of what comes back.
 */
import { credentialParams, type InjectedSecret } from "../../../skill/credential.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { Skill } from "../../../skill/types.ts";
import type { CredentialStore } from "./store.ts";

// Scrubbing lives in the skill framework so that edges (which receive values) can use it too.
export { MIN_SCRUB_LENGTH, scrubSecrets, type InjectedSecret } from "../../../skill/credential.ts";

/**
 * A copy of `params` with each credential param's name replaced by the stored value, and the
 * secrets used (one per distinct credential). Absent (undefined) params are left alone; the input
 * object is not modified. Fails like CredentialStore.resolve (not_found, failed_precondition).
 */
export async function injectCredentials(
  skill: Skill,
  params: Record<string, unknown>,
  store: Pick<CredentialStore, "resolve">,
): Promise<{ params: Record<string, unknown>; secrets: InjectedSecret[] }> {
  const out: Record<string, unknown> = { ...params };
  const byName = new Map<string, string>();
  for (const param of credentialParams(skill)) {
    const name = params[param];
    if (name === undefined) continue;
    if (typeof name !== "string") {
      throw new OngridError("invalid_argument", `param "${param}": must be the name of a stored credential (rule: type)`);
    }
    let value = byName.get(name);
    if (value === undefined) {
      value = await store.resolve(name);
      byName.set(name, value);
    }
    out[param] = value;
  }
  return { params: out, secrets: [...byName].map(([name, value]) => ({ name, value })) };
}
