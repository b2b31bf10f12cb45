/**
 * Hostile input is refused cleanly (issue 26 G, spec A4/H3): what the refusal path stores can
 * always be listed and exported; NUL bytes and lone surrogates in ids are invalid_argument; an
 * unknown enum name or field in a JSON request is invalid_argument naming it, and audited like
 * any other refusal, instead of being ignored (a misspelled permission_mode used to run NORMAL).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../proto/gen/ongrid/v1/audit_service_pb.ts";
import { ApprovalService } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { auditRecord } from "../manager/audit/types.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";

let m: TestManager;
let token: string;
let skills: Client<typeof SkillService>;
let audit: Client<typeof AuditService>;
let approvals: Client<typeof ApprovalService>;

beforeAll(async () => {
  m = await bootManager();
  token = await makeUser(m, "hank", "approver");
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  skills = createClient(SkillService, t);
  audit = createClient(AuditService, t);
  approvals = createClient(ApprovalService, t);
}, 120_000);
afterAll(async () => {
  await m?.stop();
});

const refused = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => ConnectError.from(e),
  );

/** A JSON request to a Connect unary method, as a curl or a browser would send it. */
async function postJson(method: string, body: string): Promise<{ status: number; json: { code?: string; message?: string } }> {
  const res = await fetch(`${m.url}/ongrid.v1.${method}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body });
  return { status: res.status, json: (await res.json()) as { code?: string; message?: string } };
}

function nested(depth: number): unknown {
  let v: unknown = "bottom";
  for (let i = 0; i < depth; i++) v = { d: v };
  return v;
}

describe("stored rows always list", () => {
  it("lists and exports the deepest, largest and strangest rows the refusal path and the log accept", async () => {
    // Through the refusal path: params nested far deeper than any schema allows.
    for (const depth of [101, 150, 400]) {
      const err = await refused(skills.executeSkill({ key: "web_search", input: { case: "params", value: { query: "x", deep: nested(depth) } as never } }));
      expect(err?.code, `depth ${depth}`).toBe(Code.InvalidArgument);
    }
    // Written directly: rows of every odd shape the log takes.
    const odd = [
      { toolName: "odd.deep", args: nested(900) },
      { toolName: "odd.wide", args: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i])) },
      { toolName: "odd.big", args: { s: "x".repeat(2_000_000) } },
      { toolName: "odd.keys", args: { "": 1, "$typeName": "ongrid.v1.X", __proto__x: 2, "a.b": [null, true, 1.5e308, -0], "\u00e9\u4e2d\ud83d\ude00": "ok" } },
      { toolName: "odd.arrays", args: [[[[[]]]], { "0": [] }] },
    ];
    for (const o of odd) await m.audit.append(auditRecord({ ...o, callerUserId: "test", callerRole: "admin", decision: "deny", decisionReason: "test: odd row" }));
    await m.audit.flush();
    let after = 0n;
    let rows = 0;
    for (let page = 0; page < 50; page++) {
      const r = await audit.listToolCalls({ limit: 100, afterSeq: after });
      rows += r.toolCalls.length;
      if (!r.nextAfterSeq) break;
      after = r.nextAfterSeq;
    }
    expect(rows).toBeGreaterThanOrEqual(odd.length + 3);
    const deep = (await audit.listToolCalls({ toolName: "odd.deep", limit: 10 })).toolCalls;
    expect(deep).toHaveLength(1);
    expect(JSON.stringify(deep[0]!.args)).toMatch(/nested too deep/);
    expect((await m.audit.verify()).ok).toBe(true);
  });
});

describe("ids with NUL bytes or invalid UTF-16 are invalid_argument", () => {
  it.each([
    ["an edge id with a NUL", () => skills.executeSkill({ key: "host_load", edgeId: "web\u0000-01", input: { case: "params", value: {} as never } })],
    ["a skill key with a NUL", () => skills.executeSkill({ key: "web\u0000search", input: { case: "params", value: {} as never } })],
    ["an approval id with a NUL", () => approvals.getApproval({ id: "apr_\u0000x" })],
    ["an approval id holding bytes that are not UTF-8 (decoded as U+FFFD)", () => approvals.approve({ id: "apr_\ud800x" })],
    ["a param value with a NUL", () => skills.executeSkill({ key: "web_search", input: { case: "params", value: { query: "a\u0000b" } as never } })],
  ])("%s", async (_what, call) => {
    const err = await refused(call());
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toMatch(/NUL|UTF/);
  });
});

describe("JSON requests are read strictly", () => {
  it("an unknown enum name is invalid_argument naming the field, and audited; nothing runs in another mode", async () => {
    const r = await postJson("SkillService/ExecuteSkill", JSON.stringify({ key: "web_search", params: { query: "x" }, permissionMode: "READ_ONLY" }));
    expect(r.status).toBe(400);
    expect(r.json.code).toBe("invalid_argument");
    expect(r.json.message).toMatch(/permission_?[mM]ode/);
    // Refused while decoding, before the token is read: audited as an undecodable request.
    const row = await lastAuditRow(m);
    expect(row).toMatchObject({ error: expect.stringMatching(/^undecodable request: invalid_argument/) });
  });

  it("a lone surrogate sent in JSON is invalid_argument naming the field", async () => {
    const r = await postJson("ApprovalService/GetApproval", '{"id":"apr_\\ud800x"}');
    expect(r.json.code).toBe("invalid_argument");
    expect(r.json.message).toMatch(/GetApprovalRequest\.id .*invalid UTF8/);
  });

  it("an unknown field is invalid_argument naming it", async () => {
    const r = await postJson("SkillService/ExecuteSkill", JSON.stringify({ key: "web_search", params: { query: "x" }, permision_mode: "PERMISSION_MODE_READ_ONLY" }));
    expect(r.status).toBe(400);
    expect(r.json.code).toBe("invalid_argument");
    expect(r.json.message).toMatch(/permision_mode/);
  });

  it("an enum number outside the enum is refused, and audited", async () => {
    // In binary protobuf an unknown enum number decodes (proto3 enums are open): the dispatcher refuses it.
    const binary = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", useBinaryFormat: true, interceptors: [bearer(token)] }));
    const err = await refused(binary.executeSkill({ key: "web_search", input: { case: "params", value: { query: "x" } as never }, permissionMode: 99 as never }));
    expect(err?.code).toBe(Code.InvalidArgument);
    const row = await lastAuditRow(m);
    // Refused before the gate decided, like any invalid argument: no decision, the reason in error.
    expect(row).toMatchObject({ toolName: "web_search", callerUserId: "hank", error: expect.stringMatching(/^invalid_argument: permission_mode: 99 is not a mode/) });
  });
});
