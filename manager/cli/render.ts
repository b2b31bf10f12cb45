/**
 * How the CLI shows a call's result to a person: multi-line text (a command's stdout and stderr, a
 * log's lines) as text blocks, other fields one per line, a failure as a failure with its code and
 * hint, and nothing at all (never `null`) for a call that returned no output. `--json` prints the
 * envelope itself.
 */

/** A result envelope as toJson(SkillResultSchema, …, { useProtoFieldName: true }) gives it. */
export interface EnvelopeJson {
  success?: boolean;
  output?: unknown;
  error?: { code?: string; message?: string; hint?: string };
  duration_ms?: string | number;
  truncated?: boolean;
  edge_id?: string;
}

/** The heading line of a text block. */
const heading = (name: string) => `── ${name} ──`;

/** A scalar as one line: strings as written, everything else as JSON. */
function scalar(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** Lines of a value indented by `pad`, pretty JSON for structures. */
function indented(v: unknown, pad: string): string[] {
  return JSON.stringify(v, null, 2)
    .split("\n")
    .map((l) => pad + l);
}

/** The output of a call as text lines; an empty list when there is no output. */
export function renderOutput(output: unknown): string[] {
  if (output === null || output === undefined) return [];
  if (typeof output === "string") return output.replace(/\n$/, "").split("\n");
  if (typeof output !== "object" || Array.isArray(output)) return JSON.stringify(output, null, 2).split("\n");
  const fields: string[] = [];
  const blocks: string[] = [];
  for (const [k, v] of Object.entries(output as Record<string, unknown>)) {
    if (typeof v === "string" && (v.includes("\n") || /^(stdout|stderr|output|log|content)$/.test(k))) {
      blocks.push(heading(k), ...(v === "" ? ["(empty)"] : v.replace(/\n$/, "").split("\n")));
    } else if (v !== null && typeof v === "object") {
      fields.push(`${k}:`, ...indented(v, "  "));
    } else {
      fields.push(`${k}: ${scalar(v)}`);
    }
  }
  return [...fields, ...blocks];
}

/** The status line(s) of a call: what ran where, ok or failed with code, message and hint. */
export function renderStatus(key: string, env: EnvelopeJson, auditSeq: string): string[] {
  const where = env.edge_id ? ` on ${env.edge_id}` : "";
  const tail = `(${env.duration_ms ?? 0} ms${env.truncated ? ", output truncated" : ""}, audit row ${auditSeq})`;
  if (env.success) return [`ok: ${key}${where} ${tail}`];
  const e = env.error ?? {};
  const lines = [`FAILED: ${key}${where}: ${e.code ?? "error"}: ${e.message ?? "(no message)"} ${tail}`];
  if (e.hint) lines.push(`hint: ${e.hint}`);
  return lines;
}

/** Prints a call's result for a person: the output on stdout, the status on stderr. */
export function printResult(key: string, env: EnvelopeJson, auditSeq: string): void {
  const out = renderOutput(env.output);
  if (out.length) console.log(out.join("\n"));
  console.error(renderStatus(key, env, auditSeq).join("\n"));
}
