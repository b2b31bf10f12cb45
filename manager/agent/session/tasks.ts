/**
 * Running diagnosis sessions that can be stopped (K4 task_stop): agent_tool's workers and the
 * sessions the Alertmanager webhook starts. Each is registered under its session id with its
 * owner and an AbortController; stopping one aborts the session's signal, which cancels its model
 * calls and the tool calls in flight (the dispatcher passes the signal down to edges).
 * One registry per agent (a WeakMap keyed by the Agent object), so every part holding the same
 * agent — the base tools and the webhook routes — sees the same tasks.
 */
import { createSessionStore } from "./store.ts";
import type { Database } from "../../db/client.ts";
import type { Agent, DiagnoseInput } from "./diagnose.ts";
import type { AgentEvent } from "./events.ts";

/** What a task is: an agent_tool worker, an incident's diagnosis, or a diagnosis streamed to its caller (AgentService/Diagnose). */
export type TaskKind = "worker" | "incident_diagnosis" | "diagnosis";

/** One running task. */
export interface Task {
  /** The session id (ses_…). */
  id: string;
  kind: TaskKind;
  /** The user whose task it is (the session's user). */
  owner: string;
  /** For a worker: the session whose agent_tool call started it ("" when a person called agent_tool). */
  parentSessionId: string;
  startedAt: Date;
  /** Set once someone stopped it. */
  stoppedBy?: string;
}

interface Entry extends Task {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * A place held for a task about to start, taken synchronously (reserve) before the first await,
 * so concurrent starters cannot all pass the same count while their sessions are being created.
 * Released when the task registers (it then counts as running) or fails to start; releasing
 * twice is harmless.
 */
export interface TaskSlot {
  release(): void;
}

/** How long stop() waits for the session to wind down before answering. */
const STOP_WAIT_MS = 10_000;

/** Creates a registry. */
export function createTaskRegistry() {
  const running = new Map<string, Entry>();
  /** Places reserved and not yet released (owner undefined: a reservation of no particular owner). */
  const reserved = new Set<{ kind: TaskKind; owner?: string }>();
  const matches = (t: { kind: TaskKind; owner?: string }, kind: TaskKind, owner?: string) => t.kind === kind && (owner === undefined || t.owner === owner);
  /** Running and reserved tasks of a kind, of one owner or of all. */
  const count = (kind: TaskKind, owner?: string): number => {
    let n = 0;
    for (const e of running.values()) if (matches(e, kind, owner)) n++;
    for (const r of reserved) if (matches(r, kind, owner)) n++;
    return n;
  };
  return {
    /** Running and reserved tasks of a kind, of one owner (or of all when owner is undefined). */
    count,
    /**
     * Reserves a place for a task of `kind` (and `owner`) when fewer than `max` of them run or are
     * reserved — counted over that owner's tasks, or over every owner's when owner is undefined.
     * Synchronous: call it before the first await. Undefined when there is no place.
     */
    reserve(kind: TaskKind, max: number, owner?: string): TaskSlot | undefined {
      if (count(kind, owner) >= max) return undefined;
      const place = { kind, owner };
      reserved.add(place);
      return { release: () => void reserved.delete(place) };
    },
    /**
     * Registers a running session; `done` settles when it has ended (the registry then forgets it).
     * The controller is the one whose signal the session was started with.
     */
    add(task: Omit<Task, "startedAt" | "stoppedBy">, controller: AbortController, done: Promise<unknown>): void {
      const entry: Entry = { ...task, startedAt: new Date(), controller, done: done.then(() => undefined, () => undefined) };
      running.set(task.id, entry);
      void entry.done.then(() => {
        if (running.get(task.id) === entry) running.delete(task.id);
      });
    },
    get(id: string): Task | undefined {
      const e = running.get(id);
      return e && view(e);
    },
    /** The running tasks, optionally of one owner, oldest first. */
    list(owner?: string): Task[] {
      return [...running.values()].filter((e) => owner === undefined || e.owner === owner).map(view);
    },
    /** Aborts a task (task_stop by `by`) and waits, bounded, until its session has ended; returns whether it ended in time. */
    async stop(id: string, by: string): Promise<{ task: Task; ended: boolean } | undefined> {
      const e = running.get(id);
      if (!e) return undefined;
      e.stoppedBy ??= by;
      e.controller.abort(new StopError(by, `stopped by ${by} with task_stop`));
      return { task: view(e), ended: await within(e.done, STOP_WAIT_MS) };
    },
    /** Aborts every task (the manager is closing) and waits, bounded, for their sessions to end. */
    async stopAll(why: string): Promise<void> {
      const all = [...running.values()];
      for (const e of all) e.controller.abort(new StopError("", why));
      await within(Promise.all(all.map((e) => e.done)), STOP_WAIT_MS);
    },
  };
}

async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const ok = await Promise.race([p.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return ok;
}

/** The abort reason of a stopped task: who stopped it ("" for the manager itself) and how to say so. */
export class StopError extends Error {
  readonly by: string;
  constructor(by: string, message: string) {
    super(message);
    this.name = "StopError";
    this.by = by;
  }
}

function view(e: Entry): Task {
  return { id: e.id, kind: e.kind, owner: e.owner, parentSessionId: e.parentSessionId, startedAt: e.startedAt, ...(e.stoppedBy ? { stoppedBy: e.stoppedBy } : {}) };
}

/** The registry's interface. */
export type TaskRegistry = ReturnType<typeof createTaskRegistry>;

const registries = new WeakMap<object, TaskRegistry>();

/** The task registry of one agent (created on first use). */
export function tasksOf(agent: object): TaskRegistry {
  let r = registries.get(agent);
  if (!r) registries.set(agent, (r = createTaskRegistry()));
  return r;
}

/** Records on the session row that it was stopped (after it ended: the agent's own last write comes first). */
export async function markStopped(database: Database, id: string, why: string): Promise<void> {
  await createSessionStore(database).update(id, { status: "cancelled", error: `cancelled: ${why}` });
}

/** How a diagnosis run as a task ended. */
export interface TaskOutcome {
  sessionId: string;
  /** The session's end: done, failed, refused (not an operations question) or cancelled (stopped). */
  status: "done" | "failed" | "refused" | "cancelled";
  message: string;
  /** The playbook it ran. */
  playbook: string;
  /** model or fallback ("" when it ended before a report). */
  path: string;
  report: string;
  verdict?: { verdict: string; unsupported: string[] };
  toolCalls: number;
  stoppedBy?: string;
}

/** What running a diagnosis as a task needs. */
export interface TaskRunDeps {
  agent: Agent;
  database: Database;
}

/** What diagnoseAsTask runs. */
export interface TaskSpec {
  kind: TaskKind;
  parentSessionId?: string;
  input: Omit<DiagnoseInput, "signal">;
  /** The caller's own signal (its stream or call went away); task_stop aborts a signal of the task's own. */
  signal?: AbortSignal;
  /** A place reserved for this task (TaskRegistry.reserve): released as the task registers, or when it ends without a session. */
  slot?: TaskSlot;
}

/**
 * Runs one diagnosis session as a stoppable task and yields its events: registered under its
 * session id as soon as the agent has created it (`onSession` is told the id then), forgotten when
 * it ends. A session stopped with task_stop ends with a done event whose status is "cancelled" and
 * which names who stopped it; the session row says the same (written after the agent's own last
 * write). Throws what the agent throws before a session exists (e.g. an edge that is not online).
 */
export async function* diagnoseAsTask(deps: TaskRunDeps, task: TaskSpec, onSession?: (id: string) => void | Promise<void>): AsyncGenerator<AgentEvent> {
  const registry = tasksOf(deps.agent);
  const controller = new AbortController();
  const signal = task.signal ? AbortSignal.any([task.signal, controller.signal]) : controller.signal;
  let ended!: () => void;
  const done = new Promise<void>((r) => (ended = r));
  let sessionId = "";
  let sawDone = false;
  const stopped = async (ev?: Extract<AgentEvent, { type: "done" }>): Promise<AgentEvent | undefined> => {
    const stop = controller.signal.aborted && controller.signal.reason instanceof StopError ? controller.signal.reason : undefined;
    if (!stop || !sessionId) return ev;
    await markStopped(deps.database, sessionId, stop.message);
    return { type: "done", status: "cancelled", message: stop.message, usage: ev?.usage ?? { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, ...(stop.by ? { stoppedBy: stop.by } : {}) };
  };
  try {
    for await (const ev of deps.agent.diagnose({ ...task.input, signal })) {
      if (ev.type === "session") {
        sessionId = ev.sessionId;
        registry.add({ id: sessionId, kind: task.kind, owner: task.input.user.userId, parentSessionId: task.parentSessionId ?? "" }, controller, done);
        task.slot?.release(); // in the same tick as add: the task now counts as running instead
        await onSession?.(sessionId);
        yield ev;
      } else if (ev.type === "done") {
        sawDone = true;
        yield (await stopped(ev))!;
      } else yield ev;
    }
    if (!sawDone) {
      const last = await stopped();
      if (last) yield last;
    }
  } finally {
    task.slot?.release(); // ended, or failed before its session existed
    ended();
  }
}

/** Runs one diagnosis session to its end as a stoppable task (diagnoseAsTask) and sums it up. */
export async function runDiagnosisTask(deps: TaskRunDeps, task: TaskSpec, onSession?: (id: string) => void | Promise<void>): Promise<TaskOutcome> {
  const out: TaskOutcome = { sessionId: "", status: "failed", message: "the session ended without a done event", playbook: "", path: "", report: "", toolCalls: 0 };
  for await (const ev of diagnoseAsTask(deps, task, onSession)) {
    if (ev.type === "session") out.sessionId = ev.sessionId;
    else if (ev.type === "route") out.playbook = ev.decision.skillName;
    else if (ev.type === "tool_result") out.toolCalls++;
    else if (ev.type === "report") {
      out.report = ev.markdown;
      out.path = ev.path;
    } else if (ev.type === "verdict") out.verdict = { verdict: ev.verdict, unsupported: ev.unsupported };
    else if (ev.type === "done") {
      out.status = ev.status;
      out.message = ev.message;
      if (ev.stoppedBy) out.stoppedBy = ev.stoppedBy;
    }
  }
  return out;
}
