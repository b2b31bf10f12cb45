/**
 * MCP tasks (spec 2025-11-25, experimental in the SDK) for one session: a tools/call sent with
 * `task` answers at once with a task, and the call goes on in the background. A call that parks
 * for approval keeps its task `working` (the status message names the request, its approvers and
 * its expiry) until the request ends: executed and successful completes the task with the
 * envelope; denied, expired or a failed run fails it with the same result approval_status gives.
 * Cancelling the task withdraws the approval request (as its requester); closing the session
 * only stops the waiting: the request stays, and approval_status still finds it.
 */
import { InMemoryTaskStore, isTerminal, type CreateTaskOptions } from "@modelcontextprotocol/sdk/experimental/tasks";
import { ErrorCode, McpError, type Request, type RequestId, type Task } from "@modelcontextprotocol/sdk/types.js";

/** Why a task's work was stopped: the client cancelled the task, or the session ended. */
export type TaskStop = "cancelled" | "closed";

/** Limits of one session's tasks. */
export interface TaskLimits {
  /** Tasks not yet ended, at most (a further task-augmented call is refused). */
  maxLive: number;
  /** How long a task and its result are kept, from its creation and again from its end. */
  ttlMs: number;
  /** The interval clients are told to poll tasks/get at. */
  pollMs: number;
}

/**
 * The session's task store: the SDK's in-memory store, bound to the session, with a cap on live
 * tasks, the session's own TTL (a client's requested ttl is not taken: a parked call can wait as
 * long as approvals.ttl), and the task's work stopped when the client cancels it.
 */
export class SessionTaskStore extends InMemoryTaskStore {
  private readonly stops = new Map<string, AbortController>();

  constructor(private readonly limits: TaskLimits) {
    super();
  }

  override async createTask(params: CreateTaskOptions, requestId: RequestId, request: Request, sessionId?: string): Promise<Task> {
    const live = this.getAllTasks().filter((t) => !isTerminal(t.status)).length;
    if (live >= this.limits.maxLive) {
      throw new McpError(ErrorCode.InvalidRequest, `this session already has ${live} tasks that have not ended (at most ${this.limits.maxLive}); wait for one to end or cancel one (tasks/cancel)`);
    }
    return super.createTask({ ...params, ttl: this.limits.ttlMs, pollInterval: this.limits.pollMs }, requestId, request, sessionId);
  }

  override async updateTaskStatus(taskId: string, status: Task["status"], statusMessage?: string, sessionId?: string): Promise<void> {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") this.stop(taskId, "cancelled");
  }

  /** The signal that stops a task's work (aborted with the TaskStop as its reason). */
  signalFor(taskId: string): AbortSignal {
    const c = new AbortController();
    this.stops.set(taskId, c);
    return c.signal;
  }

  /** The task's work has ended: nothing left to stop. */
  forget(taskId: string): void {
    this.stops.delete(taskId);
  }

  /** The session ended: every task's work stops and the store drops its timers. */
  close(): void {
    for (const id of [...this.stops.keys()]) this.stop(id, "closed");
    this.cleanup();
  }

  private stop(taskId: string, why: TaskStop): void {
    const c = this.stops.get(taskId);
    this.stops.delete(taskId);
    c?.abort(why);
  }
}
