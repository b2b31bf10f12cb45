/**
 * Issue 26 end to end, as an adversary would try it: a real manager, a real compiled edge, users
 * with tokens. A viewer asks exec for what the classifier must not call safe; an admin tries to
 * satisfy the two-person rule alone; secrets of many kinds are planted where results, audit rows
 * and approvals would show them; a command is dressed up so that its masked view hides what runs.
 */
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { IdentityService, Role } from "../proto/gen/ongrid/v1/identity_service_pb.ts";
import { CredentialService } from "../proto/gen/ongrid/v1/credential_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";
import { SECRET_CORPUS } from "../skill/redact.corpus.ts";

let m: TestManager;
let edge: TestEdge;
let dir: string;

type Clients = {
  skills: Client<typeof SkillService>;
  approvals: Client<typeof ApprovalService>;
  identity: Client<typeof IdentityService>;
  credentials: Client<typeof CredentialService>;
  edges: Client<typeof EdgeService>;
};
const as: Record<string, Clients> = {};

function clientsFor(token: string): Clients {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return {
    skills: createClient(SkillService, t),
    approvals: createClient(ApprovalService, t),
    identity: createClient(IdentityService, t),
    credentials: createClient(CredentialService, t),
    edges: createClient(EdgeService, t),
  };
}

/** The seq of the newest audit row (0 when none), once pending rows are written. */
async function lastSeq(): Promise<number> {
  return (await lastAuditRow(m))?.seq ?? 0;
}
/** The rows after `seq`. */
async function rowsAfter(seq: number) {
  await m.audit.flush();
  return m.audit.list({ afterSeq: seq, limit: 1000 });
}

/** A result envelope's output as JSON. */
function outputOf(res: { result?: { output?: unknown } }): unknown {
  return res.result?.output ? toJson(ValueSchema, res.result.output as never) : null;
}

const exec = (who: string, command: string) => as[who].skills.executeSkill({ key: "exec", edgeId: "adv-edge", input: { case: "params", value: { command } as never } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-adversary-"));
  chmodSync(dir, 0o755);
  m = await bootManager({ "approvals.ttl": "10m", "skills.exec.read_roots": dir });
  edge = await startEdge(m, "adv-edge", { args: ["--exec-read-root", dir], roots: [dir] });
  for (const [id, role] of [
    ["vera", "viewer"],
    ["olga", "operator"],
    ["alice", "approver"],
  ] as const) {
    as[id] = clientsFor(await makeUser(m, id, role));
  }
  as.admin = clientsFor(m.adminToken);
}, 120_000);
afterAll(async () => {
  await edge?.stop();
  await m?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a viewer cannot walk around the exec gate", () => {
  // One representative of each bypass class of the report (2026-12-04); the classifier's own suite generates thousands more.
  const bypasses = [
    "function f { touch /tmp/adv-pwned; }; f",
    ":(){ :|:& };:",
    "hash -p /usr/bin/touch ls; ls /tmp/adv-pwned",
    "sed -n '1w/tmp/adv-pwned' /etc/hostname",
    "sed --in-pl s/a/b/ /etc/hostname",
    "grep --incl=x a /var/log",
    "git --output=/tmp/adv-pwned log",
    "awk 'BEGIN{print | \"touch /tmp/adv-pwned\"}'",
    "man -P 'touch /tmp/adv-pwned' ls",
    "tar --use-compress-program='touch /tmp/adv-pwned' -cf /dev/null /etc/hostname",
    "kill -9 1 -l",
    "cat /etc//shadow",
    "cat /proc/1/root/etc/shadow",
    "cat /proc/self/environ",
    "cat /var/lib/ongrid/admin.token",
    "kubectl get secret -o yaml",
    "dd of=/proc/sysrq-trigger",
    "timeout --kill 1 5 touch /tmp/adv-pwned",
    "env --chd / touch /tmp/adv-pwned",
    "echo 'flush ruleset' | nft -f -",
    "echo hi; touch /tmp/adv-pwned",
    "echo $(touch /tmp/adv-pwned)",
    "ls > /tmp/adv-pwned",
  ];
  it.each(bypasses)("refuses %j for a viewer: nothing runs and the refusal is audited", async (command) => {
    const before = await lastSeq();
    const err = await exec("vera", command).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err, "a viewer's non-safe exec must be refused").toBeInstanceOf(ConnectError);
    expect(err!.code).toBe(Code.PermissionDenied);
    const rows = await rowsAfter(before);
    expect(rows).toEqual([expect.objectContaining({ toolName: "exec", callerUserId: "vera", decision: "deny" })]);
  });

  it("runs the everyday safe toolkit for a viewer, on the compiled edge, without a shell", async () => {
    writeFileSync(join(dir, "app.log"), "ok 1\nerror 2\nerror 3\n");
    chmodSync(join(dir, "app.log"), 0o644);
    const r = await exec("vera", `grep -c error ${join(dir, "app.log")}`);
    expect(r.result?.success, JSON.stringify(r.result?.error)).toBe(true);
    const out = outputOf(r) as { stdout: string; ran: { via: string } };
    expect(out.stdout).toBe("2\n");
    expect(out.ran.via).toBe("argv");
    const piped = await exec("vera", `cat ${join(dir, "app.log")} | grep error | wc -l`);
    expect((outputOf(piped) as { stdout: string }).stdout).toBe("2\n");
  });
});

describe("separation of duties (G3): one admin cannot approve alone", () => {
  it("an approver the requester created, or one made after the request, does not count; an approver who predates it does", async () => {
    // The admin files a mutating call, then makes two approvers and tokens for them.
    const asked = await as.admin.skills.executeSkill({ key: "exec", edgeId: "adv-edge", input: { case: "params", value: { command: `touch ${join(dir, "duties")}` } as never } });
    expect(asked.approval?.state).toBe(ApprovalState.PENDING);
    const id = asked.approval!.id;
    for (const name of ["sock1", "sock2"]) {
      await as.admin.identity.createUser({ id: name, role: Role.APPROVER });
      const { token } = await as.admin.identity.createToken({ userId: name });
      const err = await clientsFor(token)
        .approvals.approve({ id })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err?.code, name).toBe(Code.PermissionDenied);
      expect(err?.rawMessage).toMatch(/cannot count toward/);
    }
    // Promoting an existing user after the request does not help either.
    await as.admin.identity.updateUser({ id: "olga", role: Role.APPROVER });
    const promoted = await as.olga.approvals.approve({ id }).catch((e: unknown) => ConnectError.from(e));
    expect((promoted as ConnectError).code).toBe(Code.PermissionDenied);
    expect((promoted as ConnectError).rawMessage).toMatch(/changed after the request was filed/);
    await as.admin.identity.updateUser({ id: "olga", role: Role.OPERATOR });
    // alice predates the request and owes the admin nothing the check can see (made by the test's store, not by this admin).
    const ok = await as.alice.approvals.approve({ id, paramsHash: asked.approval!.paramsHash });
    expect(ok.approval!.votes.map((v) => v.userId)).toEqual(["alice"]);
    // The refusals are in the chain, as approval_duties.
    const rows = await rowsAfter(Number(asked.auditSeq));
    expect(rows.filter((r) => r.toolName === "approval.approve" && r.decisionReason.startsWith("approval_duties:")).length).toBe(3);
  });

  it("an approval bound to another params hash is refused", async () => {
    const asked = await as.olga.skills.executeSkill({ key: "exec", edgeId: "adv-edge", input: { case: "params", value: { command: `touch ${join(dir, "hash")}` } as never } });
    const err = await as.alice.approvals.approve({ id: asked.approval!.id, paramsHash: "0".repeat(64) }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect(asked.approval!.paramsHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("every admin action writes an audit row, without secret values or tokens", async () => {
    const before = await lastSeq();
    await as.admin.identity.createUser({ id: "audited", role: Role.VIEWER });
    const { token } = await as.admin.identity.createToken({ userId: "audited", description: "for the audit test" });
    await as.admin.identity.updateUser({ id: "audited", reach: "team=x" });
    const tokens = await as.admin.identity.listTokens({ userId: "audited" });
    await as.admin.identity.revokeToken({ id: tokens.tokens[0]!.id });
    await as.admin.edges.enrollEdge({ id: "audited-edge" });
    await as.admin.edges.revokeEdge({ id: "audited-edge" });
    const failed = await as.admin.identity.createUser({ id: "audited", role: Role.VIEWER }).catch((e: unknown) => ConnectError.from(e));
    expect((failed as ConnectError).code).toBe(Code.AlreadyExists);
    // Only the admin's RPCs (an approved call may finish meanwhile); listing is not an action.
    const rows = (await rowsAfter(before)).filter((r) => r.toolName.startsWith("ongrid.v1.") && r.toolName !== "ongrid.v1.IdentityService/ListTokens");
    expect(rows.map((r) => r.toolName)).toEqual([
      "ongrid.v1.IdentityService/CreateUser",
      "ongrid.v1.IdentityService/CreateToken",
      "ongrid.v1.IdentityService/UpdateUser",
      "ongrid.v1.IdentityService/RevokeToken",
      "ongrid.v1.EdgeService/EnrollEdge",
      "ongrid.v1.EdgeService/RevokeEdge",
      "ongrid.v1.IdentityService/CreateUser",
    ]);
    expect(rows.every((r) => r.callerUserId === "admin")).toBe(true);
    expect(rows[rows.length - 1]).toMatchObject({ decision: "deny", error: expect.stringMatching(/^already_exists:/) });
    expect(JSON.stringify(rows)).not.toContain(token);
    expect(rows[2]!.args).toMatchObject({ id: "audited", reach: "team=x" });
  });
});

describe("secrets never reach a result, an audit row or an approval", () => {
  it(`redacts ${SECRET_CORPUS.length} secret kinds planted in a file read by a safe command`, async () => {
    const file = join(dir, "app-output.log");
    writeFileSync(file, SECRET_CORPUS.map((s) => s.text).join("\n") + "\n");
    chmodSync(file, 0o644);
    const r = await exec("vera", `cat ${file}`);
    expect(r.result?.success, JSON.stringify(r.result?.error)).toBe(true);
    const row = await lastAuditRow(m);
    const shown = JSON.stringify(outputOf(r)) + JSON.stringify(row);
    const leaked = SECRET_CORPUS.filter((s) => shown.includes(s.secret)).map((s) => s.kind);
    expect(leaked).toEqual([]);
  });

  it("an approval request shows the command with secret values masked, never hiding the commands around them", async () => {
    const asked = await as.olga.skills.executeSkill({ key: "exec", edgeId: "adv-edge", input: { case: "params", value: { command: `curl -H 'Authorization: Bearer abcdefghijklmnop' http://127.0.0.1:9/ ; touch ${join(dir, "x")}` } as never } });
    const shown = JSON.stringify(asked.approval!.params);
    expect(shown).not.toContain("abcdefghijklmnop");
    expect(shown).toContain(`; touch ${join(dir, "x")}`);
    // A "secret" standing where a command is would hide it from the approver: refused before any request exists.
    const hidden = await exec("olga", "echo Authorization: Basic systemctl stop db; true").catch((e: unknown) => ConnectError.from(e));
    expect((hidden as ConnectError).code).toBe(Code.InvalidArgument);
    expect((hidden as ConnectError).rawMessage).toMatch(/an approver would not see what runs/);
  });
});
