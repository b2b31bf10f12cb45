/** B1 beyond cleartext: TLS with ALPN for HTTP/2 and HTTP/1.1, buf curl over every protocol, output truncation on the wire. */
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startFakeSearx, type FakeSearx } from "./support/searxng.ts";
import { makeTestPki, type TestPki } from "./support/tls.ts";
import { ROOT } from "./support/cli.ts";
import { bearer } from "./support/auth.ts";

const exec = promisify(execFile);
let searx: FakeSearx;
beforeAll(async () => {
  searx = await startFakeSearx();
});
afterAll(() => searx?.close());

describe("TLS", () => {
  let pki: TestPki;
  let m: TestManager;
  beforeAll(async () => {
    pki = makeTestPki();
    m = await bootManager({ "server.tls_cert": pki.serverCert, "server.tls_key": pki.serverKey, "skills.web_search.url": searx.url });
  });
  afterAll(async () => {
    await m?.stop();
    if (pki) rmSync(pki.dir, { recursive: true, force: true });
  });

  it("serves https and answers gRPC over HTTP/2 and Connect over HTTP/1.1 and HTTP/2", async () => {
    expect(m.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const nodeOptions = { ca: pki.caPem };
    for (const transport of [
      createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", nodeOptions, interceptors: [bearer(m.adminToken)] }),
      createConnectTransport({ baseUrl: m.url, httpVersion: "2", nodeOptions, interceptors: [bearer(m.adminToken)] }),
      createGrpcTransport({ baseUrl: m.url, nodeOptions, interceptors: [bearer(m.adminToken)] }),
    ]) {
      const res = await createClient(SkillService, transport).listSkills({});
      expect(res.skills.map((s) => s.key)).toContain("web_search");
    }
    const client = new grpc.Client(`127.0.0.1:${m.port}`, grpc.credentials.createSsl(pki.caPem));
    await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 5000, (e) => (e ? reject(e) : resolve())));
    client.close();
  });

  it("refuses a client that does not trust the certificate", async () => {
    // a valid token, so that the only thing wrong is the trust in the certificate
    const client = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] }));
    await expect(client.listSkills({})).rejects.toThrow(/certificate|self[- ]signed|unable to verify/i);
  });
});

describe("cleartext", () => {
  let m: TestManager;
  beforeAll(async () => {
    m = await bootManager({ "skills.web_search.url": searx.url, "skills.output_cap_bytes": 400 });
  });
  afterAll(() => m?.stop());

  it("answers buf curl over gRPC (h2c), gRPC-Web and Connect", async () => {
    const buf = `${ROOT}/node_modules/.bin/buf`;
    const url = `${m.url}/ongrid.v1.SkillService/ExecuteSkill`;
    const body = JSON.stringify({ key: "web_search", params: { query: "buf curl", limit: 1 } });
    const outputs: unknown[] = [];
    for (const proto of [["--protocol", "grpc", "--http2-prior-knowledge"], ["--protocol", "grpcweb"], ["--protocol", "connect"]]) {
      const { stdout } = await exec(buf, ["curl", "--schema", "proto", ...proto, "-H", `authorization: Bearer ${m.adminToken}`, "-d", body, url], { cwd: ROOT });
      const res = JSON.parse(stdout) as { result: { success: boolean; output: { results: Array<{ title: string }> } } };
      expect(res.result.success).toBe(true);
      outputs.push(res.result.output);
    }
    expect(outputs[0]).toEqual({ query: "buf curl", returned: 1, results: [{ title: "Result 1 for buf curl", url: "https://example.invalid/1", snippet: "snippet 1", engine: "fake" }] });
    expect(outputs[1]).toEqual(outputs[0]);
    expect(outputs[2]).toEqual(outputs[0]);
  });

  it("truncates an output over skills.output_cap_bytes with a marker, for the caller and the audit row", async () => {
    const client = createClient(SkillService, createGrpcWebTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(m.adminToken)] }));
    const res = await client.executeSkill({ key: "web_search", input: { case: "params", value: { query: "long answer ".repeat(20), limit: 3 } } });
    expect(res.result!.truncated).toBe(true);
    const out = res.result!.output!.kind;
    expect(out.case).toBe("stringValue");
    expect(String(out.value)).toMatch(/…\[truncated: \d+ of \d+ bytes shown\]$/);
    expect(Buffer.byteLength(JSON.stringify(out.value))).toBeLessThanOrEqual(400);
    await m.audit.flush();
    const row = (await m.audit.list({ limit: 1000 })).at(-1)!;
    expect((row.result as { truncated: boolean }).truncated).toBe(true);
  });
});
