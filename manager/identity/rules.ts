/**
 * Who may call which RPC (G1): the least role per method. Finer checks (the gate for executions,
 * requester-vs-approver for approvals, reach over edges) happen in the services.
 */
import type { Role } from "./store.ts";

/** "ongrid.v1.Service/Method" → the least role that may call it. A method missing here is refused. */
export const RPC_RULES: Readonly<Record<string, Role>> = {
  "ongrid.v1.SkillService/ListSkills": "viewer",
  "ongrid.v1.SkillService/GetSkill": "viewer",
  // Every role may ask; the gate then decides per call (a viewer gets safe skills only).
  "ongrid.v1.SkillService/ExecuteSkill": "viewer",
  "ongrid.v1.SkillService/FanOutSkill": "viewer",
  "ongrid.v1.SkillService/RescanPacks": "admin",
  "ongrid.v1.EdgeService/ListEdges": "viewer",
  "ongrid.v1.EdgeService/GetEdge": "viewer",
  "ongrid.v1.EdgeService/EnrollEdge": "admin",
  "ongrid.v1.EdgeService/RevokeEdge": "admin",
  "ongrid.v1.EdgeService/SetEdgeLabels": "admin",
  "ongrid.v1.AuditService/ListToolCalls": "approver",
  "ongrid.v1.AuditService/VerifyChain": "approver",
  "ongrid.v1.ApprovalService/ListApprovals": "viewer",
  "ongrid.v1.ApprovalService/GetApproval": "viewer",
  "ongrid.v1.ApprovalService/Watch": "viewer",
  "ongrid.v1.ApprovalService/Approve": "approver",
  // Approvers deny; an operator may withdraw their own request (checked by the service).
  "ongrid.v1.ApprovalService/Deny": "operator",
  "ongrid.v1.IdentityService/WhoAmI": "viewer",
  "ongrid.v1.IdentityService/CreateUser": "admin",
  "ongrid.v1.IdentityService/ListUsers": "admin",
  "ongrid.v1.IdentityService/UpdateUser": "admin",
  "ongrid.v1.IdentityService/CreateToken": "admin",
  "ongrid.v1.IdentityService/ListTokens": "admin",
  "ongrid.v1.IdentityService/RevokeToken": "admin",
  "ongrid.v1.CredentialService/PutCredential": "admin",
  "ongrid.v1.CredentialService/ListCredentials": "admin",
  "ongrid.v1.CredentialService/DeleteCredential": "admin",
  "ongrid.v1.PlaybookService/ListPlaybooks": "viewer",
  "ongrid.v1.PlaybookService/GetPlaybook": "viewer",
  "ongrid.v1.PlaybookService/Reload": "admin",
  // Routing only reads playbooks and picks one; what runs afterwards goes through the gate.
  "ongrid.v1.PlaybookService/Route": "viewer",
  // The agent's tools: every role may ask; the list and each call are gated for the caller's role.
  "ongrid.v1.AgentService/ListTools": "viewer",
  "ongrid.v1.AgentService/CallTool": "viewer",
  "ongrid.v1.AgentService/Diagnose": "viewer",
};

/**
 * The administrative actions (G6): each call, allowed or failed, writes one audit row in the chain
 * (manager/audit/admin.ts), with its arguments and never a secret value or a token.
 */
export const ADMIN_ACTIONS: ReadonlySet<string> = new Set([
  "ongrid.v1.SkillService/RescanPacks",
  "ongrid.v1.EdgeService/EnrollEdge",
  "ongrid.v1.EdgeService/RevokeEdge",
  "ongrid.v1.EdgeService/SetEdgeLabels",
  "ongrid.v1.IdentityService/CreateUser",
  "ongrid.v1.IdentityService/UpdateUser",
  "ongrid.v1.IdentityService/CreateToken",
  "ongrid.v1.IdentityService/RevokeToken",
  "ongrid.v1.CredentialService/PutCredential",
  "ongrid.v1.CredentialService/DeleteCredential",
  "ongrid.v1.PlaybookService/Reload",
]);
