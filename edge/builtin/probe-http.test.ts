import http from "node:http";
import https from "node:https";
import net from "node:net";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../skill/registry.ts";
import { validateParams } from "../../skill/validate.ts";
import { runSkill } from "../../skill/run.ts";
import { lintSkill } from "../../skill/lint.ts";
import { credentialParams, withCredentialValues } from "../../skill/credential.ts";
import { makeTestPki, type TestPki } from "../../test/support/tls.ts";
import probeHttp, { parseCertDate, ResponseParser } from "./probe-http.ts";

const skill = buildSkill(probeHttp);
const log = pino({ level: "silent" });

function run(params: Record<string, unknown>, settings: Record<string, unknown> = {}, signal?: AbortSignal) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 10_000, outputCapBytes: 256 * 1024, log, settings, signal });
}

type Out = Record<string, any>;
const methods: string[] = [];

function handler(req: http.IncomingMessage, res: http.ServerResponse) {
  methods.push(`${req.method} ${req.url}`);
  switch (req.url) {
    case "/":
      res.writeHead(200, { server: "test-server", "content-type": "text/plain", "cache-control": "no-store", "x-internal": "not selected", "content-length": "5" });
      return res.end("hello");
    case "/big":
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(200 * 1024) });
      return res.end(Buffer.alloc(200 * 1024, 0x61));
    case "/chunked":
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("abc");
      setTimeout(() => res.end("defg"), 10);
      return;
    case "/redirect":
      res.writeHead(302, { location: "/" });
      return res.end();
    case "/loop":
      res.writeHead(302, { location: "/loop" });
      return res.end();
    case "/unavailable":
      res.writeHead(503);
      return res.end("down");
    default:
      res.writeHead(404);
      return res.end();
  }
}

async function listening<T extends net.Server>(server: T, host = "127.0.0.1"): Promise<{ server: T; port: number }> {
  await new Promise<void>((r) => server.listen(0, host, r));
  return { server, port: (server.address() as net.AddressInfo).port };
}

function closeServer(server: net.Server): Promise<void> {
  (server as http.Server).closeAllConnections?.();
  return new Promise((r) => server.close(() => r()));
}

let pki: TestPki;
let plain: { server: http.Server; port: number };
let secure: { server: https.Server; port: number };
let secureOther: { server: https.Server; port: number };
let selfSigned: { server: https.Server; port: number };
let sshLike: { server: net.Server; port: number };
let hanging: { server: net.Server; port: number; conns: net.Socket[] };

beforeAll(async () => {
  pki = makeTestPki();
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=selfsigned.test", "-keyout", join(pki.dir, "self.key"), "-out", join(pki.dir, "self.crt")], { stdio: "pipe" });
  const tlsOpts = { key: readFileSync(pki.serverKey), cert: readFileSync(pki.serverCert) };
  plain = await listening(http.createServer(handler));
  secure = await listening(https.createServer(tlsOpts, handler));
  // 127.0.0.2 is loopback too on Linux, but the certificate only names 127.0.0.1 and localhost.
  secureOther = await listening(https.createServer(tlsOpts, handler), "127.0.0.2");
  selfSigned = await listening(https.createServer({ key: readFileSync(join(pki.dir, "self.key")), cert: readFileSync(join(pki.dir, "self.crt")) }, handler));
  sshLike = await listening(net.createServer((s) => s.on("error", () => {}).resume().write("SSH-2.0-OpenSSH_9.2\r\n")));
  // Reads the request and never answers.
  const conns: net.Socket[] = [];
  hanging = { ...(await listening(net.createServer((s) => conns.push(s.on("error", () => {}).resume())))), conns };
});

afterAll(async () => {
  for (const c of hanging.conns) c.destroy();
  await Promise.all([plain, secure, secureOther, selfSigned, sshLike, hanging].map((s) => closeServer(s.server)));
});

describe("probe_http", () => {
  it("reports status, selected headers, timings and the body size of a plain HTTP GET", async () => {
    const r = await run({ url: `http://127.0.0.1:${plain.port}/` });
    expect(r.success).toBe(true);
    const out = r.output as Out;
    expect(out).toMatchObject({
      url: `http://127.0.0.1:${plain.port}/`,
      status: 200,
      status_text: "OK",
      http_version: "1.1",
      ok: true,
      address: "127.0.0.1",
      headers: { server: "test-server", "content-type": "text/plain", "cache-control": "no-store", "content-length": "5" },
      body_bytes: 5,
      body_truncated: false,
    });
    expect(Object.keys(out.headers).sort()).toEqual(["cache-control", "content-length", "content-type", "server"]);
    expect(out).not.toHaveProperty("tls");
    expect(out).not.toHaveProperty("body");
    expect(out.latency_ms).toBeGreaterThanOrEqual(out.ttfb_ms);
    expect(out.timings).toEqual({ dns_ms: expect.any(Number), connect_ms: expect.any(Number) });
  });

  it("reads at most 64 KiB of a body and undoes chunked framing", async () => {
    const big = await run({ url: `http://127.0.0.1:${plain.port}/big` });
    expect(big.output).toMatchObject({ status: 200, body_bytes: 65536, body_truncated: true });
    const chunked = await run({ url: `http://127.0.0.1:${plain.port}/chunked` });
    expect(chunked.output).toMatchObject({ status: 200, body_bytes: 7, body_truncated: false });
  });

  it("sends HEAD when asked and reads no body", async () => {
    const r = await run({ url: `http://127.0.0.1:${plain.port}/`, method: "HEAD" });
    expect(r.output).toMatchObject({ status: 200, body_bytes: 0, headers: { "content-length": "5" } });
    expect(methods).toContain("HEAD /");
  });

  it("reports a redirect as is, or follows it to the final response when asked", async () => {
    const url = `http://127.0.0.1:${plain.port}/redirect`;
    const first = await run({ url });
    expect(first.output).toMatchObject({ status: 302, ok: true, headers: { location: "/" } });
    expect(first.output).not.toHaveProperty("final_url");
    const followed = await run({ url, follow_redirects: true });
    expect(followed.output).toMatchObject({ url, final_url: `http://127.0.0.1:${plain.port}/`, status: 200, redirects: [{ url, status: 302 }], body_bytes: 5 });
  });

  it("fails with too_many_redirects on a redirect loop", async () => {
    const r = await run({ url: `http://127.0.0.1:${plain.port}/loop`, follow_redirects: true });
    expect(r.error).toMatchObject({ code: "too_many_redirects" });
    expect(r.error!.hint).toMatch(/follow_redirects=false/);
  });

  it("judges ok by expect_status when given, else by 2xx/3xx", async () => {
    const down = await run({ url: `http://127.0.0.1:${plain.port}/unavailable` });
    expect(down.success).toBe(true);
    expect(down.output).toMatchObject({ status: 503, ok: false });
    const expected = await run({ url: `http://127.0.0.1:${plain.port}/unavailable`, expect_status: 503 });
    expect(expected.output).toMatchObject({ status: 503, ok: true, expected_status: 503 });
    const mismatch = await run({ url: `http://127.0.0.1:${plain.port}/`, expect_status: 204 });
    expect(mismatch.output).toMatchObject({ status: 200, ok: false, expected_status: 204 });
  });

  it("reports the certificate of an HTTPS server and that this host does not trust its private CA", async () => {
    const r = await run({ url: `https://127.0.0.1:${secure.port}/` });
    expect(r.success).toBe(true);
    const out = r.output as Out;
    expect(out.status).toBe(200);
    expect(out.tls).toMatchObject({
      protocol: expect.stringMatching(/^TLSv1\.[23]$/),
      cipher: expect.any(String),
      subject: "CN=127.0.0.1",
      issuer: "CN=ongrid test CA",
      san: ["IP Address:127.0.0.1", "DNS:localhost"],
      authorized: false,
      authorization_error: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    });
    // The test certificate is valid for two days from now.
    expect(out.tls.days_left).toBeGreaterThanOrEqual(1);
    expect(out.tls.days_left).toBeLessThanOrEqual(2);
    expect(Date.parse(out.tls.valid_to)).toBeGreaterThan(Date.now());
    expect(out.timings.tls_ms).toEqual(expect.any(Number));
  });

  it("trusts a private CA from skills.probe_http.ca_file and still checks the host name", async () => {
    const trusted = await run({ url: `https://127.0.0.1:${secure.port}/` }, { ca_file: pki.caCert });
    expect((trusted.output as Out).tls).toMatchObject({ authorized: true, authorization_error: null });
    const wrongName = await run({ url: `https://127.0.0.2:${secureOther.port}/` }, { ca_file: pki.caCert });
    expect(wrongName.success).toBe(true);
    expect((wrongName.output as Out).tls).toMatchObject({ authorized: false, authorization_error: "ERR_TLS_CERT_ALTNAME_INVALID" });
    const missing = await run({ url: `https://127.0.0.1:${secure.port}/` }, { ca_file: join(pki.dir, "nope.pem") });
    expect(missing.error).toMatchObject({ code: "not_configured" });
    expect(missing.error!.hint).toMatch(/skills\.probe_http\.ca_file/);
  });

  it("probes a self-signed server and reports it as not authorized instead of failing", async () => {
    const r = await run({ url: `https://127.0.0.1:${selfSigned.port}/` });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({
      status: 200,
      body_bytes: 5,
      tls: { subject: "CN=selfsigned.test", issuer: "CN=selfsigned.test", authorized: false, authorization_error: "DEPTH_ZERO_SELF_SIGNED_CERT", authorization_detail: "the certificate is self-signed" },
    });
  });

  it("fails with tls_failed when the port does not speak TLS", async () => {
    const r = await run({ url: `https://127.0.0.1:${plain.port}/` });
    expect(r.error).toMatchObject({ code: "tls_failed" });
    expect(r.error!.hint).toMatch(/http:\/\//);
  });

  it("fails with bad_response when the port speaks another protocol", async () => {
    const r = await run({ url: `http://127.0.0.1:${sshLike.port}/` });
    expect(r.error).toMatchObject({ code: "bad_response" });
    expect(r.error!.message).toContain("SSH-2.0-OpenSSH_9.2");
  });

  it("fails with connection_refused, dns_failed and timeout, each with a hint", async () => {
    const closed = await listening(net.createServer());
    await closeServer(closed.server);
    const refused = await run({ url: `http://127.0.0.1:${closed.port}/` });
    expect(refused.error).toMatchObject({ code: "connection_refused" });

    const dns = await run({ url: "http://no-such-host.invalid/" });
    expect(dns.error).toMatchObject({ code: "dns_failed" });

    const slow = await run({ url: `http://127.0.0.1:${hanging.port}/`, timeout: "300ms" });
    expect(slow.error).toMatchObject({ code: "timeout", message: `the response from 127.0.0.1:${hanging.port} did not complete within 300ms` });
    expect(slow.error!.hint).toMatch(/longer timeout/);
  });

  it("closes its connection when the call is cancelled", async () => {
    const controller = new AbortController();
    const before = hanging.conns.length;
    const pending = run({ url: `http://127.0.0.1:${hanging.port}/`, timeout: "10s" }, {}, controller.signal);
    await expect.poll(() => hanging.conns.length).toBe(before + 1);
    const closed = new Promise<void>((r) => hanging.conns[before].once("close", () => r()));
    controller.abort();
    expect((await pending).error).toMatchObject({ code: "cancelled" });
    await closed;
  });

  it("refuses URLs that are not http(s) or carry credentials", async () => {
    expect(() => validateParams(skill, { url: "ftp://example.com/" })).toThrow(/param "url"/);
    const creds = await run({ url: `http://user:pw@127.0.0.1:${plain.port}/` });
    expect(creds.error).toMatchObject({ code: "invalid_argument" });
    expect(creds.error!.message).toMatch(/credentials/);
  });

  it("passes the new-tool checklist with no error", () => {
    expect(lintSkill(probeHttp).filter((f) => f.severity === "error")).toEqual([]);
  });
});

describe("ResponseParser", () => {
  it("skips interim responses and decodes a chunked body fed one byte at a time", () => {
    const wire = Buffer.from(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n" +
        "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
    );
    const p = new ResponseParser("GET");
    let done = false;
    for (const byte of wire) done = p.push(Buffer.from([byte]));
    expect(done).toBe(true);
    expect(p.head).toMatchObject({ status: 200, statusText: "OK", version: "1.1" });
    expect(p.head!.headers.get("set-cookie")).toBe("a=1, b=2");
    expect(p.bodyBytes).toBe(11);
  });

  it("reads a body without length to the end of the connection and flags a short body", () => {
    const eof = new ResponseParser("GET");
    eof.push(Buffer.from("HTTP/1.0 200 OK\r\n\r\nabc"));
    expect(eof.done).toBe(false);
    eof.end();
    expect(eof.bodyBytes).toBe(3);
    expect(eof.bodyIncomplete).toBe(false);
    const short = new ResponseParser("GET");
    short.push(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
    short.end();
    expect(short.bodyIncomplete).toBe(true);
    expect(() => new ResponseParser("GET").push(Buffer.from("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"))).toThrow(/invalid chunk size/);
  });
});

describe("parseCertDate", () => {
  it("reads OpenSSL's date format, padded days included", () => {
    expect(parseCertDate("Dec 30 16:18:44 2026 GMT")?.toISOString()).toBe("2026-12-30T16:18:44.000Z");
    expect(parseCertDate("Jan  5 01:02:03 2027 GMT")?.toISOString()).toBe("2027-01-05T01:02:03.000Z");
    expect(parseCertDate("not a date")).toBeNull();
  });
});

describe("probe_http with a credential", () => {
  // The manager injects the credential's VALUE before the call reaches the edge; the edge validates
  // the call as injected (withCredentialValues) and runs it.
  const injected = withCredentialValues(skill);
  const runInjected = (params: Record<string, unknown>) =>
    runSkill(skill, validateParams(injected, params), { callId: "t", timeoutMs: 10_000, outputCapBytes: 256 * 1024, log, settings: {} });

  const seen: Array<{ host: string; path: string; authorization: string | undefined }> = [];
  let one: { server: http.Server; port: number };
  let two: { server: http.Server; port: number };
  const recorder = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const authorization = req.headers.authorization;
    seen.push({ host: req.socket.localAddress ?? "", path: req.url ?? "", authorization });
    switch (req.url) {
      case "/reflect": // a careless server that echoes what it received
        res.writeHead(200, `OK ${authorization ?? ""}`, { server: `echo ${authorization ?? ""}`, location: `/next?auth=${encodeURIComponent(authorization ?? "")}` });
        return res.end();
      case "/same":
        res.writeHead(302, { location: "/private" });
        return res.end();
      case "/cross":
        res.writeHead(302, { location: `http://127.0.0.2:${two.port}/private` });
        return res.end();
      default:
        res.writeHead(authorization ? 200 : 401, authorization ? {} : { "www-authenticate": "Bearer" });
        return res.end();
    }
  };
  beforeAll(async () => {
    one = await listening(http.createServer(recorder));
    two = await listening(http.createServer(recorder), "127.0.0.2");
  });
  afterAll(async () => {
    await Promise.all([one, two].map((s) => closeServer(s.server)));
  });
  const last = () => seen[seen.length - 1]!;

  it("sends the value as a Bearer token and never shows it", async () => {
    const token = "tok-Sup3rSecret.value_42";
    const r = await runInjected({ url: `http://127.0.0.1:${one.port}/private`, credential: token });
    expect(r.success).toBe(true);
    expect(last().authorization).toBe(`Bearer ${token}`);
    expect(r.output).toMatchObject({ status: 200, ok: true, auth_scheme: "bearer" });
    expect(JSON.stringify(r)).not.toContain(token);
    expect(JSON.stringify(r)).not.toMatch(/authorization/i);

    const anonymous = await run({ url: `http://127.0.0.1:${one.port}/private` });
    expect(last().authorization).toBeUndefined();
    expect(anonymous.output).toMatchObject({ status: 401, ok: false });
    expect(anonymous.output).not.toHaveProperty("auth_scheme");
  });

  it("sends user:password base64-encoded for basic, and never shows either form", async () => {
    const value = "alice:pa55:w0rd";
    const encoded = Buffer.from(value).toString("base64");
    const r = await runInjected({ url: `http://127.0.0.1:${one.port}/private`, credential: value, auth_scheme: "basic" });
    expect(last().authorization).toBe(`Basic ${encoded}`);
    expect(r.output).toMatchObject({ status: 200, auth_scheme: "basic" });
    const text = JSON.stringify(r);
    for (const trace of [value, encoded, "pa55"]) expect(text).not.toContain(trace);
  });

  it("scrubs a server's echo of the credential from the output", async () => {
    const token = "echoed-Secret-9f8e7d";
    const bearer = await runInjected({ url: `http://127.0.0.1:${one.port}/reflect`, credential: token });
    expect(last().authorization).toBe(`Bearer ${token}`);
    expect(bearer.output).toMatchObject({ status_text: "OK Bearer [credential:redacted]", headers: { server: "echo Bearer [credential:redacted]", location: "/next?auth=Bearer%20[credential:redacted]" } });
    expect(JSON.stringify(bearer)).not.toContain(token);

    const value = "bob:echo-me-not";
    const basic = await runInjected({ url: `http://127.0.0.1:${one.port}/reflect`, credential: value, auth_scheme: "basic" });
    const text = JSON.stringify(basic);
    expect(text).not.toContain(value);
    expect(text).not.toContain(Buffer.from(value).toString("base64"));
    expect(text).toContain("[credential:redacted]");
  });

  it("keeps the credential on same-origin redirects and drops it on the way to another origin", async () => {
    const token = "redirect-Secret-1234";
    const same = await runInjected({ url: `http://127.0.0.1:${one.port}/same`, credential: token, follow_redirects: true });
    expect(seen.slice(-2)).toEqual([
      { host: "127.0.0.1", path: "/same", authorization: `Bearer ${token}` },
      { host: "127.0.0.1", path: "/private", authorization: `Bearer ${token}` },
    ]);
    expect(same.output).toMatchObject({ status: 200 });
    expect(same.output).not.toHaveProperty("auth_dropped_on_redirect");

    const cross = await runInjected({ url: `http://127.0.0.1:${one.port}/cross`, credential: token, follow_redirects: true });
    expect(seen.slice(-2)).toEqual([
      { host: "127.0.0.1", path: "/cross", authorization: `Bearer ${token}` },
      { host: "127.0.0.2", path: "/private", authorization: undefined },
    ]);
    expect(cross.output).toMatchObject({ status: 401, auth_scheme: "bearer", auth_dropped_on_redirect: true });
    expect(JSON.stringify(cross)).not.toContain(token);
  });

  it("refuses a basic credential without a colon and a value with a line break, quoting neither", async () => {
    const before = seen.length;
    const noColon = await runInjected({ url: `http://127.0.0.1:${one.port}/private`, credential: "justAToken-xyz", auth_scheme: "basic" });
    expect(noColon.error).toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/"user:password"/) });
    expect(JSON.stringify(noColon)).not.toContain("justAToken-xyz");
    const injection = await runInjected({ url: `http://127.0.0.1:${one.port}/private`, credential: "tok\r\nX-Evil: 1" });
    expect(injection.error).toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/line break/) });
    expect(JSON.stringify(injection)).not.toContain("X-Evil");
    expect(seen.length).toBe(before);
  });

  it("takes a stored credential's name from the model, never a value", () => {
    expect(skill.jsonSchema.properties).toMatchObject({
      credential: { type: "string", pattern: "^[a-z][a-z0-9_.-]{0,63}$", description: expect.stringMatching(/Authorization header.*\(the name of a stored credential; its value is injected when the call runs\)$/) },
      auth_scheme: { type: "string", enum: ["bearer", "basic"], default: "bearer" },
    });
    expect(validateParams(skill, { url: "http://x.test/", credential: "prom.token" })).toMatchObject({ credential: "prom.token", auth_scheme: "bearer" });
    expect(() => validateParams(skill, { url: "http://x.test/", credential: "alice:pa55" })).toThrow(/param "credential": must match pattern/);
    expect(credentialParams(skill)).toEqual(["credential"]);
  });
});
