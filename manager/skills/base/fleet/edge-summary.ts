/**
 * get_edge_summary (K1): one edge's health in one call — load, memory, disk, units systemd reported
 * failing and recent errors — from the edge's own host skills (host_load, host_files,
 * read_journal), each called through the dispatcher as the tool's caller. A part that fails is
 * reported with its error; the others still answer.
 */
import { OngridError, SkillError } from "../../../../skill/errors.ts";
import { EDGE_ID_PATTERN } from "../../../../skill/identity.ts";
import type { EnvelopeError } from "../../../../skill/types.ts";
import { reaches } from "../../../identity/reach.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { defineBaseTool } from "../../define.ts";
import { fleetCall, perEdgeDeadline, PER_EDGE_TIMEOUT_SCHEMA, type FleetCall } from "./targets.ts";

interface Params {
  edge_id: string;
  window: "15m" | "1h" | "6h" | "24h";
  errors_limit: number;
  per_edge_timeout_ms?: number;
}

/** The journal window param → read_journal's since. */
const SINCE: Record<Params["window"], string> = { "15m": "15min ago", "1h": "1h ago", "6h": "6h ago", "24h": "24h ago" };
/** Journal entries read per summary (warnings and worse, newest first). */
const JOURNAL_LINES = 500;
/** Above these a part is named under concerns. */
export const CONCERN = { load_per_cpu: 1, memory_used_pct: 90, swap_used_pct: 50, disk_used_pct: 90, inodes_used_pct: 90 } as const;

/** The result of one part: its data, or why there is none. */
type Part<T> = ({ ok: true } & T) | { ok: false; skill: string; error: EnvelopeError };

interface JournalEntry {
  time: string | null;
  unit: string | null;
  identifier: string | null;
  priority: string | null;
  message: string;
}

/** systemd's own messages when a unit fails: "x.service: Failed with result 'exit-code'.", "Failed to start x.service - …", "x.service entered failed state". */
const UNIT_NAME = String.raw`[A-Za-z0-9:_.@\\-]+\.(?:service|socket|mount|timer|target|scope|path|swap|automount|slice|device)`;
const FAILED_UNIT = [new RegExp(`^(${UNIT_NAME}): Failed with result '([^']+)'`), new RegExp(`^Failed to start (${UNIT_NAME})`), new RegExp(`^(${UNIT_NAME}) entered failed state`)];
const ERROR_PRIORITIES = new Set(["emerg", "alert", "crit", "err"]);

/** Units the journal shows failing, newest failure first, and the error entries (newest first). */
export function journalFindings(entries: readonly JournalEntry[], errorsLimit: number) {
  const failed = new Map<string, { unit: string; last_failed_at: string | null; result: string | null; failures: number }>();
  for (const e of entries) {
    for (const re of FAILED_UNIT) {
      const m = re.exec(e.message);
      if (!m) continue;
      const unit = e.unit && new RegExp(`^${UNIT_NAME}$`).test(e.unit) ? e.unit : m[1];
      const f = failed.get(unit) ?? { unit, last_failed_at: null, result: null, failures: 0 };
      f.failures++;
      if (!f.last_failed_at || (e.time && e.time > f.last_failed_at)) {
        f.last_failed_at = e.time;
        if (m[2]) f.result = m[2];
      }
      if (!f.result && m[2]) f.result = m[2];
      failed.set(unit, f);
      break;
    }
  }
  const errors = entries.filter((e) => e.priority !== null && ERROR_PRIORITIES.has(e.priority));
  const newest = [...errors].sort((a, b) => ((b.time ?? "") < (a.time ?? "") ? -1 : (b.time ?? "") > (a.time ?? "") ? 1 : 0));
  return {
    failed_units: [...failed.values()].sort((a, b) => ((b.last_failed_at ?? "") < (a.last_failed_at ?? "") ? -1 : 1)),
    error_count: errors.length,
    warning_count: entries.filter((e) => e.priority === "warning").length,
    recent_errors: newest.slice(0, errorsLimit).map((e) => ({ time: e.time, unit: e.unit ?? e.identifier, priority: e.priority, message: e.message.length > 500 ? `${e.message.slice(0, 500)}…` : e.message })),
  };
}

const pct = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** Creates get_edge_summary over the hub, the edge store and the dispatcher. */
export function createGetEdgeSummary(deps: Pick<BaseToolDeps, "hub" | "edges" | "dispatcher">) {
  /** One host skill on the edge, as the caller; its failure becomes the part's error. */
  async function part(call: FleetCall, edgeId: string, key: string, params: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<{ ok: true; output: unknown } | { ok: false; skill: string; error: EnvelopeError }> {
    if (!deps.hub.session(edgeId)?.skills.has(key)) {
      return { ok: false, skill: key, error: { code: "not_offered", message: `edge "${edgeId}" does not offer ${key}`, hint: "query_edges with skill shows which edges offer it" } };
    }
    try {
      const out = await deps.dispatcher.execute({ key, params, edgeId, sessionId: call.sessionId, timeoutMs, caller: call.caller, signal, mode: call.mode, playbook: call.playbook, noApproval: true });
      const r = out.result!;
      return r.success ? { ok: true, output: r.output } : { ok: false, skill: key, error: r.error ?? { code: "edge_error", message: "failed without an error", hint: "" } };
    } catch (err) {
      const e = err instanceof OngridError ? err : new OngridError("internal", String((err as Error)?.message ?? err));
      return { ok: false, skill: key, error: { code: e.code, message: e.message, hint: e.hint } };
    }
  }

  return defineBaseTool<Params>({
    key: "get_edge_summary",
    name: "Edge health summary",
    description:
      "One-shot health snapshot of one edge: load per CPU, memory and swap use, the fullest filesystems, systemd units the journal shows failing and the newest error log entries in a time window, plus a list of concerns over fixed thresholds. Use when one host is reported unhealthy, as the first look, before calling host_load, host_files or read_journal on it one by one. Each part comes from the edge's own host skill; a part that fails (e.g. no journald) is reported with its error while the rest still answer.",
    class: "safe",
    category: "fleet",
    schema: {
      type: "object",
      properties: {
        edge_id: { type: "string", pattern: EDGE_ID_PATTERN.source, description: "The edge to summarise (query_edges lists them)." },
        window: { type: "string", enum: ["15m", "1h", "6h", "24h"], default: "1h", description: "How far back to look in the journal for failed units and errors." },
        errors_limit: { type: "integer", minimum: 0, maximum: 50, default: 10, description: "Most recent error entries to include." },
        per_edge_timeout_ms: { ...PER_EDGE_TIMEOUT_SCHEMA, description: "Deadline of each host skill call in milliseconds; a part that misses it reports deadline_exceeded while the others still answer." },
      },
      required: ["edge_id"],
      additionalProperties: false,
    },
    resultPreview: {
      edge_id: "web-1",
      online: true,
      labels: { team: "payments" },
      concerns: ["disk: / is 93.1% used (over 90%)", "units: nginx.service failed (exit-code) at 2025-01-31T13:58:01.123Z"],
      load: { ok: true, loadavg: [3.1, 2.4, 1.9], cpus: 4, load_per_cpu: 0.78, memory_used_pct: 61.2, memory_total_bytes: 8_254_390_272, swap_used_pct: 0, uptime_s: 864000 },
      disk: { ok: true, filesystems: [{ mount: "/", fs_type: "ext4", used_pct: 93.1, avail_bytes: 17_179_869_184, inodes_used_pct: 12.4 }], total: 3 },
      journal: {
        ok: true,
        since: "1h ago",
        failed_units: [{ unit: "nginx.service", last_failed_at: "2025-01-31T13:58:01.123Z", result: "exit-code", failures: 2 }],
        error_count: 7,
        warning_count: 12,
        recent_errors: [{ time: "2025-01-31T13:58:01.001Z", unit: "nginx.service", priority: "err", message: "bind() to 0.0.0.0:80 failed (98: Address already in use)" }],
      },
      failed_parts: [],
      session_id: "chat-42",
    },
    async execute(ctx, params) {
      const call = fleetCall(ctx);
      const id = params.edge_id;
      const session = deps.hub.session(id);
      const unknown = () => new SkillError("not_found", `unknown edge "${id}"`, "query_edges lists the edges you may reach");
      if (session && !reaches(call.caller, session.hello.labels)) throw unknown();
      if (!session) {
        const row = await deps.edges.get(id);
        if (!row || row.revokedAt || !reaches(call.caller, row.labels)) throw unknown();
        const seen = row.lastSeenAt ? `last seen ${row.lastSeenAt.toISOString()}` : "never connected";
        throw new SkillError("unavailable", `edge "${id}" is offline (${seen}); nothing can be measured`, "retry when the edge is back online, or query_edges with state offline to see what else is down");
      }
      const timeoutMs = perEdgeDeadline(ctx, params.per_edge_timeout_ms);
      const since = SINCE[params.window];
      const [load, disk, journal] = await Promise.all([
        part(call, id, "host_load", {}, timeoutMs, ctx.signal),
        part(call, id, "host_files", { limit: 50 }, timeoutMs, ctx.signal),
        part(call, id, "read_journal", { priority: "warning", since, lines: JOURNAL_LINES }, timeoutMs, ctx.signal),
      ]);
      const concerns: string[] = [];

      let loadPart: Part<Record<string, unknown>>;
      if (load.ok) {
        const o = load.output as { loadavg?: number[]; cpus?: number; memory?: { used_pct?: number; total_bytes?: number; available_bytes?: number }; swap?: { used_pct?: number } | null; uptime_s?: number; tasks?: unknown };
        const cpus = o.cpus && o.cpus > 0 ? o.cpus : 1;
        const perCpu = Array.isArray(o.loadavg) && typeof o.loadavg[0] === "number" ? Math.round((o.loadavg[0] / cpus) * 100) / 100 : null;
        loadPart = {
          ok: true,
          loadavg: o.loadavg ?? null,
          cpus,
          load_per_cpu: perCpu,
          memory_used_pct: pct(o.memory?.used_pct),
          memory_total_bytes: o.memory?.total_bytes ?? null,
          memory_available_bytes: o.memory?.available_bytes ?? null,
          swap_used_pct: pct(o.swap?.used_pct),
          uptime_s: o.uptime_s ?? null,
          tasks: o.tasks ?? null,
        };
        if (perCpu !== null && perCpu > CONCERN.load_per_cpu) concerns.push(`load: ${o.loadavg![0]} on ${cpus} CPUs = ${perCpu} per CPU (over ${CONCERN.load_per_cpu})`);
        const mem = pct(o.memory?.used_pct);
        if (mem !== null && mem > CONCERN.memory_used_pct) concerns.push(`memory: ${mem}% used (over ${CONCERN.memory_used_pct}%)`);
        const swap = pct(o.swap?.used_pct);
        if (swap !== null && swap > CONCERN.swap_used_pct) concerns.push(`swap: ${swap}% used (over ${CONCERN.swap_used_pct}%)`);
      } else loadPart = load;

      let diskPart: Part<Record<string, unknown>>;
      if (disk.ok) {
        const o = disk.output as { filesystems?: { mount: string; fs_type?: string; read_only?: boolean; used_pct?: number; avail_bytes?: number; inodes_used_pct?: number; error?: string }[]; total?: number };
        const rows = (o.filesystems ?? []).filter((f) => !f.read_only);
        diskPart = {
          ok: true,
          filesystems: rows.slice(0, 5).map((f) => ({ mount: f.mount, fs_type: f.fs_type, used_pct: f.used_pct ?? null, avail_bytes: f.avail_bytes ?? null, inodes_used_pct: f.inodes_used_pct ?? null, ...(f.error ? { error: f.error } : {}) })),
          total: o.total ?? rows.length,
        };
        for (const f of rows) {
          if (typeof f.used_pct === "number" && f.used_pct > CONCERN.disk_used_pct) concerns.push(`disk: ${f.mount} is ${f.used_pct}% used (over ${CONCERN.disk_used_pct}%)`);
          if (typeof f.inodes_used_pct === "number" && f.inodes_used_pct > CONCERN.inodes_used_pct) concerns.push(`inodes: ${f.mount} has ${f.inodes_used_pct}% of its inodes used (over ${CONCERN.inodes_used_pct}%)`);
        }
      } else diskPart = disk;

      let journalPart: Part<Record<string, unknown>>;
      if (journal.ok) {
        const entries = ((journal.output as { entries?: JournalEntry[] }).entries ?? []) as JournalEntry[];
        const found = journalFindings(entries, params.errors_limit);
        journalPart = { ok: true, since, ...found, ...(entries.length >= JOURNAL_LINES ? { note: `only the newest ${JOURNAL_LINES} warning-or-worse entries were read` } : {}) };
        for (const u of found.failed_units.slice(0, 5)) concerns.push(`units: ${u.unit} failed${u.result ? ` (${u.result})` : ""}${u.last_failed_at ? ` at ${u.last_failed_at}` : ""}`);
        if (found.error_count) concerns.push(`logs: ${found.error_count} error entries since ${since}`);
      } else journalPart = journal;

      const failedParts = [load.ok ? "" : "load", disk.ok ? "" : "disk", journal.ok ? "" : "journal"].filter(Boolean);
      return {
        edge_id: id,
        online: true,
        labels: { ...session.hello.labels },
        concerns,
        load: loadPart,
        disk: diskPart,
        journal: journalPart,
        failed_parts: failedParts,
        session_id: call.sessionId,
      };
    },
  });
}
