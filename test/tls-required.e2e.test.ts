/**
 * S7 "plaintext refused when TLS is required": server.require_tls keeps a manager without a
 * certificate from starting; a TLS manager answers plaintext clients (HTTP/1.1, h2c, an edge
 * dialing http://) with a refusal that says why; the edge (--require-tls) and the CLI
 * (server.require_tls / ONGRID_REQUIRE_TLS) refuse an http:// manager URL before sending a token.
 */
import { rmSync } from "node:fs";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootManager, type TestManager } from "./support/manager.ts";
import { spawnEdge, stopChild, waitFor } from "./support/edge.ts";
import { runOngrid } from "./support/cli.ts";
import { makeTestPki, type TestPki } from "./support/tls.ts";

let pki: TestPki;
let m: TestManager;
beforeAll(async () => {
  pki = makeTestPki();
  m = await bootManager({ "server.tls_cert": pki.serverCert, "server.tls_key": pki.serverKey, "server.require_tls": true });
}, 60_000);
afterAll(async () => {
  await m?.stop();
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

/** The same port spoken to in plaintext. */
const plainUrl = () => m.url.replace(/^https:/, "http:");

describe("the manager", () => {
  it("does not start with server.require_tls and no certificate, naming the key and what to set", async () => {
    const r = await runOngrid(["manager", "--port", "0"], { ONGRID_REQUIRE_TLS: "true", ONGRID_DATA_DIR: `${pki.dir}/never-created` });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/server\.require_tls: TLS is required but server\.tls_cert and server\.tls_key are not set \(rule: requires\)/);
    expect(r.stderr).toMatch(/ONGRID_TLS_CERT/);
  });

  it("serves with the certificate; a plaintext HTTP/1.1 client gets a 400 saying TLS is required, and no RPC runs", async () => {
    expect(m.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const before = (await m.audit.list({ afterSeq: 0, limit: 1000 })).length;
    const res = await fetch(`${plainUrl()}/ongrid.v1.SkillService/ListSkills`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${m.adminToken}` }, body: "{}" });
    expect(res.status).toBe(400);
    expect(await res.text()).toBe("plaintext refused: this port serves TLS only; use an https:// URL\n");
    await m.audit.flush();
    expect((await m.audit.list({ afterSeq: 0, limit: 1000 })).length).toBe(before);
  });

  it("warns when it serves plaintext on an address other hosts can reach", async () => {
    let logText = "";
    const sink = new Writable({ write: (c, _e, done) => ((logText += String(c)), done()) });
    const open = await bootManager({ "server.host": "0.0.0.0" }, {}, undefined, { log: pino({ level: "warn" }, sink) });
    await open.stop();
    expect(logText).toMatch(/serving plaintext on an address other hosts can reach/);
    const local = await bootManager({}, {}, undefined, { log: pino({ level: "warn" }, sink) });
    await local.stop();
    expect(logText.match(/serving plaintext/g)).toHaveLength(1);
  });
});

describe("the edge", () => {
  it("with --require-tls refuses an http:// manager URL at start (exit 2), before dialing", async () => {
    const { token } = await m.edges.enroll("edge-strict");
    for (const [args, env] of [
      [["--require-tls"], {}],
      [[], { ONGRID_REQUIRE_TLS: "true" }],
    ] as const) {
      const e = spawnEdge(["--manager", plainUrl(), "--token", token, "--id", "edge-strict", ...args], env);
      const code = await new Promise<number | null>((resolve) => e.child.once("exit", resolve));
      expect(code, e.output()).toBe(2);
      expect(e.output()).toMatch(/--manager: http:\/\/127\.0\.0\.1:\d+ is plaintext and TLS is required \(--require-tls \/ ONGRID_REQUIRE_TLS\); use an https:\/\/ URL/);
      expect(e.output()).not.toContain(token);
    }
    const bad = spawnEdge(["--manager", plainUrl(), "--token", token, "--id", "edge-strict"], { ONGRID_REQUIRE_TLS: "maybe" });
    expect(await new Promise((resolve) => bad.child.once("exit", resolve)), bad.output()).toBe(2);
    expect(bad.output()).toMatch(/ONGRID_REQUIRE_TLS: "maybe" must be true or false/);
    expect(m.hub.session("edge-strict")).toBeUndefined();
  });

  it("dialing http:// to the TLS port is told why it is refused, and never connects", async () => {
    const { token } = await m.edges.enroll("edge-plain");
    const e = spawnEdge(["--manager", plainUrl(), "--token", token, "--id", "edge-plain", "--max-backoff", "500ms"]);
    try {
      expect(await waitFor(() => /plaintext refused: this port serves TLS only/.test(e.output()), 15_000), e.output()).toBe(true);
      expect(e.output()).toMatch(/INADEQUATE_SECURITY/);
      expect(m.hub.session("edge-plain")).toBeUndefined();
    } finally {
      await stopChild(e.child);
    }
  });
});

describe("the CLI", () => {
  it("refuses an http:// --manager when TLS is required, and works over https:// with the CA trusted", async () => {
    const refused = await runOngrid(["skills", "list", "--manager", plainUrl()], { ONGRID_TOKEN: m.adminToken, ONGRID_REQUIRE_TLS: "true" });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--manager: http:\/\/127\.0\.0\.1:\d+ is plaintext and TLS is required \(server\.require_tls \/ ONGRID_REQUIRE_TLS\); use an https:\/\/ URL/);
    const ok = await runOngrid(["skills", "list", "--manager", m.url], { ONGRID_TOKEN: m.adminToken, ONGRID_REQUIRE_TLS: "true", NODE_EXTRA_CA_CERTS: pki.caCert });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/web_search|query_edges/);
  });

  it("refuses a --manager that is not an http(s) URL, naming the flag", async () => {
    const r = await runOngrid(["skills", "list", "--manager", "ftp://127.0.0.1:1"], { ONGRID_TOKEN: m.adminToken });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--manager: must be an http:\/\/ or https:\/\/ URL/);
    const r2 = await runOngrid(["skills", "list", "--manager", "not a url"], { ONGRID_TOKEN: m.adminToken });
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/--manager: "not a url" is not a URL/);
  });
});
