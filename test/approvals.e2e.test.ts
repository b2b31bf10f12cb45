/**
 * Issue 5 end to end: a real manager, real compiled edges, real users with tokens. The gate,
 * approvals (mutating: one approver who is not the requester; dangerous: a signed SOP and two),
 * token expiry and revocation, reach over edges, and the edge's own refusal of unapproved calls.
 */
import { existsSync, mkdtempSync, openSync, readSync, closeSync, rmSync, writeFileSync, truncateSync } from "node:fs";
import { generateKeyPairSync, createHash, randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { IdentityService } from "../proto/gen/ongrid/v1/identity_service_pb.ts";
import { PermissionMode, SkillClass } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { signSop } from "../manager/calls/sop.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";
import { refusal } from "./support/rejection.ts";

let m: TestManager;
let edges: TestEdge[] = [];
let dir: string;
let keys: { privPem: string; otherPrivPem: string };

type Clients = { skills: Client<typeof SkillService>; approvals: Client<typeof ApprovalService>; edges: Client<typeof EdgeService>; identity: Client<typeof IdentityService> };
const as: Record<string, Clients> = {};

function clientsFor(token: string): Clients {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { skills: createClient(SkillService, t), approvals: createClient(ApprovalService, t), edges: createClient(EdgeService, t), identity: createClient(IdentityService, t) };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-approvals-"));
  const gen = () => generateKeyPairSync("rsa", { modulusLength: 2048, publicKeyEncoding: { type: "spki", format: "pem" }, privateKeyEncoding: { type: "pkcs8", format: "pem" } });
  const trusted = gen();
  const other = gen();
  writeFileSync(join(dir, "sop.pub"), trusted.publicKey);
  keys = { privPem: trusted.privateKey, otherPrivPem: other.privateKey };
  m = await bootManager({ "approvals.sop_trusted_keys": join(dir, "sop.pub"), "approvals.ttl": "10m" });
  edges.push(await startEdge(m, "edge-a", { labels: { team: "a", zone: "z" } }));
  edges.push(await startEdge(m, "edge-b", { labels: { team: "b", zone: "z" } }));
  for (const [id, role, reach] of [
    ["olga", "operator", ""],
    ["paul", "operator", ""],
    ["alice", "approver", ""],
    ["bob", "approver", ""],
    ["carol", "approver", ""],
    ["vic", "viewer", ""],
    ["tina", "operator", "team=a"],
  ] as const) {
    as[id] = clientsFor(await makeUser(m, id, role, { reach }));
  }
  as.admin = clientsFor(m.adminToken);
}, 120_000);
afterAll(async () => {
  await Promise.all(edges.map((e) => e.stop()));
  await m?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function exec(who: string, edgeId: string, command: string, extra: { sop?: string; waitForApproval?: boolean; permissionMode?: PermissionMode } = {}) {
  return as[who].skills.executeSkill({ key: "exec", edgeId, input: { case: "params", value: { command } as never }, ...extra });
}


async function rowsFor(approvalId: string) {
  await m.audit.flush();
  return (await m.audit.list({ limit: 1000 })).filter((r) => r.approvalId === approvalId);
}

const lastRow = () => lastAuditRow(m);

async function waitState(id: string, state: ApprovalState) {
  const ok = await waitFor(async () => (await as.admin.approvals.getApproval({ id })).approval!.state === state, 20_000);
  expect(ok, `approval ${id} did not reach ${ApprovalState[state]}`).toBe(true);
  return (await as.admin.approvals.getApproval({ id })).approval!;
}

describe("the gate through a real manager and compiled edges", () => {
  it("runs a safe exec for an operator and audits it as allowed", async () => {
    const res = await exec("olga", "edge-a", "df -h");
    expect(res.result?.success).toBe(true);
    expect(res.approval).toBeUndefined();
    const row = await lastRow();
    expect(row).toMatchObject({ toolName: "exec", deviceId: "edge-a", callerUserId: "olga", callerRole: "operator", decision: "allow" });
    expect(row.decisionReason).toMatch(/^safe: /);
  });

  it("lets a viewer run safe skills only, and refuses what READ_ONLY and a disabled BYPASS forbid", async () => {
    expect((await exec("vic", "edge-a", "df -h")).result?.success).toBe(true);
    const target = join(dir, "viewer-touch");
    let err = await refusal(exec("vic", "edge-a", `touch ${target}`));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toMatch(/denied \(role\): a viewer may run safe skills only/);
    expect((await lastRow()).decisionReason).toMatch(/^role: /);
    err = await refusal(exec("olga", "edge-a", `touch ${target}`, { permissionMode: PermissionMode.READ_ONLY }));
    expect(err.rawMessage).toMatch(/denied \(mode_read_only\)/);
    err = await refusal(exec("olga", "edge-a", `touch ${target}`, { permissionMode: PermissionMode.BYPASS }));
    expect(err.rawMessage).toMatch(/denied \(bypass_disabled\)/);
    expect((await lastRow()).decision).toBe("deny");
    expect(existsSync(target)).toBe(false);
  });

  it("refuses a mutating call in a fan-out on every edge instead of parking it", async () => {
    const target = join(dir, "fanout-touch");
    const events = [];
    for await (const ev of as.olga.skills.fanOutSkill({ key: "exec", selector: "zone=z", input: { case: "params", value: { command: `touch ${target}` } as never } })) events.push(ev);
    const results = events.filter((e) => e.event.case === "edgeResult").map((e) => e.event.value as { edgeId: string; error?: { code: string; message: string } });
    expect(results.map((r) => r.edgeId).sort()).toEqual(["edge-a", "edge-b"]);
    for (const r of results) expect(r.error?.message).toMatch(/needs approval; a fan-out runs only calls that need none/);
    expect(existsSync(target)).toBe(false);
  });
});

describe("mutating calls wait for an approver who is not the requester", () => {
  it("parks, refuses the requester's own approval and an operator's, runs once after a second user approves, audited with both ids", async () => {
    const target = join(dir, "mutating-1");
    const res = await exec("alice", "edge-a", `touch ${target}`);
    expect(res.result).toBeUndefined();
    const a = res.approval!;
    expect(a).toMatchObject({ key: "exec", edgeId: "edge-a", state: ApprovalState.PENDING, requesterUserId: "alice", requiredApprovals: 1, effectiveClass: SkillClass.MUTATING });
    const ask = await lastRow();
    expect(ask).toMatchObject({ decision: "ask", approvalId: a.id, callerUserId: "alice", seq: Number(res.auditSeq) });
    expect(ask.decisionReason).toMatch(/^approval_required: /);
    expect(existsSync(target)).toBe(false);

    // Watch from the requester's side: it sees the state change.
    const seen: ApprovalState[] = [];
    const watching = (async () => {
      for await (const ev of as.alice.approvals.watch({ id: a.id })) seen.push(ev.approval!.state);
    })();

    let err = await refusal(as.alice.approvals.approve({ id: a.id }));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toMatch(/"alice" requested .* and cannot approve it/);
    err = await refusal(as.olga.approvals.approve({ id: a.id }));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toMatch(/needs role approver or above; "olga" is operator/);
    expect(existsSync(target)).toBe(false);

    const approved = (await as.bob.approvals.approve({ id: a.id, comment: "ok for the test" })).approval!;
    expect([ApprovalState.RUNNING, ApprovalState.EXECUTED]).toContain(approved.state);
    const done = await waitState(a.id, ApprovalState.EXECUTED);
    await watching;
    expect(seen[0]).toBe(ApprovalState.PENDING);
    expect(seen[seen.length - 1]).toBe(ApprovalState.EXECUTED);
    expect(existsSync(target)).toBe(true);
    expect(done.result?.success).toBe(true);
    expect(done.votes.map((v) => v.userId)).toEqual(["bob"]);

    const rows = await rowsFor(a.id);
    const run = rows.find((r) => r.seq === Number(done.executionAuditSeq))!;
    expect(run).toMatchObject({ toolName: "exec", deviceId: "edge-a", callerUserId: "alice", approvedBy: "bob", decision: "allow", approvalId: a.id });
    expect(run.decisionReason).toMatch(/^approved: by bob/);
    expect(rows.filter((r) => r.toolName === "exec")).toHaveLength(2); // ask + the run: it ran exactly once
    const refusals = rows.filter((r) => r.toolName === "approval.approve" && r.decision === "deny");
    expect(refusals.map((r) => r.callerUserId)).toEqual(["alice"]); // olga was refused by role, before the approval was looked up
    expect(refusals[0].decisionReason).toMatch(/^approval_self: /);
  });

  it("refuses replayed approvals, approvals of finished and unknown requests, and audits each", async () => {
    const target = join(dir, "mutating-2");
    const a = (await exec("paul", "edge-a", `touch ${target}`)).approval!;
    await as.alice.approvals.approve({ id: a.id });
    await waitState(a.id, ApprovalState.EXECUTED);
    let err = await refusal(as.alice.approvals.approve({ id: a.id }));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toMatch(/"alice" already approved .* an approval counts once/);
    expect((await lastRow()).decisionReason).toMatch(/^approval_replayed: /);
    err = await refusal(as.carol.approvals.approve({ id: a.id }));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toMatch(/is already executed/);
    err = await refusal(as.carol.approvals.approve({ id: "apr_0000000000000000" }));
    expect(err.code).toBe(Code.NotFound);
    const last = await lastRow();
    expect(last).toMatchObject({ toolName: "approval.approve", callerUserId: "carol", decision: "deny", approvalId: "apr_0000000000000000" });
    expect(last.decisionReason).toMatch(/^approval_not_found: /);
    // Still exactly one execution.
    expect((await rowsFor(a.id)).filter((r) => r.toolName === "exec" && r.decision === "allow")).toHaveLength(1);
  });

  it("lets the requester wait: ExecuteSkill returns the result once approved", async () => {
    const target = join(dir, "mutating-wait");
    const pending = exec("paul", "edge-a", `touch ${target}`, { waitForApproval: true });
    let id = "";
    await waitFor(async () => {
      const list = await as.alice.approvals.listApprovals({ state: ApprovalState.PENDING });
      id = list.approvals.find((x) => x.requesterUserId === "paul")?.id ?? "";
      return Boolean(id);
    }, 10_000);
    expect(id).not.toBe("");
    await as.alice.approvals.approve({ id });
    const res = await pending;
    expect(res.result?.success).toBe(true);
    expect(res.approval?.state).toBe(ApprovalState.EXECUTED);
    expect(existsSync(target)).toBe(true);
  });

  it("ends a request on deny (nothing runs) and on expiry, telling a waiting requester", async () => {
    const target = join(dir, "mutating-denied");
    const waiting = exec("paul", "edge-a", `touch ${target}`, { waitForApproval: true }).catch((e) => e);
    let id = "";
    await waitFor(async () => {
      id = (await as.bob.approvals.listApprovals({ state: ApprovalState.PENDING })).approvals.find((x) => x.requesterUserId === "paul")?.id ?? "";
      return Boolean(id);
    }, 10_000);
    const denied = (await as.bob.approvals.deny({ id, reason: "not during the freeze" })).approval!;
    expect(denied).toMatchObject({ state: ApprovalState.DENIED, deniedBy: "bob" });
    const err = (await waiting) as ConnectError;
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toMatch(/was denied by bob: not during the freeze/);
    expect(existsSync(target)).toBe(false);
    const end = (await rowsFor(id)).find((r) => r.decision === "deny")!;
    expect(end).toMatchObject({ toolName: "exec", callerUserId: "bob" });
    expect(end.decisionReason).toMatch(/^approval_denied: by bob: not during the freeze/);
    expect((await refusal(as.alice.approvals.approve({ id }))).rawMessage).toMatch(/is already denied/);

    const waiting2 = exec("paul", "edge-a", `touch ${target}`, { waitForApproval: true }).catch((e) => e);
    let id2 = "";
    await waitFor(async () => {
      id2 = (await as.bob.approvals.listApprovals({ state: ApprovalState.PENDING })).approvals.find((x) => x.requesterUserId === "paul")?.id ?? "";
      return Boolean(id2);
    }, 10_000);
    await m.workflow.sweep(new Date(Date.now() + 3_600_000)); // the clock moves past its expiry
    const err2 = (await waiting2) as ConnectError;
    expect(err2.code).toBe(Code.DeadlineExceeded);
    expect(err2.rawMessage).toMatch(/expired at .* without a decision/);
    expect((await as.paul.approvals.getApproval({ id: id2 })).approval!.state).toBe(ApprovalState.EXPIRED);
    expect((await rowsFor(id2)).some((r) => r.decision === "deny" && r.decisionReason.startsWith("approval_expired:"))).toBe(true);
    expect(existsSync(target)).toBe(false);
  });

  it("shows a request only to its requester and to approvers", async () => {
    const a = (await exec("olga", "edge-a", `touch ${join(dir, "visibility")}`)).approval!;
    expect((await as.olga.approvals.getApproval({ id: a.id })).approval!.id).toBe(a.id);
    expect((await as.alice.approvals.getApproval({ id: a.id })).approval!.id).toBe(a.id);
    expect((await refusal(as.paul.approvals.getApproval({ id: a.id }))).code).toBe(Code.NotFound);
    expect((await as.paul.approvals.listApprovals({})).approvals.map((x) => x.id)).not.toContain(a.id);
    // The requester may withdraw it.
    expect((await as.olga.approvals.deny({ id: a.id })).approval!.state).toBe(ApprovalState.DENIED);
  });
});

describe("dangerous calls need a signed SOP and two approvers, neither the requester", () => {
  const disk = () => join(dir, "disk.img");
  const command = () => `mkfs.ext4 -F -q ${disk()}`;
  const sopText = (o: { skills?: string; expires?: string; pattern?: string } = {}) =>
    [
      "---",
      "id: SOP-7",
      "version: 2",
      "title: Re-create the scratch filesystem image",
      `skills: [${o.skills ?? "exec"}]`,
      "params:",
      `  ${(o.skills ?? "exec").split(",")[0].trim()}:`,
      `    command: '${o.pattern ?? `^mkfs\\.ext4 -F -q ${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/disk\\.img$`}'`,
      `expires: ${o.expires ?? new Date(Date.now() + 86_400_000).toISOString()}`,
      "---",
      "# Steps",
      "1. Make sure nothing uses the image.",
      "",
    ].join("\n");
  const ext4Magic = () => {
    const fd = openSync(disk(), "r");
    const b = Buffer.alloc(2);
    readSync(fd, b, 0, 2, 1080);
    closeSync(fd);
    return b.readUInt16LE(0) === 0xef53;
  };

  beforeAll(() => {
    writeFileSync(disk(), "");
    truncateSync(disk(), 8 * 1024 * 1024);
  });

  it("refuses without an SOP, with a tampered, expired, other-skill, wrongly signed or param-violating SOP, each with its own message", async () => {
    const good = signSop(sopText(), keys.privPem);
    const cases: Array<[string, string | undefined, RegExp, string]> = [
      ["none", undefined, /needs a signed SOP covering it: none was sent/, "sop_missing"],
      ["tampered", good.replace("1. Make sure nothing uses the image.", "1. Go ahead."), /signature does not verify against any trusted key/, "sop_invalid"],
      ["expired", signSop(sopText({ expires: "2020-01-01T00:00:00Z" }), keys.privPem), /SOP "SOP-7" v2 expired at 2020-01-01/, "sop_invalid"],
      ["other skill", signSop(sopText({ skills: "restart_service" }), keys.privPem), /does not cover skill "exec" \(covers: restart_service\)/, "sop_invalid"],
      ["untrusted key", signSop(sopText(), keys.otherPrivPem), /signature does not verify/, "sop_invalid"],
      ["param", signSop(sopText({ pattern: "^mkfs\\.ext4 /dev/loop[0-9]+$" }), keys.privPem), /does not allow exec param "command"/, "sop_invalid"],
      ["frontmatter", "---\nid: x\n---\nno\n", /sop|SOP|frontmatter|signature/i, "sop_invalid"],
    ];
    for (const [name, sop, message, reason] of cases) {
      const err = await refusal(exec("olga", "edge-a", command(), { sop }));
      expect([Code.PermissionDenied, Code.InvalidArgument], name).toContain(err.code);
      expect(err.rawMessage, name).toMatch(message);
      const row = await lastRow();
      expect(row.decision, name).toBe("deny");
      expect(row.decisionReason.startsWith(`${reason}:`), `${name}: ${row.decisionReason}`).toBe(true);
    }
    expect(ext4Magic()).toBe(false);
  });

  it("runs only after two distinct approvers, records the SOP hash and both approvers", async () => {
    const sop = signSop(sopText(), keys.privPem);
    const res = await exec("olga", "edge-a", command(), { sop });
    const a = res.approval!;
    expect(a).toMatchObject({ state: ApprovalState.PENDING, requiredApprovals: 2, effectiveClass: SkillClass.DANGEROUS, sopId: "SOP-7", sopVersion: "2" });
    const hash = createHash("sha256").update(sop).digest("hex");
    expect(a.sopHash).toBe(hash);
    expect((await lastRow()).sopHash).toBe(hash);

    expect((await as.alice.approvals.approve({ id: a.id })).approval!.state).toBe(ApprovalState.PENDING);
    const twice = await refusal(as.alice.approvals.approve({ id: a.id }));
    expect(twice.rawMessage).toMatch(/already approved/);
    await new Promise((r) => setTimeout(r, 300));
    expect(ext4Magic()).toBe(false); // one approver is not enough
    expect((await as.alice.approvals.getApproval({ id: a.id })).approval!.state).toBe(ApprovalState.PENDING);

    await as.bob.approvals.approve({ id: a.id });
    const done = await waitState(a.id, ApprovalState.EXECUTED);
    expect(done.result?.success, JSON.stringify(done.result?.error)).toBe(true);
    expect(ext4Magic()).toBe(true);
    const run = (await rowsFor(a.id)).find((r) => r.seq === Number(done.executionAuditSeq))!;
    expect(run).toMatchObject({ toolName: "exec", callerUserId: "olga", approvedBy: "alice,bob", sopHash: hash, decision: "allow" });
    expect((await m.audit.verify()).ok).toBe(true);
  });
});

describe("tokens", () => {
  it("refuses an expired token and a revoked one from the next call on", async () => {
    const short = await makeUser(m, "olga", "operator", { ttlMs: 1500 });
    const c = clientsFor(short);
    expect((await c.skills.listSkills({})).skills.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1700));
    let err = await refusal(c.skills.listSkills({}));
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toMatch(/expired at/);

    const created = await as.admin.identity.createToken({ userId: "paul", description: "to revoke" });
    const p = clientsFor(created.token);
    expect((await p.identity.whoAmI({})).user?.id).toBe("paul");
    await as.admin.identity.revokeToken({ id: created.info!.id });
    err = await refusal(p.identity.whoAmI({}));
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toMatch(/was revoked at/);
    const row = await lastRow();
    expect(row).toMatchObject({ decision: "deny", toolName: "ongrid.v1.IdentityService/WhoAmI" });
    expect(row.decisionReason).toMatch(/^unauthenticated: API token .* was revoked/);
    // A forged token of the right shape.
    err = await refusal(clientsFor(`ogu_${"ab".repeat(6)}_${randomBytes(32).toString("base64url")}`).skills.listSkills({}));
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toMatch(/unknown API token/);
  });
});

describe("reach over edges", () => {
  it("keeps a team=a user from seeing, calling or fanning out to a team=b edge", async () => {
    expect((await as.tina.edges.listEdges({})).edges.map((e) => e.id)).toEqual(["edge-a"]);
    expect((await refusal(as.tina.edges.getEdge({ id: "edge-b" }))).code).toBe(Code.NotFound);
    const skills = await as.tina.skills.listSkills({});
    expect(skills.skills.find((s) => s.key === "exec")?.edgeIds).toEqual(["edge-a"]);
    const err = await refusal(exec("tina", "edge-b", "df -h"));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toMatch(/unknown edge "edge-b"/); // the same answer as for an edge that does not exist
    expect((await exec("tina", "edge-a", "df -h")).result?.success).toBe(true);

    const events = [];
    for await (const ev of as.tina.skills.fanOutSkill({ key: "exec", selector: "zone=z", input: { case: "params", value: { command: "df -h" } as never } })) events.push(ev);
    const results = events.filter((e) => e.event.case === "edgeResult").map((e) => (e.event.value as { edgeId: string }).edgeId);
    expect(results).toEqual(["edge-a"]);
    const summary = events.find((e) => e.event.case === "summary")!.event.value as { targeted: number; leftOut: number };
    // That edge-b matched but lies outside tina's reach is not said to her (it would reveal it exists).
    expect(summary).toMatchObject({ targeted: 1, leftOut: 0 });

    // A token can narrow its user's reach further: an admin token limited to team=b.
    const narrowed = clientsFor((await as.admin.identity.createToken({ userId: "admin", reach: "team=b" })).token);
    expect((await narrowed.edges.listEdges({})).edges.map((e) => e.id)).toEqual(["edge-b"]);
  });
});

describe("edge defence in depth", () => {
  it("refuses a non-safe execute frame without valid approval evidence, and still runs safe ones", async () => {
    const target = join(dir, "no-evidence");
    let r = await m.hub.call("edge-a", "exec", { command: `touch ${target}` }, 10_000);
    expect(r.success).toBe(false);
    expect(r.error?.code).toBe("permission_denied");
    expect(r.error?.message).toMatch(/edge refused: "exec" is mutating for these params and the manager sent no approval evidence/);
    // Evidence for a mutating call presented with a dangerous command: the MAC binds it to the params, so it fails.
    r = await m.hub.call("edge-a", "exec", { command: `mkfs.ext4 -F -q ${join(dir, "disk.img")}` }, 10_000, undefined, { approvalId: "apr_x", approvers: ["bob"], sopHash: "", effectiveClass: "mutating", reasonType: "approved" });
    expect(r.error?.message).toMatch(/approved "exec" as mutating, but this edge classifies these params as dangerous/);
    expect(existsSync(target)).toBe(false);
    r = await m.hub.call("edge-a", "exec", { command: "df -h" }, 10_000);
    expect(r.success).toBe(true);
  });
});

describe("BYPASS mode, when a manager enables it", () => {
  it("runs a mutating call without approval, audits it as bypass, and the edge accepts the manager's evidence", async () => {
    const m2 = await bootManager({ "gate.allow_bypass": true });
    const e2 = await startEdge(m2, "edge-dev", { labels: { env: "dev" } });
    try {
      const t = createConnectTransport({ baseUrl: m2.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m2, "dev", "operator"))] });
      const skills = createClient(SkillService, t);
      const target = join(dir, "bypass-touch");
      const res = await skills.executeSkill({ key: "exec", edgeId: "edge-dev", input: { case: "params", value: { command: `touch ${target}` } as never }, permissionMode: PermissionMode.BYPASS });
      expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
      expect(existsSync(target)).toBe(true);
      await m2.audit.flush();
      const rows = await m2.audit.list({ toolName: "exec" });
      expect(rows[rows.length - 1]).toMatchObject({ decision: "allow", callerUserId: "dev", approvalId: "" });
      expect(rows[rows.length - 1].decisionReason).toMatch(/^bypass: BYPASS mode: "exec" is mutating/);
      // A viewer gets nothing from BYPASS.
      const viewer = createClient(SkillService, createConnectTransport({ baseUrl: m2.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m2, "ro", "viewer"))] }));
      const err = await refusal(viewer.executeSkill({ key: "exec", edgeId: "edge-dev", input: { case: "params", value: { command: `touch ${target}-2` } as never }, permissionMode: PermissionMode.BYPASS }));
      expect(err.rawMessage).toMatch(/denied \(role\)/);
      expect(existsSync(`${target}-2`)).toBe(false);
    } finally {
      await e2.stop();
      await m2.stop();
    }
  });
});
