/** The manager end to end: one port, three kinds of client, one audit row per outcome. */
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { toJson } from "@bufbuild/protobuf";
import { status as GrpcStatus } from "@grpc/grpc-js";
import {
  ExecuteSkillRequestSchema,
  ExecuteSkillResponseSchema,
  SkillService,
} from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../proto/gen/ongrid/v1/audit_service_pb.ts";
import { SkillResultSchema } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startFakeSearx, type FakeSearx } from "./support/searxng.ts";
import { grpcUnary } from "./support/grpc-client.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { lastAuditRow } from "./support/audit.ts";

let m: TestManager;
let searx: FakeSearx;
/** An ordinary caller's token (role operator): skills are run as that user; the audit service needs the admin's. */
let op: string;

beforeAll(async () => {
  searx = await startFakeSearx();
  m = await bootManager({ "skills.web_search.url": searx.url, "server.max_request_bytes": 4096 });
  op = await makeUser(m, "oper", "operator");
});
afterAll(async () => {
  await m?.stop();
  await searx?.close();
});

/** POSTs Connect JSON to a SkillService method, with the operator's token unless another (or none: null) is given. */
function connectJsonPost(method: string, body: string, token: string | null = op, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(`${m.url}/ongrid.v1.SkillService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...extra },
    body,
  });
}

/** A Connect client of SkillService over HTTP/1.1 sending the operator's token. */
const skillClient = () => createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(op)] }));

/** Polls until the audit log holds `n` rows (rows of refused requests are written when the response closes). */
async function waitForRows(n: number, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await m.audit.flush();
    const rows = await m.audit.list({ limit: 1000 });
    if (rows.length >= n || Date.now() > deadline) return rows;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const lastRow = () => lastAuditRow(m);

describe("one port, three clients", () => {
  it("gives the same ExecuteSkill result over gRPC (grpc-js), Connect JSON over HTTP/1.1 fetch, and a Connect client", async () => {
    const params = { query: "nginx 502 upstream", limit: 2 };

    const grpc = await grpcUnary(
      `127.0.0.1:${m.port}`,
      "/ongrid.v1.SkillService/ExecuteSkill",
      ExecuteSkillRequestSchema,
      ExecuteSkillResponseSchema,
      { key: "web_search", input: { case: "params", value: params } },
      { authorization: `Bearer ${op}` },
    );
    const viaGrpc = toJson(SkillResultSchema, grpc.response.result!) as Record<string, unknown>;

    const res = await connectJsonPost("ExecuteSkill", JSON.stringify({ key: "web_search", params }));
    expect(res.status).toBe(200);
    const viaFetch = ((await res.json()) as { result: Record<string, unknown> }).result;

    const client = skillClient();
    const viaConnect = toJson(SkillResultSchema, (await client.executeSkill({ key: "web_search", input: { case: "params", value: params } })).result!) as Record<string, unknown>;

    const h2client = createClient(SkillService, createGrpcTransport({ baseUrl: m.url, interceptors: [bearer(op)] }));
    const viaConnectGrpc = toJson(SkillResultSchema, (await h2client.executeSkill({ key: "web_search", input: { case: "params", value: params } })).result!) as Record<string, unknown>;

    const strip = (r: Record<string, unknown>) => ({ ...r, durationMs: undefined });
    expect(viaGrpc.success).toBe(true);
    expect((viaGrpc.output as { returned: number }).returned).toBe(2);
    expect((viaGrpc.output as { results: Array<{ title: string }> }).results[0].title).toBe("Result 1 for nginx 502 upstream");
    expect(strip(viaFetch)).toEqual(strip(viaGrpc));
    expect(strip(viaConnect)).toEqual(strip(viaGrpc));
    expect(strip(viaConnectGrpc)).toEqual(strip(viaGrpc));
    expect(searx.queries.at(-1)?.get("format")).toBe("json");
  });

  it("lists skills with their JSON schema and answers NOT_FOUND for an unknown key", async () => {
    const res = await connectJsonPost("ListSkills", "{}");
    const body = (await res.json()) as { skills: Array<{ key: string; scope: string; class: string; jsonSchema: string }> };
    const ws = body.skills.find((s) => s.key === "web_search");
    expect(ws).toMatchObject({ scope: "SKILL_SCOPE_MANAGER", class: "SKILL_CLASS_SAFE" });
    expect(JSON.parse(ws!.jsonSchema).required).toEqual(["query"]);
    const client = skillClient();
    await expect(client.getSkill({ key: "nope" })).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("answers /healthz for load balancers", async () => {
    const res = await fetch(`${m.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok\n");
  });
});

describe("authentication", () => {
  /** A token of the right shape that this manager never issued. */
  const unknownToken = `ogu_0123456789ab_${"A".repeat(42)}Q`;

  /** Sends ExecuteSkill with the given authorization header (none when undefined); returns the error and the row it wrote. */
  async function refused(authorization: string | undefined) {
    await m.audit.flush();
    const before = (await m.audit.list({ limit: 1000 })).length;
    const queries = searx.queries.length;
    const client = createClient(
      SkillService,
      createConnectTransport({
        baseUrl: m.url,
        httpVersion: "1.1",
        interceptors: authorization === undefined ? [] : [(next) => (req) => (req.header.set("authorization", authorization), next(req))],
      }),
    );
    const err = (await client.executeSkill({ key: "web_search", input: { case: "params", value: { query: "who am i" } } }).catch((e) => e)) as ConnectError;
    expect(err).toBeInstanceOf(ConnectError);
    const rows = await waitForRows(before + 1);
    expect(rows.length).toBe(before + 1);
    expect(searx.queries.length, "the skill must not have run").toBe(queries);
    const row = rows.at(-1)!;
    expect(row).toMatchObject({ toolName: "web_search", decision: "deny", callerUserId: "", result: null });
    expect(row.decisionReason).toMatch(/^unauthenticated: /);
    expect(row.error).toMatch(/^unauthenticated: /);
    return { err, row };
  }

  it("refuses a call without a token: UNAUTHENTICATED, audited as deny", async () => {
    const { err, row } = await refused(undefined);
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toBe("no API token was sent; send one in the `authorization` header, as `Bearer` followed by the token (hint: ask an admin for a token (`ongrid tokens create --user NAME`))");
    // The audit row keeps the advice readable: the redactor finds no secret in it (issue 28).
    expect(row.decisionReason).toBe("unauthenticated: no API token was sent; send one in the `authorization` header, as `Bearer` followed by the token");
    // the same for Connect JSON over fetch and for a plain gRPC client
    const res = await connectJsonPost("ListSkills", "{}", null);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe("unauthenticated");
    const grpcErr = await grpcUnary(`127.0.0.1:${m.port}`, "/ongrid.v1.SkillService/ExecuteSkill", ExecuteSkillRequestSchema, ExecuteSkillResponseSchema, {
      key: "web_search",
      input: { case: "params", value: { query: "x" } },
    }).catch((e) => e);
    expect(grpcErr.code).toBe(GrpcStatus.UNAUTHENTICATED);
  });

  it("refuses a malformed token, and an authorization header that is not Bearer", async () => {
    for (const header of ["Bearer not-a-token", `Bearer ${unknownToken.slice(0, -1)}`, `Basic ${Buffer.from("admin:admin").toString("base64")}`]) {
      const { err, row } = await refused(header);
      expect(err.code, header).toBe(Code.Unauthenticated);
      expect(err.rawMessage, header).toMatch(/the API token is malformed/);
      expect(row.decisionReason).toMatch(/malformed/);
    }
  });

  it("refuses a well-formed token that was never issued, without echoing it", async () => {
    const { err, row } = await refused(`Bearer ${unknownToken}`);
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toMatch(/unknown API token \(id 0123456789ab\)/);
    const secret = unknownToken.split("_").at(-1)!;
    expect(err.rawMessage).not.toContain(secret);
    const raw = await m.database.db.execute(sql`select args_json::text as a, error, decision_reason from tool_calls where seq = ${row.seq}`);
    expect(JSON.stringify(raw)).not.toContain(secret);
  });

  it("keeps serving callers with a valid token after the refusals", async () => {
    const res = await connectJsonPost("ExecuteSkill", JSON.stringify({ key: "web_search", params: { query: "still authenticated" } }));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { result: { success: boolean } }).result.success).toBe(true);
    const row = await lastRow();
    expect(row).toMatchObject({ toolName: "web_search", decision: "allow", callerUserId: "oper", callerRole: "operator" });
    expect(row.decisionReason).toBe('safe: "web_search" is safe');
  });
});

describe("bad input gets a clear error, is audited, and the server keeps serving", () => {
  const cases: Array<{ name: string; body: string; code: string; message: RegExp; auditError: RegExp }> = [
    { name: "wrong type", body: JSON.stringify({ key: "web_search", params: { query: "x", limit: "five" } }), code: "invalid_argument", message: /param "limit": must be integer \(rule: type\)/, auditError: /^invalid_argument: .*limit/ },
    { name: "missing required", body: JSON.stringify({ key: "web_search", params: { limit: 2 } }), code: "invalid_argument", message: /param "query": is required \(rule: required\)/, auditError: /query/ },
    { name: "out of range", body: JSON.stringify({ key: "web_search", params: { query: "x", limit: 500 } }), code: "invalid_argument", message: /param "limit": must be <= 50 \(rule: maximum\)/, auditError: /limit/ },
    { name: "bad pattern", body: JSON.stringify({ key: "web_search", params: { query: "x", language: "english" } }), code: "invalid_argument", message: /param "language": must match pattern .* \(rule: pattern\)/, auditError: /language/ },
    { name: "unknown param", body: JSON.stringify({ key: "web_search", params: { query: "x", shell: "rm" } }), code: "invalid_argument", message: /param "shell".*\(rule: additionalProperties\)/, auditError: /shell/ },
    { name: "malformed params_json", body: JSON.stringify({ key: "web_search", paramsJson: "{query: nope" }), code: "invalid_argument", message: /params_json: is not valid JSON/, auditError: /params_json/ },
    { name: "unknown key", body: JSON.stringify({ key: "format_disk", params: {} }), code: "not_found", message: /unknown skill "format_disk"/, auditError: /^not_found/ },
    { name: "malformed request body", body: '{"key": "web_search", "params": {', code: "invalid_argument", message: /./, auditError: /^undecodable request: invalid_argument/ },
    { name: "body over max_request_bytes", body: JSON.stringify({ key: "web_search", params: { query: "x".repeat(5000) } }), code: "resource_exhausted", message: /./, auditError: /^undecodable request: resource_exhausted/ },
  ];

  for (const c of cases) {
    it(`${c.name}: ${c.code}, one audit row`, async () => {
      await m.audit.flush();
      const before = (await m.audit.list({ limit: 1000 })).length;
      const res = await connectJsonPost("ExecuteSkill", c.body);
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code).toBe(c.code);
      expect(body.message).toMatch(c.message);
      const rows = await waitForRows(before + 1);
      expect(rows.length).toBe(before + 1);
      expect(rows.at(-1)!.error).toMatch(c.auditError);
      expect(rows.at(-1)!.result).toBeNull();
      // still serving
      const ok = await connectJsonPost("ExecuteSkill", JSON.stringify({ key: "web_search", params: { query: "still up" } }));
      expect(((await ok.json()) as { result: { success: boolean } }).result.success).toBe(true);
    });
  }

  it("refuses an oversized body from a gRPC client too, and audits it", async () => {
    await m.audit.flush();
    const before = (await m.audit.list({ limit: 1000 })).length;
    const err = await grpcUnary(
      `127.0.0.1:${m.port}`,
      "/ongrid.v1.SkillService/ExecuteSkill",
      ExecuteSkillRequestSchema,
      ExecuteSkillResponseSchema,
      { key: "web_search", input: { case: "params", value: { query: "y".repeat(6000) } } },
      { authorization: `Bearer ${op}` },
    ).catch((e) => e);
    expect(err.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    const rows = await waitForRows(before + 1);
    expect(rows.length).toBe(before + 1);
    expect(rows.at(-1)!.error).toBe("undecodable request: resource_exhausted: the request body exceeds server.max_request_bytes");
  });
});

describe("gRPC unary calls served off the stream (manager/rpc/grpc-unary.ts)", () => {
  /** A hand-made gRPC call (the body as given); resolves with grpc-status and grpc-message. */
  function rawGrpc(body: Buffer, token: string): Promise<{ grpcStatus?: string; grpcMessage?: string }> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(m.url);
      session.on("error", reject);
      const req = session.request({ ":method": "POST", ":path": "/ongrid.v1.SkillService/ExecuteSkill", "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${token}` });
      const out: { grpcStatus?: string; grpcMessage?: string } = {};
      const read = (h: http2.IncomingHttpHeaders) => {
        if (h["grpc-status"] !== undefined) out.grpcStatus = String(h["grpc-status"]);
        if (h["grpc-message"] !== undefined) out.grpcMessage = decodeURIComponent(String(h["grpc-message"]));
      };
      req.on("response", read);
      req.on("trailers", read);
      req.resume();
      req.on("end", () => {
        session.close();
        resolve(out);
      });
      req.on("error", reject);
      req.end(body);
    });
  }

  it("refuses a body that is not an ExecuteSkillRequest with invalid_argument, audits it, and keeps serving", async () => {
    await m.audit.flush();
    const before = (await m.audit.list({ limit: 1000 })).length;
    const junk = Buffer.from([0, 0, 0, 0, 4, 0x0a, 0xff, 0xff, 0xff]); // one frame: field 1, a length that runs past the end
    const res = await rawGrpc(junk, op);
    expect(res.grpcStatus).toBe(String(GrpcStatus.INVALID_ARGUMENT));
    expect(res.grpcMessage).toMatch(/^parse binary: /);
    const rows = await waitForRows(before + 1);
    expect(rows.length).toBe(before + 1);
    expect(rows.at(-1)!.error).toBe("undecodable request: invalid_argument: the request body could not be decoded");
    const ok = await skillClient().executeSkill({ key: "web_search", input: { case: "params", value: { query: "still up" } } });
    expect(ok.result?.success).toBe(true);
  });

  it("serves a call from @grpc/grpc-js and from connect's gRPC client alike, each audited once", async () => {
    await m.audit.flush();
    const before = (await m.audit.list({ limit: 1000 })).length;
    const viaGrpcJs = (await grpcUnary(`127.0.0.1:${m.port}`, "/ongrid.v1.SkillService/ExecuteSkill", ExecuteSkillRequestSchema, ExecuteSkillResponseSchema, { key: "web_search", input: { case: "params", value: { query: "grpc-js" } } }, { authorization: `Bearer ${op}` })).response;
    const viaConnect = await createClient(SkillService, createGrpcTransport({ baseUrl: m.url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${op}`), next(req))] })).executeSkill({ key: "web_search", input: { case: "params", value: { query: "connect" } } });
    expect(viaGrpcJs.result?.success).toBe(true);
    expect(viaConnect.result?.success).toBe(true);
    const rows = await waitForRows(before + 2);
    expect(rows.length).toBe(before + 2);
    expect(rows.slice(-2).map((r) => r.seq)).toEqual([Number(viaGrpcJs.auditSeq), Number(viaConnect.auditSeq)].sort((a, b) => a - b));
  });
});

describe("audit: one row per outcome, redacted, hash-chained", () => {
  it("writes a success row and a skill-error row with the envelope", async () => {
    const client = skillClient();
    const ok = await client.executeSkill({ key: "web_search", input: { case: "params", value: { query: "disk full" } }, sessionId: "s-1" });
    const okRow = await lastRow();
    expect(Number(ok.auditSeq)).toBe(okRow.seq);
    expect(okRow).toMatchObject({ toolName: "web_search", sessionId: "s-1", error: "", decision: "allow", callerUserId: "oper", callerRole: "operator" });
    expect((okRow.result as { success: boolean }).success).toBe(true);

    searx.respond(() => ({ status: 500, body: "oops" }));
    try {
      const bad = await client.executeSkill({ key: "web_search", input: { case: "params", value: { query: "disk full" } } });
      expect(bad.result!.success).toBe(false);
      expect(bad.result!.error).toMatchObject({ code: "upstream_error" });
      expect(bad.result!.error!.hint).not.toBe("");
      const row = await lastRow();
      expect(row.seq).toBe(Number(bad.auditSeq));
      expect(row.error).toMatch(/^upstream_error: search endpoint answered HTTP 500/);
      expect((row.result as { success: boolean }).success).toBe(false);
    } finally {
      searx.respond((q) => ({ status: 200, body: JSON.stringify({ results: [{ title: `echo ${q.get("q")}`, url: "https://x.invalid", content: q.get("q") }] }) }));
    }
  });

  it("redacts every secret kind in the result returned to the caller and in the audit row", async () => {
    const secrets: Record<string, string> = {
      bearer: "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.abcdefghijklmnop",
      authorization: "Authorization: Basic YWRtaW46c3VwZXJzZWNyZXQ=",
      urlPassword: "https://admin:hunter2pass@db.internal:5432/app",
      keyValue: "DB_PASSWORD=correct-horse-battery",
      pem: "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA PRIVATE KEY-----",
      aws: "AKIAIOSFODNN7EXAMPLE",
      github: "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    };
    const leaks = ["c2VjcmV0LXRva2Vu", "YWRtaW46c3VwZXJzZWNyZXQ=", "hunter2pass", "correct-horse-battery", "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo", "AKIAIOSFODNN7EXAMPLE", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"];
    // web_search echoes the query into its result titles, so each secret reaches both args and result
    for (const [kind, secret] of Object.entries(secrets)) {
      const res = await connectJsonPost("ExecuteSkill", JSON.stringify({ key: "web_search", params: { query: `debug ${secret} now` } }));
      const text = await res.text();
      expect(JSON.parse(text).result.success, kind).toBe(true);
      for (const leaked of leaks) expect(text, `${kind} leaked to the caller`).not.toContain(leaked);
      const row = await lastRow();
      const raw = await m.database.db.execute(sql`select args_json::text as a, result_json::text as r from tool_calls where seq = ${row.seq}`);
      const stored = JSON.stringify(raw);
      for (const leaked of leaks) expect(stored, `${kind} leaked to the audit row`).not.toContain(leaked);
      expect(stored, kind).toContain("REDACTED");
    }
  });

  it("keeps secrets out of the rows of refused calls too", async () => {
    const secret = "hunter2-very-secret";
    const bodies = [
      JSON.stringify({ key: "web_search", params: { query: "x", password: secret } }), // unknown param: refused by validation
      JSON.stringify({ key: "web_search", paramsJson: `{"query": "x", "password": "${secret}` }), // malformed JSON text
      JSON.stringify({ key: "no_such_skill", params: { api_key: secret } }), // unknown key
    ];
    for (const body of bodies) {
      await m.audit.flush();
      const before = (await m.audit.list({ limit: 1000 })).length;
      const res = await connectJsonPost("ExecuteSkill", body);
      expect(res.status).toBeGreaterThanOrEqual(400);
      const rows = await waitForRows(before + 1);
      const raw = await m.database.db.execute(sql`select args_json::text as a, error from tool_calls where seq = ${rows.at(-1)!.seq}`);
      expect(JSON.stringify(raw), body).not.toContain("hunter2");
      expect(rows.at(-1)!.error).not.toBe("");
    }
  });

  it("serves a raw JSON schema byte for byte through GetSkill", async () => {
    const raw = '{ "type":"object",\n  "properties": {"targets": {"type":"array","items":{"type":"object","properties":{"host":{"type":"string"}},"required":["host"]}}},\n  "additionalProperties":false }';
    m.registry.register({
      key: "fleet_probe_targets",
      name: "Probe targets",
      description: "Use when several host/port pairs must be checked at once; returns one entry per target.",
      class: "safe",
      scope: "manager",
      rawSchema: raw,
      resultPreview: "{}",
      async execute(_ctx, p) {
        return p;
      },
    });
    const client = skillClient();
    const got = await client.getSkill({ key: "fleet_probe_targets" });
    expect(got.skill!.rawJsonSchema).toBe(raw);
    expect(got.skill!.jsonSchema).toBe(raw);
    const err = await client.executeSkill({ key: "fleet_probe_targets", input: { case: "params", value: { targets: [{ port: 1 }] } } }).catch((e) => e);
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/targets\[0\]\.host.*\(rule: required\)/);
  });

  it("VerifyChain holds, then names the row edited behind its back", async () => {
    const audit = createClient(AuditService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] }));
    const good = await audit.verifyChain({});
    expect(good.ok).toBe(true);
    const head = await lastRow();
    expect(Number(good.rowsChecked)).toBe(head.seq);
    expect(Number(good.lastSeq)).toBe(head.seq);
    expect(good.lastRowHash).toBe(head.rowHash);
    const list = await audit.listToolCalls({ toolName: "web_search", limit: 3 });
    expect(list.toolCalls.length).toBe(3);
    expect(list.toolCalls.every((t) => t.toolName === "web_search")).toBe(true);
    // newest first: the head row leads, and next_before_seq pages towards older rows
    const newest = await audit.listToolCalls({ newestFirst: true, limit: 2 });
    expect(newest.toolCalls.map((t) => Number(t.seq))).toEqual([head.seq, head.seq - 1]);
    expect(Number(newest.nextBeforeSeq)).toBe(head.seq - 1);
    expect(newest.nextAfterSeq).toBe(0n);
    const older = await audit.listToolCalls({ newestFirst: true, beforeSeq: newest.nextBeforeSeq, limit: 2 });
    expect(older.toolCalls.map((t) => Number(t.seq))).toEqual([head.seq - 2, head.seq - 3]);
    const victim = Number(list.toolCalls[1].seq);
    await m.database.db.execute(sql`update tool_calls set args_json = '{"query":"nothing to see"}'::jsonb where seq = ${victim}`);
    const bad = await audit.verifyChain({});
    expect(bad.ok).toBe(false);
    expect(Number(bad.firstBrokenSeq)).toBe(victim);
    expect(bad.reason).not.toBe("");
  });
});

describe("errors never leak internals", () => {
  it("maps a ConnectError code for a manager-scope skill given an edge id", async () => {
    const client = skillClient();
    const err = (await client.executeSkill({ key: "web_search", edgeId: "edge-1", input: { case: "params", value: { query: "x" } } }).catch((e) => e)) as ConnectError;
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/edge_id: must be empty/);
    expect(err.rawMessage).not.toMatch(/at .*\.ts:\d+/);
  });
});
