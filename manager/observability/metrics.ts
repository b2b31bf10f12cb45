/**
 * The manager's own series for GET /metrics (K3), on a registry of its own (several managers may
 * share a process in tests): calls by skill, decision and outcome, errors by code, call latency,
 * connected edges, pending approvals, audit rows, whether the database answered, and prom-client's
 * process and Node.js basics.
 * Calls are counted by the dispatcher's observer (observeCall); the rest is read at scrape time.
 */
import { count, eq, max } from "drizzle-orm";
import type { Logger } from "pino";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Database } from "../db/client.ts";
import { approvals, toolCalls } from "../db/schema/index.ts";
import type { CallObservation } from "../calls/types.ts";

/** The label a call of a key no skill answers to gets: keys are caller input, labels must stay few. */
export const UNKNOWN_SKILL = "(unknown)";

/** prom-client defaults dropped from the page (see addProcessMetrics). */
const NAMED_LIKE_COUNTERS = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

/** Latency buckets in seconds: from an in-process lookup to a slow fan-out near the default deadline. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const CODE_LABEL = /^[a-z][a-z0-9_]{0,47}$/;

/** What the series read. */
export interface ManagerMetricsDeps {
  /** Whether a skill with this key exists (manager registry or an online edge); others count as UNKNOWN_SKILL. */
  knows(key: string): boolean;
  /** How many edges hold a tunnel to this manager now. */
  connectedEdges(): number;
  /** How many skills the manager itself serves. */
  managerSkills(): number;
  database: Database;
  version: string;
  log: Logger;
  /** API token lookups so far: asked of the database, and reused (server.token_cache). */
  tokenLookups?(): { database: number; reused: number };
}

/** The registry and the dispatcher's observer. */
export interface ManagerMetrics {
  registry: Registry;
  /** Counts one finished call (the dispatcher calls it as it writes the call's audit row). */
  observeCall(call: CallObservation): void;
  /** Adds prom-client's process_* and nodejs_* series (once; only a serving manager needs them). */
  addProcessMetrics(): void;
  /** The page in text format 0.0.4. */
  render(): Promise<string>;
}

/** Where a call ended: ran and succeeded or failed, was denied, parked for approval, or refused otherwise. */
export function outcomeOf(call: Pick<CallObservation, "result" | "decision" | "error">): string {
  if (call.result) return call.result.success ? "success" : "failure";
  if (call.decision === "deny") return "denied";
  if (call.decision === "ask" && !call.error) return "pending_approval";
  return "error";
}

/** The error code of a failed call ("code: message" in the audit row, or the envelope's code), bounded to a label-safe word. */
export function errorCodeOf(call: Pick<CallObservation, "result" | "error">): string {
  const code = call.result?.error?.code ?? call.error.split(":", 1)[0]!.trim();
  return CODE_LABEL.test(code) ? code : "other";
}

/** What a scrape read from the database; undefined: that read failed. */
interface DatabaseReads {
  approvalsPending: number | undefined;
  auditRows: number | undefined;
}

/** An unlabelled gauge read at scrape time whose sample is left out of a scrape when the read fails (undefined). */
class DatabaseGauge extends Gauge {
  private absent = false;
  constructor(o: { name: string; help: string; registers: Registry[]; read: () => Promise<number | undefined> }) {
    super({
      name: o.name,
      help: o.help,
      registers: o.registers,
      async collect() {
        const v = await o.read();
        (this as DatabaseGauge).absent = v === undefined;
        if (v !== undefined) this.set(v);
      },
    });
  }
  override async get() {
    const metric = await super.get();
    return this.absent ? { ...metric, values: [] } : metric;
  }
}

/** Creates the manager's metrics. */
export function createManagerMetrics(deps: ManagerMetricsDeps): ManagerMetrics {
  const registry = new Registry();
  const registers = [registry];
  const calls = new Counter({
    name: "ongrid_skill_calls_total",
    help: "Skill calls through the dispatcher, by skill, gate decision (allow, ask, deny, none) and outcome (success, failure, denied, pending_approval, error).",
    labelNames: ["skill", "decision", "outcome"] as const,
    registers,
  });
  const errors = new Counter({
    name: "ongrid_skill_call_errors_total",
    help: "Skill calls that ended with an error (refused, failed or not run), by skill and error code.",
    labelNames: ["skill", "code"] as const,
    registers,
  });
  const duration = new Histogram({
    name: "ongrid_skill_call_duration_seconds",
    help: "Wall time of skill calls that ran (gate to result), by skill.",
    labelNames: ["skill"] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  new Gauge({
    name: "ongrid_edges_connected",
    help: "Edges holding a tunnel to this manager.",
    registers,
    collect() {
      this.set(deps.connectedEdges());
    },
  });
  if (deps.tokenLookups) {
    const read = deps.tokenLookups;
    const seen = { database: 0, reused: 0 };
    new Counter({
      name: "ongrid_api_token_lookups_total",
      help: "API token lookups, by source: database (a query) or reused (a lookup kept for server.token_cache).",
      labelNames: ["source"] as const,
      registers,
      collect() {
        const now = read();
        for (const source of ["database", "reused"] as const) {
          this.inc({ source }, now[source] - seen[source]);
          seen[source] = now[source];
        }
      },
    });
  }
  new Gauge({
    name: "ongrid_skills_registered",
    help: "Skills the manager itself serves (builtins, base tools, manager packs).",
    registers,
    collect() {
      this.set(deps.managerSkills());
    },
  });
  const { db } = deps.database;
  // What one scrape reads from the database, once for every series that needs it (the registry
  // collects all series of a page at the same time, so they share the read in flight).
  let reading: Promise<DatabaseReads> | undefined;
  const readDatabase = (): Promise<DatabaseReads> =>
    (reading ??= (async () => {
      const read = async (what: string, fn: () => Promise<number>): Promise<number | undefined> => {
        try {
          return await fn();
        } catch (err) {
          deps.log.warn({ err: (err as Error)?.message, metric: what }, "metrics: could not read from the database");
          return undefined;
        }
      };
      const [approvalsPending, auditRows] = await Promise.all([
        read("ongrid_approvals_pending", async () => (await db.select({ n: count() }).from(approvals).where(eq(approvals.state, "pending")))[0]?.n ?? 0),
        read("ongrid_audit_rows", async () => Number((await db.select({ n: max(toolCalls.seq) }).from(toolCalls))[0]?.n ?? 0)),
      ]);
      return { approvalsPending, auditRows };
    })().finally(() => {
      reading = undefined;
    }));
  // A value the database could not give is left out of the scrape — no sample at all, rather than
  // 0 (prom-client's reset() of an unlabelled gauge re-creates it at 0) or the last scrape's value
  // — so alerts on it see the series absent, and ongrid_database_up says why.
  new DatabaseGauge({
    name: "ongrid_approvals_pending",
    help: "Approval requests waiting for a decision (absent from a scrape when the database cannot answer).",
    registers,
    read: async () => (await readDatabase()).approvalsPending,
  });
  new DatabaseGauge({
    name: "ongrid_audit_rows",
    help: "Rows in the audit log (the hash chain's last seq; shared by every manager on the database; absent from a scrape when the database cannot answer).",
    registers,
    read: async () => (await readDatabase()).auditRows,
  });
  new Gauge({
    name: "ongrid_database_up",
    help: "1 when this scrape's reads from the database succeeded, 0 when one failed.",
    registers,
    async collect() {
      const r = await readDatabase();
      this.set(r.approvalsPending !== undefined && r.auditRows !== undefined ? 1 : 0);
    },
  });
  new Gauge({ name: "ongrid_manager_info", help: "Always 1; the manager's version as a label.", labelNames: ["version"] as const, registers }).set({ version: deps.version }, 1);

  let processAdded = false;
  return {
    registry,
    observeCall(call) {
      const skill = deps.knows(call.key) ? call.key : UNKNOWN_SKILL;
      calls.inc({ skill, decision: call.decision || "none", outcome: outcomeOf(call) });
      if (call.error) errors.inc({ skill, code: errorCodeOf(call) });
      if (call.result) duration.observe({ skill }, Math.max(0, call.durationMs) / 1000);
    },
    addProcessMetrics() {
      if (processAdded) return;
      processAdded = true;
      collectDefaultMetrics({ register: registry });
      // Gauges named like counters: `promtool check metrics` refuses a non-counter with a _total
      // suffix. Each is the sum of the by-type gauge of the same stem, which stays
      // (nodejs_active_handles{type}, …): sum(nodejs_active_handles) is the same figure.
      for (const name of NAMED_LIKE_COUNTERS) registry.removeSingleMetric(name);
    },
    // prom-client writes NaN as "Nan"; Prometheus reads that, but the format (and stricter parsers) say "NaN".
    // A sample line ends with its value, and label values cannot hold a raw newline, so the fix is exact.
    render: async () => (await registry.metrics()).replace(/^([^#\n][^\n]*) Nan$/gm, "$1 NaN"),
  };
}
