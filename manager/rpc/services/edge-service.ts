/** ongrid.v1.EdgeService: enrolment, revocation and presence of edge agents. */
import type { ServiceImpl } from "@connectrpc/connect";
import { EdgeService } from "../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import { checkEdgeId, type EdgeStore } from "../../fleet/edge-store.ts";
import { parseSelector } from "../../fleet/selector.ts";
import type { Hub } from "../../fleet/hub.ts";
import { callerOf } from "../../identity/caller.ts";
import { reaches } from "../../identity/reach.ts";
import { edgeToProto } from "../messages/edge.ts";

/** Builds the EdgeService implementation. */
export function createEdgeService(deps: { edges: EdgeStore; hub: Hub }): ServiceImpl<typeof EdgeService> {
  const { edges, hub } = deps;
  return {
    async listEdges(req, ctx) {
      const caller = callerOf(ctx);
      const selector = parseSelector(req.selector);
      const rows = await edges.list();
      const out = rows.map((r) => edgeToProto(r, hub, false)).filter((e) => (!req.onlineOnly || e.online) && selector.matches(e.labels) && reaches(caller, e.labels));
      return { edges: out };
    },
    async getEdge(req, ctx) {
      const row = await edges.get(req.id);
      const edge = row ? edgeToProto(row, hub, true) : undefined;
      // An edge outside the caller's reach is answered exactly like one that does not exist.
      if (!edge || !reaches(callerOf(ctx), edge.labels)) throw new OngridError("not_found", `unknown edge "${req.id}"`, "ListEdges shows the enrolled edges");
      return { edge };
    },
    async enrollEdge(req) {
      checkEdgeId(req.id);
      const res = await edges.enroll(req.id, Object.keys(req.labels).length ? { labels: req.labels } : {});
      if (res.rotated) hub.disconnect(req.id, "the edge's token was rotated");
      return res;
    },
    async setEdgeLabels(req) {
      const labels = await edges.setLabels(req.id, req.labels);
      hub.relabel(req.id, labels);
      const row = await edges.get(req.id);
      return { edge: edgeToProto(row!, hub, false) };
    },
    async revokeEdge(req) {
      if (!(await edges.revoke(req.id))) throw new OngridError("not_found", `unknown edge "${req.id}"`);
      return { disconnected: hub.disconnect(req.id, "the edge's token was revoked") };
    },
  };
}
