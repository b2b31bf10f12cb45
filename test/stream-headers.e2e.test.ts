/**
 * Issue 28: a server stream says it is live at once. Raw HTTP clients (node:http, node:http2)
 * open ApprovalService/Watch on a manager with no approval pending, in every protocol the port
 * serves (Connect streaming, gRPC, gRPC-Web) over HTTP/1.1 and HTTP/2, cleartext and TLS: the
 * response headers arrive while the stream has no message to send; a change made afterwards
 * still arrives on the same stream. A stream that fails keeps its status where each protocol
 * puts it (gRPC trailers, the gRPC-Web trailer frame, the Connect end-of-stream message).
 */
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootManager, type TestManager } from "./support/manager.ts";
import { grpcFrame } from "./support/grpc-frame.ts";
import { makeTestPki, type TestPki } from "./support/tls.ts";

type Protocol = "connect" | "grpc" | "grpc-web";
type Version = "1.1" | "2";

const CONTENT_TYPE: Record<Protocol, string> = { connect: "application/connect+proto", grpc: "application/grpc", "grpc-web": "application/grpc-web+proto" };
const WATCH = "/ongrid.v1.ApprovalService/Watch";

/** WatchRequest{id} in protobuf: field 1, length-delimited. */
function watchRequest(id = ""): Buffer {
  if (!id) return Buffer.alloc(0);
  const bytes = Buffer.from(id);
  return Buffer.concat([Buffer.from([0x0a, bytes.length]), bytes]);
}

interface Opened {
  status: number;
  headers: Record<string, string>;
  /** Body bytes received when the headers arrived. */
  bodyBytesAtHeaders: number;
  /** Resolves with the whole body and the trailers once the response ends. */
  done: Promise<{ body: Buffer; trailers: Record<string, string> }>;
  /** Resolves once the body holds at least `n` bytes. */
  bodyAtLeast(n: number): Promise<Buffer>;
  cancel(): void;
}

function flat(h: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).filter(([k]) => typeof k === "string").map(([k, v]) => [k, String(v)]));
}

/** Opens one streaming call with a raw client; resolves when the response headers arrive. */
function open(m: TestManager, ca: Buffer | undefined, protocol: Protocol, version: Version, path: string, message: Buffer, token: string): Promise<Opened> {
  const body = grpcFrame(message);
  const headers = { "content-type": CONTENT_TYPE[protocol], authorization: `Bearer ${token}`, ...(protocol === "grpc" ? { te: "trailers" } : {}), ...(protocol === "connect" ? { "connect-protocol-version": "1" } : {}) };
  const chunks: Buffer[] = [];
  const waiters: Array<() => void> = [];
  const onData = (c: Buffer) => {
    chunks.push(c);
    for (const w of waiters.splice(0)) w();
  };
  const bodyAtLeast = async (n: number) => {
    while (Buffer.concat(chunks).length < n) await new Promise<void>((r) => waiters.push(r));
    return Buffer.concat(chunks);
  };
  return new Promise((resolve, reject) => {
    if (version === "2") {
      const session = http2.connect(m.url, ca ? { ca } : {});
      session.on("error", reject);
      const req = session.request({ ":method": "POST", ":path": path, ...headers });
      let trailers: Record<string, string> = {};
      req.on("trailers", (t) => (trailers = flat(t)));
      req.on("data", onData);
      req.on("error", () => undefined);
      const done = new Promise<{ body: Buffer; trailers: Record<string, string> }>((res) => req.on("end", () => (session.close(), res({ body: Buffer.concat(chunks), trailers }))));
      req.on("response", (h) => {
        const bodyBytesAtHeaders = Buffer.concat(chunks).length;
        resolve({ status: Number(h[":status"]), headers: flat(h), bodyBytesAtHeaders, done, bodyAtLeast, cancel: () => (req.close(http2.constants.NGHTTP2_CANCEL), session.close()) });
      });
      req.end(body);
    } else {
      const lib = m.url.startsWith("https:") ? https : http;
      const req = lib.request(`${m.url}${path}`, { method: "POST", headers, agent: false, ...(ca ? { ca } : {}) });
      req.on("error", reject);
      req.on("response", (res) => {
        res.on("data", onData);
        const done = new Promise<{ body: Buffer; trailers: Record<string, string> }>((r) => res.on("end", () => r({ body: Buffer.concat(chunks), trailers: flat(res.trailers) })));
        resolve({ status: res.statusCode!, headers: flat(res.headers), bodyBytesAtHeaders: Buffer.concat(chunks).length, done, bodyAtLeast, cancel: () => req.destroy() });
      });
      req.end(body);
    }
  });
}

/** The enveloped frames of a body: flags and payload. */
function frames(body: Buffer): Array<{ flags: number; payload: Buffer }> {
  const out: Array<{ flags: number; payload: Buffer }> = [];
  for (let at = 0; at + 5 <= body.length; ) {
    const len = body.readUInt32BE(at + 1);
    out.push({ flags: body[at]!, payload: body.subarray(at + 5, at + 5 + len) });
    at += 5 + len;
  }
  return out;
}

/** The status a finished call carries, read where its protocol puts it. */
function statusOf(protocol: Protocol, status: number, headers: Record<string, string>, body: Buffer, trailers: Record<string, string>): string {
  expect(status).toBe(200);
  if (protocol === "grpc") return trailers["grpc-status"] ?? headers["grpc-status"] ?? "none";
  const last = frames(body).at(-1);
  if (protocol === "grpc-web") {
    expect(last!.flags & 0x80).toBe(0x80);
    return /grpc-status: *(\d+)/i.exec(last!.payload.toString())?.[1] ?? "none";
  }
  expect(last!.flags & 0x02).toBe(0x02);
  return (JSON.parse(last!.payload.toString()) as { error?: { code?: string } }).error?.code ?? "ok";
}

const CASES: Array<[Protocol, Version]> = [
  ["connect", "1.1"],
  ["connect", "2"],
  ["grpc", "2"],
  ["grpc-web", "1.1"],
  ["grpc-web", "2"],
];

describe.each([
  ["cleartext", false],
  ["TLS", true],
])("%s", (_name, tls) => {
  let m: TestManager;
  let pki: TestPki | undefined;
  beforeAll(async () => {
    pki = tls ? makeTestPki() : undefined;
    m = await bootManager(pki ? { "server.tls_cert": pki.serverCert, "server.tls_key": pki.serverKey } : {});
  });
  afterAll(async () => {
    await m?.stop();
    if (pki) rmSync(pki.dir, { recursive: true, force: true });
  });

  it.each(CASES)("Watch over %s (HTTP/%s) sends its headers before any message, then the change", async (protocol, version) => {
    const call = await open(m, pki?.caPem, protocol, version, WATCH, watchRequest(), m.adminToken);
    try {
      expect(call.status).toBe(200);
      expect(call.headers["content-type"]?.startsWith(CONTENT_TYPE[protocol])).toBe(true);
      expect(call.bodyBytesAtHeaders).toBe(0);
      // A request parked now reaches the stream that is already open.
      const row = await m.approvals.create({ skillKey: "exec", edgeId: "web-1", edgeLabels: {}, params: { command: "true" }, effectiveClass: "mutating", requester: { userId: "admin", role: "admin" }, sessionId: "", timeoutMs: 30_000, requiredApprovals: 1, ttlMs: 600_000 });
      const body = await call.bodyAtLeast(5 + 1);
      const first = frames(body)[0]!;
      expect(first.flags).toBe(0);
      expect(first.payload.toString("latin1")).toContain(row.id);
    } finally {
      call.cancel();
    }
  });

  it.each(CASES)("Watch over %s (HTTP/%s) of an unknown approval still ends with not_found", async (protocol, version) => {
    const call = await open(m, pki?.caPem, protocol, version, WATCH, watchRequest("apr_0000000000000000"), m.adminToken);
    const { body, trailers } = await call.done;
    expect(statusOf(protocol, call.status, call.headers, body, trailers)).toBe(protocol === "connect" ? "not_found" : "5");
  });

  it.each(CASES)("Watch over %s (HTTP/%s) without a token is still unauthenticated", async (protocol, version) => {
    const call = await open(m, pki?.caPem, protocol, version, WATCH, watchRequest(), "ogt_not-a-token");
    const { body, trailers } = await call.done;
    expect(statusOf(protocol, call.status, call.headers, body, trailers)).toBe(protocol === "connect" ? "unauthenticated" : "16");
  });
});
