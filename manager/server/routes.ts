/** Registers every manager service on the Connect router. */
import type { ConnectRouter } from "@connectrpc/connect";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { AuditLog } from "../audit/types.ts";
import type { Dispatcher } from "../dispatch/dispatch.ts";
import { createSkillService } from "./skill-service.ts";
import { createAuditService } from "./audit-service.ts";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { createEdgeService } from "./edge-service.ts";
import type { Hub } from "../tunnel/hub.ts";
import type { EdgeStore } from "../edges/store.ts";
import type { PackSet } from "../../skill/pack/loader.ts";

/** The routes function for connectNodeAdapter. */
export function routes(deps: { registry: SkillRegistry; audit: AuditLog; dispatcher: Dispatcher; hub: Hub; edges: EdgeStore; packs?: PackSet }) {
  return (router: ConnectRouter) => {
    router.service(SkillService, createSkillService(deps));
    router.service(AuditService, createAuditService(deps));
    router.service(EdgeService, createEdgeService(deps));
  };
}
