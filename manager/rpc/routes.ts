/** Registers every manager service on the Connect router. */
import type { ConnectRouter } from "@connectrpc/connect";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { AuditLog } from "../audit/types.ts";
import type { Dispatcher } from "../calls/execute.ts";
import { createSkillService } from "./services/skill-service.ts";
import { createAuditService } from "./services/audit-service.ts";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { createEdgeService } from "./services/edge-service.ts";
import type { Hub } from "../fleet/hub.ts";
import type { EdgeStore } from "../fleet/edge-store.ts";
import type { PackSet } from "../../skill/pack/loader.ts";
import { ApprovalService } from "../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { IdentityService } from "../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { CredentialService } from "../../proto/gen/ongrid/v1/credential_service_pb.ts";
import { createApprovalService } from "./services/approval-service.ts";
import { createIdentityService } from "./services/identity-service.ts";
import { createCredentialService } from "./services/credential-service.ts";
import type { IdentityStore } from "../identity/store.ts";
import type { ApprovalStore } from "../calls/approvals/store.ts";
import type { ApprovalWorkflow } from "../calls/approvals/workflow.ts";
import type { CredentialStore } from "../calls/credentials/store.ts";
import { PlaybookService } from "../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { createPlaybookService } from "./services/playbook-service.ts";
import type { PlaybookRegistry } from "../playbooks/registry.ts";
import type { Router } from "../agent/router/router.ts";
import type { Agent } from "../agent/session/diagnose.ts";
import { AgentService } from "../../proto/gen/ongrid/v1/agent_service_pb.ts";
import { createAgentService } from "./services/agent-service.ts";
import type { Database } from "../db/client.ts";

/** The routes function for connectNodeAdapter. */
export function routes(deps: {
  registry: SkillRegistry;
  audit: AuditLog;
  dispatcher: Dispatcher;
  hub: Hub;
  edges: EdgeStore;
  packs?: PackSet;
  identity: IdentityStore;
  approvals: ApprovalStore;
  workflow: ApprovalWorkflow;
  credentials: CredentialStore;
  playbooks: PlaybookRegistry;
  router: Router;
  agent: Agent;
  database: Database;
  /** skills.output_cap_bytes: bounds the results one batched fan-out message carries. */
  outputCapBytes: number;
  /** Asks the other managers sharing the database to reload packs or playbooks too. */
  reloadEverywhere?(what: "packs" | "playbooks"): void;
}) {
  return (router: ConnectRouter) => {
    router.service(SkillService, createSkillService(deps));
    router.service(AuditService, createAuditService(deps));
    router.service(EdgeService, createEdgeService(deps));
    router.service(ApprovalService, createApprovalService(deps));
    router.service(IdentityService, createIdentityService(deps));
    router.service(CredentialService, createCredentialService(deps));
    router.service(PlaybookService, createPlaybookService(deps));
    router.service(AgentService, createAgentService(deps));
  };
}
