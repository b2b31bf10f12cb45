/**
 * Stand-ins for the manager's parts the fleet tools use (hub sessions, the edge store, the
 * dispatcher), for unit tests: each edge call is recorded and answered by a function of the test.
 * The whole-system behaviour is covered by test/fleet-tools.e2e.test.ts with real edges.
 */
import pino from "pino";
import { OngridError } from "../../../../skill/errors.ts";
import { buildSkill } from "../../../../skill/registry.ts";
import { runSkill } from "../../../../skill/run.ts";
import type { ResultEnvelope, Skill, SkillDefinition } from "../../../../skill/types.ts";
import { validateParams } from "../../../../skill/validate.ts";
import { AuditedError, type ExecuteInput } from "../../../calls/types.ts";
import { type Caller } from "../../../identity/caller.ts";
import { reaches } from "../../../identity/reach.ts";
import type { BaseToolDeps } from "../../deps.ts";

/** One fake edge. */
export interface FakeEdge {
  id: string;
  labels?: Record<string, string>;
  online?: boolean;
  revoked?: boolean;
  skills?: string[];
  lastSeen?: Date;
}

/** What a fake edge answers: an output (success), an envelope error, or a thrown OngridError. */
export type Answer = { output: unknown } | { error: { code: string; message: string; hint?: string } } | { throws: OngridError };

const DEFAULT_SKILLS = ["host_load", "host_processes", "host_files", "read_journal"];

/** Fake deps over a list of edges; `answer` decides each call's outcome. */
export function fakeDeps(edges: FakeEdge[], answer: (input: ExecuteInput) => Answer | Promise<Answer>) {
  const calls: ExecuteInput[] = [];
  const session = (e: FakeEdge) => ({
    edgeId: e.id,
    hello: { labels: e.labels ?? {}, hostname: `${e.id}.test`, os: "linux/x64", version: "0.1.0" },
    skills: new Map((e.skills ?? DEFAULT_SKILLS).map((k) => [k, {}])),
    connectedAt: new Date(0),
    lastHeard: Date.parse("2025-01-31T14:00:00Z"),
  });
  const live = () => edges.filter((e) => e.online !== false && !e.revoked);
  const row = (e: FakeEdge) => ({
    id: e.id,
    tokenHash: "",
    enrolledAt: new Date(0),
    revokedAt: e.revoked ? new Date(0) : null,
    online: e.online !== false,
    lastSeenAt: e.lastSeen ?? null,
    managerId: "",
    version: "0.1.0",
    hostname: `${e.id}.test`,
    os: "linux/x64",
    labels: e.labels ?? {},
    skills: (e.skills ?? DEFAULT_SKILLS).map((key) => ({ key })),
  });
  const hub = {
    sessions: () => live().map(session),
    session: (id: string) => {
      const e = live().find((x) => x.id === id);
      return e ? session(e) : undefined;
    },
  };
  const store = {
    list: async () => [...edges].sort((a, b) => (a.id < b.id ? -1 : 1)).map(row),
    get: async (id: string) => {
      const e = edges.find((x) => x.id === id);
      return e ? row(e) : undefined;
    },
  };
  let seq = 0;
  const dispatcher = {
    async execute(input: ExecuteInput) {
      calls.push(input);
      const n = ++seq;
      const e = edges.find((x) => x.id === input.edgeId);
      // What the real dispatcher does before any edge is asked: unknown or out of reach → not found, offline → unavailable.
      if (!e || e.revoked || !reaches(input.caller, e.labels ?? {})) throw new AuditedError(new OngridError("not_found", `unknown edge "${input.edgeId}"`), n);
      if (e.online === false) throw new AuditedError(new OngridError("unavailable", `edge "${input.edgeId}" is offline (never connected)`), n);
      const a = await answer(input);
      if ("throws" in a) throw new AuditedError(a.throws, n);
      const result: ResultEnvelope =
        "output" in a
          ? { success: true, output: a.output, duration_ms: 1, truncated: false, edge_id: input.edgeId ?? "" }
          : { success: false, output: null, error: { code: a.error.code, message: a.error.message, hint: a.error.hint ?? "" }, duration_ms: 1, truncated: false, edge_id: input.edgeId ?? "" };
      return { result, auditSeq: n };
    },
    // As the real dispatcher's: a fan-out's call is execute with noApproval (refused, never parked).
    fanOutCall(input: ExecuteInput) {
      return dispatcher.execute({ ...input, noApproval: true });
    },
    async refuse(_input: ExecuteInput, err: OngridError): Promise<never> {
      throw new AuditedError(err, 0);
    },
    // The per-user limit (skills.max_calls_per_user) is tested with the real dispatcher (test/user-call-limit.e2e.test.ts).
    acquireCallSlot: () => () => undefined,
    shareWork: () => ({ checked: new Map() }),
  };
  const deps = { hub, edges: store, dispatcher } as unknown as Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">;
  return { deps, calls };
}

const log = pino({ level: "silent" });

/** Runs a tool the way the dispatcher does: validated params, the caller's invocation in its context. */
export async function runTool(def: SkillDefinition<any>, params: Record<string, unknown>, opts: { caller?: Caller; sessionId?: string; timeoutMs?: number } = {}): Promise<ResultEnvelope> {
  const skill: Skill = buildSkill(def as SkillDefinition);
  return runSkill(skill, validateParams(skill, params), {
    callId: "call-1",
    timeoutMs: opts.timeoutMs ?? 30_000,
    outputCapBytes: 1 << 20,
    log,
    invocation: { caller: opts.caller ?? { userId: "olga", role: "operator" }, sessionId: opts.sessionId ?? "s-1" },
  });
}

/** A host_load output with the given 1-minute load and CPU count. */
export function loadOutput(load1: number, cpus = 4, memPct = 40): unknown {
  return { hostname: "h", uptime_s: 100, loadavg: [load1, load1, load1], cpus, load_per_cpu: Math.round((load1 / cpus) * 100) / 100, tasks: { running: 1, total: 100 }, memory: { total_bytes: 1000, available_bytes: 1000 - memPct * 10, used_bytes: memPct * 10, used_pct: memPct }, swap: null, source: "proc" };
}
