/**
 * The console's only way to the manager: Connect-Web clients over the generated service
 * descriptors, with the API token sent as a bearer header.
 */
import { createClient, ConnectError, Code, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { DescService } from "@bufbuild/protobuf";
import { SkillService } from "../../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ApprovalService } from "../../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { AuditService } from "../../../proto/gen/ongrid/v1/audit_service_pb.ts";
import { IdentityService } from "../../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { PlaybookService } from "../../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { AgentService } from "../../../proto/gen/ongrid/v1/agent_service_pb.ts";

/** Every service the console talks to, bound to one token. */
export interface Api {
  skills: Client<typeof SkillService>;
  edges: Client<typeof EdgeService>;
  approvals: Client<typeof ApprovalService>;
  audit: Client<typeof AuditService>;
  identity: Client<typeof IdentityService>;
  playbooks: Client<typeof PlaybookService>;
  agent: Client<typeof AgentService>;
}

/** Builds the clients for a token; `onUnauthenticated` runs when the manager refuses it. */
export function createApi(token: string, onUnauthenticated: () => void): Api {
  const bearer: Interceptor = (next) => async (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.Unauthenticated) onUnauthenticated();
      throw err;
    }
  };
  const transport = createConnectTransport({ baseUrl: window.location.origin, interceptors: [bearer] });
  const client = <T extends DescService>(service: T) => createClient(service, transport);
  return {
    skills: client(SkillService),
    edges: client(EdgeService),
    approvals: client(ApprovalService),
    audit: client(AuditService),
    identity: client(IdentityService),
    playbooks: client(PlaybookService),
    agent: client(AgentService),
  };
}

/** A readable one-line message for any error a call can throw. */
export function errorText(err: unknown): string {
  if (err instanceof ConnectError) return `${Code[err.code] ?? err.code}: ${err.rawMessage}`;
  if (err instanceof Error) return err.message;
  return String(err);
}
