/**
 * Runs one pack call (E1): params as one JSON document on stdin, the result as JSON on stdout,
 * stderr captured; its own process group, a minimal environment, the pack directory as cwd.
 */
import { SkillError } from "../errors.ts";
import { ProcessStartError, runProcess, SYSTEM_PATH, type ProcessResult } from "../subprocess.ts";
import type { SkillContext } from "../types.ts";
import type { PackSkillSpec } from "./manifest.ts";

/** How much of stderr (its end) an error message carries. */
const STDERR_TAIL = 2000;
/** A pack's own error code must look like one of ours: lower_snake, short. */
const PACK_CODE = /^[a-z][a-z0-9_]{0,63}$/;
/**
 * Codes only the platform reports (a pack claiming one would pass for a cancel or our own fault).
 * deadline_exceeded stays open: a pack that stops a slow tool before its deadline says just that.
 */
const RESERVED_CODES = new Set(["cancelled", "internal", "pack_error", "pack_start_failed", "pack_exit_nonzero", "pack_bad_output", "pack_output_too_large"]);

/** The environment a pack sees: a fixed minimum, the call's identity, and the variables its manifest allows. */
export function packEnv(spec: PackSkillSpec, ctx: SkillContext, from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = { PATH: SYSTEM_PATH, LANG: "C.UTF-8" };
  for (const name of spec.env) {
    // ONGRID_* is ours: the call's identity below, and the agent's own settings and secrets
    // (ONGRID_EDGE_TOKEN, …), which a manifest must not be able to ask for.
    if (name.startsWith("ONGRID_")) continue;
    const v = from[name];
    if (v !== undefined) env[name] = v;
  }
  env.ONGRID_SKILL_KEY = spec.key;
  env.ONGRID_CALL_ID = ctx.callId;
  env.ONGRID_DEADLINE_UNIX_MS = String(ctx.deadline);
  env.ONGRID_EDGE_ID = ctx.edgeId;
  return env;
}

/** Executes the pack for one validated call; resolves with its output or throws a SkillError naming what went wrong. */
export async function runPack(spec: PackSkillSpec, ctx: SkillContext, params: Record<string, unknown>): Promise<unknown> {
  const left = ctx.deadline - Date.now();
  const timeoutMs = Math.max(1, Math.min(spec.timeoutMs, left));
  let res: ProcessResult;
  try {
    res = await runProcess({
      file: spec.executable,
      args: spec.args,
      cwd: spec.dir,
      // The pack is told the deadline it will really be killed at: the earlier of the call's and its own.
      env: packEnv(spec, { ...ctx, deadline: Date.now() + timeoutMs }),
      input: JSON.stringify(params),
      signal: ctx.signal,
      timeoutMs,
      maxOutputBytes: spec.outputCapBytes,
      killOnStdoutOverflow: true,
    });
  } catch (err) {
    if (err instanceof ProcessStartError) {
      throw new SkillError(
        "pack_start_failed",
        `pack "${spec.key}": cannot start ${spec.executable}: ${err.code}`,
        err.code === "ENOENT" ? "the pack's executable (or its interpreter) is missing; reinstall the pack and rescan" : "check the executable's permissions",
      );
    }
    throw err;
  }
  const stderr = tail(res.stderr);
  if (res.cancelled) throw new SkillError("cancelled", `pack "${spec.key}" was cancelled; its process group was killed`, "run it again if the result is still needed");
  // Checked before the timeout: a pack stopped for writing too much may also have run into its
  // deadline while being killed, and "raise the timeout" would be the wrong advice.
  if (res.stdoutTruncated) {
    throw new SkillError(
      "pack_output_too_large",
      `pack "${spec.key}" wrote more than ${spec.outputCapBytes} bytes to stdout`,
      "narrow the request (a filter, a limit), or raise output_cap_bytes in skill.json",
    );
  }
  if (res.timedOut) {
    const own = spec.timeoutMs <= left;
    throw new SkillError(
      "deadline_exceeded",
      `pack "${spec.key}" did not finish within ${timeoutMs} ms${own ? " (its skill.json timeout)" : ""}; its process group was killed${stderr ? `; stderr: ${stderr}` : ""}`,
      own ? "raise timeout in skill.json if the work really takes longer, or narrow the request" : "retry with a longer deadline or a narrower request",
    );
  }
  const parsed = parseStdout(res.stdout);
  if (res.exitCode !== 0) {
    // A pack that reported a structured error and then exited non-zero said what went wrong: use it.
    if (parsed.ok && isErrorDoc(parsed.value)) throw packError(spec, parsed.value.error, (parsed.value as { output?: unknown }).output);
    const how = res.exitCode === null ? `was killed by ${res.signal}` : `exited with code ${res.exitCode}`;
    throw new SkillError("pack_exit_nonzero", `pack "${spec.key}" ${how}${stderr ? `; stderr: ${stderr}` : " with no stderr"}`, "see the pack's README for what this exit means");
  }
  if (!parsed.ok) {
    throw new SkillError(
      "pack_bad_output",
      `pack "${spec.key}" did not write one JSON document to stdout: ${parsed.reason}${stderr ? `; stderr: ${stderr}` : ""}`,
      'a pack prints {"output": ...} or {"error": {"code", "message", "hint"}} on stdout and logs to stderr',
    );
  }
  const doc = parsed.value;
  if (isErrorDoc(doc)) throw packError(spec, doc.error, (doc as { output?: unknown }).output);
  if (typeof doc === "object" && doc !== null && !Array.isArray(doc) && Object.hasOwn(doc, "output")) {
    const extra = Object.keys(doc).filter((k) => k !== "output");
    if (!extra.length) return (doc as { output: unknown }).output;
  }
  throw new SkillError(
    "pack_bad_output",
    `pack "${spec.key}" wrote JSON without the result shape: expected {"output": ...} or {"error": {...}}, got ${describe(doc)}`,
    'wrap the result: print {"output": <value>}',
  );
}

function parseStdout(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (!text.trim()) return { ok: false, reason: "stdout was empty" };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, reason: `${(err as Error).message} (stdout began ${JSON.stringify(text.slice(0, 80))})` };
  }
}

function isErrorDoc(v: unknown): v is { error: { code?: unknown; message?: unknown; hint?: unknown } } {
  if (typeof v !== "object" || v === null || Array.isArray(v) || !Object.hasOwn(v, "error")) return false;
  const e = (v as { error: unknown }).error;
  // {"error": …}, or {"error": …, "output": …} for a failure that has something to show.
  const keys = Object.keys(v);
  return typeof e === "object" && e !== null && !Array.isArray(e) && keys.every((k) => k === "error" || k === "output");
}

function packError(spec: PackSkillSpec, e: { code?: unknown; message?: unknown; hint?: unknown }, output?: unknown): SkillError {
  const code = typeof e.code === "string" && PACK_CODE.test(e.code) && !RESERVED_CODES.has(e.code) ? e.code : "pack_error";
  const message = typeof e.message === "string" && e.message ? e.message : `pack "${spec.key}" reported an error without a message`;
  return new SkillError(code, message, typeof e.hint === "string" ? e.hint : "", output);
}

function tail(s: string): string {
  const t = s.trim();
  return t.length > STDERR_TAIL ? `…${t.slice(-STDERR_TAIL)}` : t;
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return "an array";
  if (v === null) return "null";
  if (typeof v === "object") return `an object with ${Object.keys(v).slice(0, 5).map((k) => JSON.stringify(k)).join(", ") || "no fields"}`;
  return `a ${typeof v}`;
}
