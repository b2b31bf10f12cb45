/** Registers every manager service on the Connect router. */
import type { ConnectRouter } from "@connectrpc/connect";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { AuditLog } from "../audit/types.ts";
import type { Dispatcher } from "../dispatch/dispatch.ts";
import { createSkillService } from "./skill-service.ts";
import { createAuditService } from "./audit-service.ts";

/** The routes function for connectNodeAdapter. */
export function routes(deps: { registry: SkillRegistry; audit: AuditLog; dispatcher: Dispatcher }) {
  return (router: ConnectRouter) => {
    router.service(SkillService, createSkillService(deps));
    router.service(AuditService, createAuditService(deps));
  };
}
