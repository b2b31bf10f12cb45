import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DescService } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { RPC_RULES } from "./rules.ts";
import { ROLES } from "./store.ts";

const GEN = fileURLToPath(new URL("../../proto/gen/ongrid/v1/", import.meta.url));
const FILES = readdirSync(GEN).filter((f) => f.endsWith("_service_pb.ts")).sort();

/** Every service descriptor exported by the generated *_service_pb.ts files. */
const SERVICES: DescService[] = [];
for (const f of FILES) {
  const mod = (await import(new URL(`../../proto/gen/ongrid/v1/${f}`, import.meta.url).href)) as Record<string, unknown>;
  for (const v of Object.values(mod)) {
    if (v && typeof v === "object" && (v as { kind?: unknown }).kind === "service") SERVICES.push(v as DescService);
  }
}
/** The managers' own service: its own router, the cluster credential only; no user RPC rule applies. */
const PEER = "ongrid.v1.PeerService";
/** "ongrid.v1.Service/Method" of every generated user RPC, as the interceptor builds it. */
const METHODS = SERVICES.filter((s) => s.typeName !== PEER).flatMap((s) => s.methods.map((m) => `${m.parent.typeName}/${m.name}`));

test("the generated service files were found and each exports a service", () => {
  expect(FILES).toEqual(["agent_service_pb.ts", "approval_service_pb.ts", "audit_service_pb.ts", "credential_service_pb.ts", "edge_service_pb.ts", "identity_service_pb.ts", "peer_service_pb.ts", "playbook_service_pb.ts", "skill_service_pb.ts"]);
  expect(SERVICES.map((s) => s.typeName).sort()).toEqual([
    "ongrid.v1.AgentService",
    "ongrid.v1.ApprovalService",
    "ongrid.v1.AuditService",
    "ongrid.v1.CredentialService",
    "ongrid.v1.EdgeService",
    "ongrid.v1.IdentityService",
    "ongrid.v1.PeerService",
    "ongrid.v1.PlaybookService",
    "ongrid.v1.SkillService",
  ]);
  for (const s of SERVICES) expect(s.methods.length, s.typeName).toBeGreaterThan(0);
  expect(new Set(METHODS).size).toBe(METHODS.length);
});

test("every generated RPC has a rule (a method without one is refused to everybody)", () => {
  expect(METHODS.filter((m) => !Object.hasOwn(RPC_RULES, m))).toEqual([]);
});

test("no user rule opens the peer service (a user's token never reaches it)", () => {
  expect(Object.keys(RPC_RULES).filter((k) => k.startsWith(`${PEER}/`))).toEqual([]);
});

test("every rule names an RPC that exists", () => {
  expect(Object.keys(RPC_RULES).filter((k) => !METHODS.includes(k))).toEqual([]);
  expect(Object.keys(RPC_RULES).sort()).toEqual([...METHODS].sort());
});

test("every rule is a known role", () => {
  for (const [method, role] of Object.entries(RPC_RULES)) expect(ROLES, method).toContain(role);
});

test("Approve needs approver; Deny operator (the service lets only the requester withdraw); reads are open to viewers", () => {
  expect(RPC_RULES["ongrid.v1.ApprovalService/Approve"]).toBe("approver");
  expect(RPC_RULES["ongrid.v1.ApprovalService/Deny"]).toBe("operator");
  for (const m of ["ListApprovals", "GetApproval", "Watch"]) expect(RPC_RULES[`ongrid.v1.ApprovalService/${m}`]).toBe("viewer");
});

test("identity administration and every credential method need admin; WhoAmI is open to viewers", () => {
  const identity = SERVICES.find((s) => s.typeName === "ongrid.v1.IdentityService")!;
  for (const m of identity.methods) {
    expect(RPC_RULES[`ongrid.v1.IdentityService/${m.name}`], m.name).toBe(m.name === "WhoAmI" ? "viewer" : "admin");
  }
  const credential = SERVICES.find((s) => s.typeName === "ongrid.v1.CredentialService")!;
  for (const m of credential.methods) expect(RPC_RULES[`ongrid.v1.CredentialService/${m.name}`], m.name).toBe("admin");
  for (const m of ["EdgeService/EnrollEdge", "EdgeService/RevokeEdge", "SkillService/RescanPacks"]) expect(RPC_RULES[`ongrid.v1.${m}`], m).toBe("admin");
});

test("the audit trail needs approver", () => {
  const audit = SERVICES.find((s) => s.typeName === "ongrid.v1.AuditService")!;
  for (const m of audit.methods) expect(RPC_RULES[`ongrid.v1.AuditService/${m.name}`], m.name).toBe("approver");
});
