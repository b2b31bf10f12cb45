/** How the incident tools show an incident, cut to the caller's reach (G4). */
import type { IncidentRow } from "../../../incidents/store.ts";

/** An incident as a list shows it. */
export function incidentSummary(r: IncidentRow, visible: (edgeId: string) => boolean) {
  return {
    id: r.id,
    status: r.status,
    alertname: r.alertname,
    severity: r.severity,
    summary: r.summary,
    edge_ids: r.edgeIds.filter(visible),
    starts_at: r.startsAt.toISOString(),
    ends_at: r.endsAt ? r.endsAt.toISOString() : null,
    session_id: r.sessionId,
  };
}

/** Whether the caller may see an incident: it names no edge, or at least one edge in reach. */
export function incidentVisible(r: IncidentRow, visible: (edgeId: string) => boolean): boolean {
  return r.edgeIds.length === 0 || r.edgeIds.some(visible);
}
