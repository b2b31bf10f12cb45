import type { Logger } from "pino";
import { OngridError, SkillError } from "./errors.ts";
import { toPlainJson } from "./json.ts";
import { redact, redactString } from "./redact.ts";
import { truncateOutput } from "./truncate.ts";
import type { EnvelopeError, ResultEnvelope, Skill, SkillContext, SkillInvocation } from "./types.ts";

/** What runSkill needs besides the skill and its (already validated) params. */
export interface RunOptions {
  /** Unique id of this call, for audit correlation. */
  callId: string;
  /** Deadline relative to now; larger values are clamped to about 24 days (setTimeout's limit). */
  timeoutMs: number;
  /** Size cap of the output, see truncateOutput. */
  outputCapBytes: number;
  log: Logger;
  /** Skill-specific settings from configuration. */
  settings?: Readonly<Record<string, unknown>>;
  /** The edge running the call; "" (the default) on the manager. */
  edgeId?: string;
  /** Cancels the call when aborted (client went away, session ended). */
  signal?: AbortSignal;
  /** Who made the call, for manager skills that call other skills (see SkillContext.invocation). */
  invocation?: SkillInvocation;
}

const MAX_TIMER_MS = 2_147_483_647;
const DEADLINE = Symbol("deadline");

/**
 * Runs one validated call and always resolves to a result envelope (A5): deadline and
 * cancellation are enforced even for executors that ignore the signal, failures become
 * {code, message, hint} the model can act on, and output is made plain JSON (toPlainJson), redacted,
 * then truncated.
 */
export async function runSkill(skill: Skill, params: Record<string, unknown>, opts: RunOptions): Promise<ResultEnvelope> {
  const started = performance.now();
  const edgeId = typeof opts.edgeId === "string" ? opts.edgeId : "";
  const capValid = opts.outputCapBytes > 0;
  const cap = capValid ? opts.outputCapBytes : Infinity;
  const key = skill?.meta?.key ?? "(unknown)";
  const finish = (success: boolean, output: unknown, error?: EnvelopeError): ResultEnvelope => {
    const envelope: ResultEnvelope = { success, output: null, duration_ms: Math.round(performance.now() - started), truncated: false, edge_id: edgeId };
    try {
      // Plain JSON first (bigint → string, Date → ISO string, undefined/functions/symbols dropped), so the
      // envelope always serialises; then redacted, then cut to the cap.
      const plain = toPlainJson(output);
      const cut = truncateOutput(redact(plain === undefined ? null : plain), cap);
      envelope.output = cut.output;
      envelope.truncated = cut.truncated;
      if (error) {
        envelope.error = {
          code: error.code,
          message: String(truncateOutput(redactString(error.message), cap).output),
          hint: String(truncateOutput(redactString(error.hint), cap).output),
        };
      }
    } catch (err) {
      envelope.success = false;
      envelope.output = null;
      envelope.error = { code: "internal", message: `could not prepare the output of skill "${key}": ${(err as Error)?.message ?? String(err)}`, hint: "Report this to an operator." };
    }
    return envelope;
  };

  if (!(opts.timeoutMs > 0)) {
    return finish(false, null, { code: "invalid_argument", message: `timeoutMs must be a positive number, got ${opts.timeoutMs}`, hint: "Call with a positive timeout." });
  }
  if (!capValid) {
    return finish(false, null, { code: "invalid_argument", message: `outputCapBytes must be a positive number, got ${opts.outputCapBytes}`, hint: "Call with a positive output cap." });
  }
  if (opts.signal?.aborted) return finish(false, null, cancelledError(key));

  const timeoutMs = Math.min(opts.timeoutMs, MAX_TIMER_MS);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(DEADLINE), timeoutMs);
  const onCancel = () => controller.abort(opts.signal?.reason ?? new Error("cancelled"));
  opts.signal?.addEventListener("abort", onCancel, { once: true });
  let log: Logger = opts.log;
  try {
    log = opts.log.child({ skill: key, call_id: opts.callId });
  } catch {
    /* keep the parent logger */
  }
  const ctx: SkillContext = {
    signal: controller.signal,
    deadline: Date.now() + timeoutMs,
    callId: opts.callId,
    log,
    settings: opts.settings ?? {},
    edgeId,
    ...(opts.invocation ? { invocation: opts.invocation } : {}),
  };

  const aborted = new Promise<"aborted">((resolve) => {
    if (controller.signal.aborted) resolve("aborted");
    else controller.signal.addEventListener("abort", () => resolve("aborted"), { once: true });
  });
  const execution = Promise.resolve().then(() => skill.execute(ctx, params));
  const outcome = execution.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  // An executor that ignores the signal keeps running in the background; its late result is dropped.
  void outcome.then(() => {
    if (controller.signal.aborted) log.debug("executor settled after the call had ended");
  });

  try {
    const first = await Promise.race([outcome, aborted]);
    if (first === "aborted" || (!first.ok && controller.signal.aborted)) {
      return controller.signal.reason === DEADLINE
        ? finish(false, null, {
            code: "deadline_exceeded",
            message: `skill "${key}" did not finish within ${timeoutMs} ms`,
            hint: "Retry with a narrower request (fewer targets, a shorter time range, a smaller limit) or a longer timeout.",
          })
        : finish(false, null, cancelledError(key));
    }
    if (first.ok) return finish(true, first.value);
    return finish(false, first.error instanceof SkillError ? (first.error.output ?? null) : null, failure(key, first.error, log));
  } catch (err) {
    return finish(false, null, failure(key, err, log));
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onCancel);
  }
}

function cancelledError(key: string): EnvelopeError {
  return {
    code: "cancelled",
    message: `the call of skill "${key}" was cancelled before it finished`,
    hint: "The caller cancelled the call; run it again if the result is still needed.",
  };
}

/** SkillError and OngridError keep their code and hint; anything else is "internal", without a stack. */
function failure(key: string, err: unknown, log: Logger): EnvelopeError {
  if (err instanceof SkillError || err instanceof OngridError) {
    return { code: err.code, message: err.message || `skill "${key}" failed`, hint: err.hint };
  }
  const message = err instanceof Error ? err.message : String(err);
  // A file or directory that vanished between two steps of a read (rotated, deleted) is the host's
  // state, not a fault of the skill: not_found, like a missing path given in the params.
  const errno = (err as NodeJS.ErrnoException | undefined)?.code;
  if (errno === "ENOENT" || errno === "ENOTDIR") {
    return { code: "not_found", message: `skill "${key}": a file or directory vanished while it was read (${errno})`, hint: "It was deleted or rotated during the call; run it again." };
  }
  try {
    // The stack goes to the operator's log (redacted), never to the caller.
    log.error({ err_name: err instanceof Error ? err.name : typeof err, stack: redactString(err instanceof Error ? (err.stack ?? "") : "") }, `skill failed: ${redactString(message)}`);
  } catch {
    /* logging must not break the envelope */
  }
  return {
    code: "internal",
    message: message || `skill "${key}" failed without a message`,
    hint: "This is a fault in the skill, not in the params: retry once, then report it to an operator if it persists.",
  };
}
