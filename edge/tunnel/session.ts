/**
 * One tunnel session on the edge (C1–C3): hello first, then execute/cancel frames from the
 * manager run here concurrently up to a limit, each under its deadline; heartbeats both ways.
 */
import type { Logger } from "pino";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { EdgeTunnelService, type ConnectRequestSchema, type Execute } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { OngridError } from "../../skill/errors.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { validateParams } from "../../skill/validate.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import { classFromProto, inventoryDigest, metadataToProto } from "../../skill/proto.ts";
import { effectiveClass } from "../../skill/registry.ts";
import { evidenceKey, evidenceProblem } from "../../skill/evidence.ts";
import { withCredentialValues } from "../../skill/credential.ts";
import { createChannel } from "./channel.ts";

/** What the session needs to know about this edge. */
export interface EdgeRuntime {
  id: string;
  version: string;
  hostname: string;
  os: string;
  labels: Record<string, string>;
  registry: SkillRegistry;
  /** Per-skill settings, by key. */
  settings: Record<string, Record<string, unknown>>;
  concurrency: number;
  outputCapBytes: number;
  log: Logger;
  /** Subscribes to changes of the registry after start (pack rescans); returns the unsubscribe function. */
  onSkillsChanged?: (listener: () => void) => () => void;
}

/** How a session ended. */
export interface SessionEnd {
  /** Whether the manager welcomed us (the dialer resets its backoff then). */
  welcomed: boolean;
  /** Whether the manager closed it because another connection with our id replaced it. */
  superseded: boolean;
  reason: string;
}

/** How long the manager has to answer hello with welcome. */
const WELCOME_TIMEOUT_MS = 15_000;

type Frame = MessageInitShape<typeof ConnectRequestSchema>;

/** Counts calls in flight and queues the rest (a call waiting past its deadline fails there). */
function createLimiter(limit: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return {
    async acquire(signal: AbortSignal): Promise<void> {
      if (active < limit) {
        active++;
        return;
      }
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal.removeEventListener("abort", onAbort);
          active++;
          resolve();
        };
        const onAbort = () => {
          const i = waiting.indexOf(go);
          if (i >= 0) waiting.splice(i, 1);
          reject(signal.reason);
        };
        waiting.push(go);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    },
    release(): void {
      active--;
      waiting.shift()?.();
    },
  };
}

function failure(code: string, message: string, hint: string, edgeId: string): ResultEnvelope {
  return { success: false, output: null, error: { code, message, hint }, duration_ms: 0, truncated: false, edge_id: edgeId };
}

/** Runs one session until the stream ends or `signal` aborts. Never throws. */
export async function runSession(transport: Transport, token: string, rt: EdgeRuntime, signal: AbortSignal, track?: { calls: number }): Promise<SessionEnd> {
  const macKey = evidenceKey(token);
  const client = createClient(EdgeTunnelService, transport);
  const out = createChannel<Frame>();
  const stop = new AbortController();
  const onOuterAbort = () => stop.abort(new Error("edge shutting down"));
  signal.addEventListener("abort", onOuterAbort, { once: true });
  const running = new Map<string, AbortController>();
  const limiter = createLimiter(rt.concurrency);
  let welcomed = false;
  let lastHeard = Date.now();
  let heartbeat: NodeJS.Timeout | undefined;
  let reason = "stream ended";
  let superseded = false;
  const welcomeTimer = setTimeout(() => {
    reason = `no welcome from the manager within ${WELCOME_TIMEOUT_MS} ms`;
    stop.abort(new Error(reason));
  }, WELCOME_TIMEOUT_MS);

  // The hello names the skills by their digest; a manager that does not hold that inventory
  // asks for it before welcoming us, one that predates digests gets it right after welcome.
  const inventory = rt.registry.list().map((s) => metadataToProto(s));
  const digest = inventoryDigest(inventory);
  let inventorySent = false;
  out.push({
    frame: {
      case: "hello",
      value: { edgeId: rt.id, version: rt.version, hostname: rt.hostname, os: rt.os, labels: rt.labels, skills: [], inventoryDigest: digest },
    },
  });

  // The manager reads nothing but hello until it has welcomed us: a change before then is sent
  // right after welcome; later ones as they happen.
  let skillsChangedEarly = false;
  const sendInventory = () => out.push({ frame: { case: "inventory", value: { skills: rt.registry.list().map((s) => metadataToProto(s)) } } });
  const unsubscribe = rt.onSkillsChanged?.(() => {
    if (welcomed) sendInventory();
    else skillsChangedEarly = true;
  });

  const send = (callId: string, r: ResultEnvelope) =>
    out.push({
      frame: {
        case: "result",
        value: {
          callId,
          result: {
            success: r.success,
            output: fromJson(ValueSchema, (r.output ?? null) as JsonValue),
            error: r.error,
            durationMs: r.duration_ms,
            truncated: r.truncated,
            edgeId: rt.id,
          },
        },
      },
    });

  async function execute(x: Execute): Promise<void> {
    const received = Date.now();
    const ctl = new AbortController();
    running.set(x.callId, ctl);
    if (track) track.calls++;
    const deadline = AbortSignal.timeout(Math.max(1, x.timeoutMs));
    const gate = AbortSignal.any([ctl.signal, deadline]);
    try {
      const skill = rt.registry.get(x.key);
      if (!skill) return send(x.callId, failure("not_found", `this edge does not offer skill "${x.key}"`, "ListSkills shows which edges offer it", rt.id));
      let params: Record<string, unknown>;
      try {
        // Credential params arrive holding the value the manager injected, not the name.
        params = validateParams(withCredentialValues(skill), x.params ?? {});
      } catch (err) {
        const e = err as OngridError;
        return send(x.callId, failure("invalid_argument", e.message, e.hint, rt.id));
      }
      // Defence in depth: a non-safe call runs only with approval evidence from our manager.
      const cls = effectiveClass(skill, params);
      const a = x.approval;
      const problem = evidenceProblem(
        macKey,
        { callId: x.callId, key: x.key, params: x.params ?? {}, cls },
        a ? { approvalId: a.approvalId, approvers: a.approvers, sopHash: a.sopHash, effectiveClass: classFromProto(a.effectiveClass), reasonType: a.reasonType, mac: a.mac } : undefined,
      );
      if (problem) {
        rt.log.warn({ skill: x.key, call_id: x.callId, class: cls, reason: problem }, "refused a non-safe call without valid approval evidence");
        // No evidence at all: the manager's gate judged the call safe and this edge does not, so
        // the two classify with different policies (for exec: read roots or allowlist file).
        const hint = a
          ? "non-safe calls must come through the manager's approval workflow"
          : skill.meta.riskClassifier?.startsWith("shell_command")
            ? "the manager judged this call safe and this edge does not: give the edge the manager's exec policy (--exec-read-root = skills.exec.read_roots, --exec-allow-file = skills.exec.allow_file)"
            : "the manager judged this call safe and this edge does not: run the same ongrid version on both";
        return send(x.callId, failure("permission_denied", `edge refused: ${problem}`, hint, rt.id));
      }
      try {
        await limiter.acquire(gate);
      } catch {
        return send(x.callId, failure(ctl.signal.aborted ? "cancelled" : "deadline_exceeded", `"${x.key}" waited for a free slot (concurrency ${rt.concurrency}) until it was ${ctl.signal.aborted ? "cancelled" : "past its deadline"}`, "retry later", rt.id));
      }
      try {
        const remaining = Math.max(1, x.timeoutMs - (Date.now() - received));
        const r = await runSkill(skill, params, {
          callId: x.callId,
          timeoutMs: remaining,
          outputCapBytes: rt.outputCapBytes,
          log: rt.log.child({ skill: x.key, call_id: x.callId }),
          settings: rt.settings[x.key] ?? {},
          edgeId: rt.id,
          signal: ctl.signal,
        });
        send(x.callId, r);
      } finally {
        limiter.release();
      }
    } finally {
      running.delete(x.callId);
      if (track) track.calls--;
    }
  }

  const onHeartbeatTimer = (intervalMs: number) => {
    if (Date.now() - lastHeard > 3 * intervalMs) {
      reason = `no heartbeat from the manager for ${3 * intervalMs} ms`;
      stop.abort(new Error(reason));
      return;
    }
    out.push({ frame: { case: "heartbeat", value: { sentAtUnixMs: BigInt(Date.now()) } } });
  };

  try {
    for await (const res of client.connect(out, { headers: { authorization: `Bearer ${token}` }, signal: stop.signal })) {
      lastHeard = Date.now();
      const f = res.frame;
      switch (f.case) {
        case "welcome": {
          welcomed = true;
          clearTimeout(welcomeTimer);
          const every = Math.max(100, f.value.heartbeatIntervalMs || 5000);
          heartbeat = setInterval(() => onHeartbeatTimer(every), every);
          // A manager that predates digests welcomes without one: it has not seen our skills yet.
          const known = f.value.inventoryDigest === digest;
          rt.log.info({ manager_version: f.value.managerVersion, heartbeat_ms: every, inventory: inventorySent ? "sent on request" : known ? "known to the manager" : "sent after welcome" }, "connected to the manager");
          if (skillsChangedEarly || (!known && !inventorySent)) sendInventory();
          break;
        }
        case "inventoryRequest":
          // The manager does not hold our inventory yet: it welcomes us once it has it.
          inventorySent = true;
          out.push({ frame: { case: "inventory", value: { skills: inventory } } });
          break;
        case "execute":
          void execute(f.value).catch((err) => rt.log.error({ err: String(err) }, "execute failed"));
          break;
        case "cancel":
          running.get(f.value.callId)?.abort(new Error(f.value.reason || "cancelled by the manager"));
          break;
        case "heartbeat":
          break;
      }
    }
  } catch (err) {
    if (!stop.signal.aborted) reason = (err as Error).message;
    else if (reason === "stream ended") reason = String((stop.signal.reason as Error)?.message ?? "stopped");
    superseded = err instanceof ConnectError && err.code === Code.Aborted;
  } finally {
    clearTimeout(welcomeTimer);
    clearInterval(heartbeat);
    unsubscribe?.();
    signal.removeEventListener("abort", onOuterAbort);
    out.close();
    for (const ctl of running.values()) ctl.abort(new Error("tunnel closed"));
    stop.abort();
  }
  return { welcomed, superseded, reason };
}
