/** What the base tools reach of the manager: handed over once at start (manager/main.ts openCore). */
import type { Logger } from "pino";
import type { Hub } from "../fleet/hub.ts";
import type { EdgeStore } from "../fleet/edge-store.ts";
import type { Dispatcher } from "../calls/execute.ts";
import type { Database } from "../db/client.ts";
import type { AuditLog } from "../audit/types.ts";
import type { ApprovalStore } from "../calls/approvals/store.ts";
import type { ManagerConfig } from "../config/schema.ts";
import type { Agent } from "../agent/session/diagnose.ts";

/** The manager's parts a base tool may use. */
export interface BaseToolDeps {
  hub: Hub;
  edges: EdgeStore;
  dispatcher: Dispatcher;
  database: Database;
  audit: AuditLog;
  approvals: ApprovalStore;
  config: ManagerConfig;
  log: Logger;
  /** The diagnosis agent (created after the tools are registered, hence a getter). */
  agent: () => Agent | undefined;
  /** Registers background work (an index, a watcher) that startManager starts once it serves; `start` returns how to stop it at close. The CLI's in-process core never starts it. */
  onServe?: (start: () => () => Promise<void>) => void;
}
