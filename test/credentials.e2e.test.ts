/** A credential through a real manager and compiled edge: the skill receives the value; audit, logs and answers see only the name. */
import http from "node:http";
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toJsonString } from "@bufbuild/protobuf";
import { sql } from "drizzle-orm";
import { SkillService, ExecuteSkillResponseSchema } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { CredentialService } from "../proto/gen/ongrid/v1/credential_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";

let m: TestManager;
let edge: TestEdge;
let server: http.Server;
const seen: string[] = [];
const secret = `s3cr3t-${randomBytes(12).toString("hex")}`;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(String(req.headers.authorization ?? ""));
    // Echo the header back: the value must still not reach the caller or the audit log.
    res.writeHead(req.headers.authorization === `Bearer ${secret}` ? 200 : 401, { "content-type": "text/plain" });
    res.end(`you sent ${req.headers.authorization}`);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  m = await bootManager({ "credentials.key": randomBytes(32).toString("base64") });
  edge = await startEdge(m, "cred-edge");
}, 60_000);
afterAll(async () => {
  await edge?.stop();
  await m?.stop();
  server?.close();
});

it("injects a stored credential into probe_http on the edge and never shows its value", async () => {
  const admin = createClient(CredentialService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] }));
  const put = await admin.putCredential({ name: "probe_token", value: secret, description: "test" });
  expect(JSON.stringify(put, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(secret);
  expect(JSON.stringify(await admin.listCredentials({}), (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(secret);

  const skills = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m, "olga", "operator"))] }));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ready`;
  const res = await skills.executeSkill({ key: "probe_http", edgeId: "cred-edge", input: { case: "params", value: { url, credential: "probe_token" } as never } });
  expect(seen).toContain(`Bearer ${secret}`); // the skill received the value
  expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
  const answer = toJsonString(ExecuteSkillResponseSchema, res);
  expect(answer).toContain("200");
  expect(answer).not.toContain(secret);

  await m.audit.flush();
  const raw = await m.database.db.execute(sql`select args_json::text as a, result_json::text as r, error from tool_calls`);
  const rows = JSON.stringify((raw as unknown as { rows?: unknown[] }).rows ?? raw);
  expect(rows).toContain("/ready");
  expect(rows).not.toContain(secret);
  expect(edge.output()).not.toContain(secret);

  // An unknown credential is refused before anything runs, and audited.
  const before = seen.length;
  await expect(skills.executeSkill({ key: "probe_http", edgeId: "cred-edge", input: { case: "params", value: { url, credential: "nope" } as never } })).rejects.toThrow(/credential "nope" does not exist/);
  expect(seen.length).toBe(before);
});
