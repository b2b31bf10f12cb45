/**
 * What changed in a time window (K3 query_change_events, correlate_incident): the audit log's
 * calls that changed something — a non-safe call that ran after its approvals, or in BYPASS
 * mode — plus the change events deploy tools posted, merged newest first. Both are cut to the
 * caller's reach; a call's params are shown only to those who may read the audit log (approver+).
 */
import { and, desc, eq, gte, inArray, like, lte, or, type SQL } from "drizzle-orm";
import type { Caller } from "../identity/caller.ts";
import type { Database } from "../db/client.ts";
import { toolCalls } from "../db/schema/index.ts";
import type { EdgeStore } from "../fleet/edge-store.ts";
import { isLimited, reaches } from "../identity/reach.ts";
import { roleAtLeast } from "../identity/store.ts";
import type { IncidentStore } from "./store.ts";

/** One change, from either origin. */
export interface ChangeEntry {
  at: string;
  /** audit: a call through ongrid; external: posted to /hooks/change-events. */
  origin: "audit" | "external";
  /** audit: "skill_call"; external: the kind it was posted with (deploy, config, …). */
  kind: string;
  summary: string;
  edge_id: string;
  /** Who made the change: the caller (an agent's calls: "<user> (agent)"), or the posted actor. */
  actor: string;
  tool?: string;
  audit_seq?: number;
  approval_id?: string;
  approved_by?: string[];
  /** unknown: the call was running when the manager stopped (approval_interrupted). */
  outcome?: "ok" | "failed" | "unknown";
  /** The call's params (redacted), for callers who may read the audit log. */
  params?: unknown;
  error?: string;
  /** external: the event's id and the user whose token posted it. */
  id?: number;
  posted_by?: string;
  details?: Record<string, unknown>;
}

/** A window query. */
export interface ChangeQuery {
  since: Date;
  until: Date;
  edgeId?: string;
  origin: "all" | "audit" | "external";
  limit: number;
  viewer: Caller;
}

/** What the query needs. */
export interface ChangeDeps {
  database: Database;
  edges: Pick<EdgeStore, "list">;
  incidents: Pick<IncidentStore, "listChangeEvents">;
}

/** The role a caller acts with: an agent (system) acts with its user's role. */
export function effectiveRole(c: Caller): string {
  return c.role === "system" ? (c.onBehalfRole ?? "viewer") : c.role;
}

/**
 * The edge ids a caller sees, for a query to filter on: "" (a change on no edge) and the enrolled
 * edges in its reach; undefined when the reach is unlimited (everything is visible).
 */
export async function visibleEdgeIds(edges: Pick<EdgeStore, "list">, caller: Caller): Promise<string[] | undefined> {
  if (!isLimited(caller)) return undefined;
  return ["", ...(await edges.list()).filter((e) => reaches(caller, e.labels)).map((e) => e.id)];
}

/** The same rule as a function telling whether the caller sees an edge (unknown edges: only when the reach is unlimited). */
export async function edgeVisibility(edges: Pick<EdgeStore, "list">, caller: Caller): Promise<(edgeId: string) => boolean> {
  const ids = await visibleEdgeIds(edges, caller);
  if (!ids) return () => true;
  const seen = new Set(ids);
  return (id) => seen.has(id);
}

/**
 * The audit rows that are changes: a non-safe call the gate let run after its approvals
 * (approved:) or in BYPASS mode (bypass:), and an approved call the manager stopped while it ran
 * (approval_interrupted: it may have changed something). Approving is not itself a change.
 */
async function auditChanges(database: Database, q: ChangeQuery, edgeIds: string[] | undefined, showParams: boolean): Promise<ChangeEntry[]> {
  const where: SQL[] = [
    gte(toolCalls.startedAt, q.since),
    lte(toolCalls.startedAt, q.until),
    eq(toolCalls.decision, "allow"),
    or(like(toolCalls.decisionReason, "approved:%"), like(toolCalls.decisionReason, "bypass:%"), like(toolCalls.decisionReason, "approval_interrupted:%"))!,
  ];
  if (q.edgeId) where.push(eq(toolCalls.deviceId, q.edgeId));
  if (edgeIds) where.push(inArray(toolCalls.deviceId, edgeIds));
  const rows = await database.db.select().from(toolCalls).where(and(...where)).orderBy(desc(toolCalls.startedAt), desc(toolCalls.seq)).limit(q.limit + 1);
  return rows.map((r) => {
    const actor = r.callerUserId === "0" && r.onBehalfOf ? `${r.onBehalfOf} (agent)` : (r.callerUserId ?? "");
    const approvers = r.approvedBy ? r.approvedBy.split(",").filter(Boolean) : [];
    const result = r.resultJson as { success?: boolean } | null;
    const interrupted = (r.decisionReason ?? "").startsWith("approval_interrupted:");
    const outcome = interrupted ? "unknown" : !r.error && result?.success !== false ? "ok" : "failed";
    const how = approvers.length ? `approved by ${approvers.join(", ")}` : (r.decisionReason ?? "").startsWith("bypass:") ? "BYPASS mode, no approval" : "approved";
    const params = showParams ? r.argsJson : undefined;
    const shown = params === undefined ? "" : ` ${JSON.stringify(params).slice(0, 300)}`;
    return {
      at: r.startedAt.toISOString(),
      origin: "audit" as const,
      kind: "skill_call",
      summary: `${r.toolName}${shown}${r.deviceId ? ` on ${r.deviceId}` : ""} by ${actor} (${how}): ${interrupted ? "interrupted by a manager stop, outcome unknown" : outcome}`,
      edge_id: r.deviceId,
      actor,
      tool: r.toolName,
      audit_seq: r.seq,
      ...(r.approvalId ? { approval_id: r.approvalId } : {}),
      ...(approvers.length ? { approved_by: approvers } : {}),
      outcome,
      ...(params !== undefined ? { params } : {}),
      ...(r.error ? { error: r.error.slice(0, 500) } : {}),
    };
  });
}

/**
 * Changes in the window, newest first, cut to `limit`; `truncated` when there were more. The
 * caller's reach is applied in the queries, before their limit: rows on edges outside it neither
 * take places in the page nor make it look truncated.
 */
export async function collectChanges(deps: ChangeDeps, q: ChangeQuery): Promise<{ changes: ChangeEntry[]; truncated: boolean; params_shown: boolean }> {
  const showParams = roleAtLeast(effectiveRole(q.viewer), "approver");
  const edgeIds = await visibleEdgeIds(deps.edges, q.viewer);
  const [audit, external] = await Promise.all([
    q.origin === "external" ? [] : auditChanges(deps.database, q, edgeIds, showParams),
    q.origin === "audit"
      ? []
      : deps.incidents.listChangeEvents({ since: q.since, until: q.until, edgeId: q.edgeId, edgeIds, limit: q.limit }).then((rows) =>
          rows.map(
            (e): ChangeEntry => ({
              at: e.at.toISOString(),
              origin: "external",
              kind: e.kind,
              summary: e.summary,
              edge_id: e.edgeId,
              actor: e.actor || e.source,
              id: e.id,
              posted_by: e.source,
              ...(Object.keys(e.details ?? {}).length ? { details: e.details } : {}),
            }),
          ),
        ),
  ]);
  const merged = mergeChanges([audit, external]);
  return { changes: merged.slice(0, q.limit), truncated: merged.length > q.limit, params_shown: showParams };
}

/** Merges lists of changes into one, newest first (ties: audit before external, then as given). */
export function mergeChanges(lists: ReadonlyArray<readonly ChangeEntry[]>): ChangeEntry[] {
  return lists
    .flat()
    .map((c, i) => ({ c, i, t: Date.parse(c.at) }))
    .sort((a, b) => b.t - a.t || (a.c.origin === b.c.origin ? a.i - b.i : a.c.origin === "audit" ? -1 : 1))
    .map((x) => x.c);
}
