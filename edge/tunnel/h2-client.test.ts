import http2 from "node:http2";
import net from "node:net";
import { readFileSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalClientRequest } from "@connectrpc/connect/protocol";
import { makeTestPki, type TestPki } from "../../test/support/tls.ts";
import { createH2Client, errorFromResetCode } from "./h2-client.ts";

type Handler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

const servers: Array<http2.Http2Server | http2.Http2SecureServer> = [];
const openSessions: http2.ServerHttp2Session[] = [];
afterEach(async () => {
  for (const s of openSessions.splice(0)) s.destroy();
  for (const s of servers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

async function serve(handler: Handler, tls?: TestPki): Promise<{ url: string; sessions: http2.ServerHttp2Session[] }> {
  const server = tls ? http2.createSecureServer({ cert: readFileSync(tls.serverCert), key: readFileSync(tls.serverKey) }) : http2.createServer();
  const sessions: http2.ServerHttp2Session[] = [];
  server.on("session", (s) => {
    sessions.push(s);
    openSessions.push(s);
    s.on("error", () => {});
  });
  server.on("stream", handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return { url: `${tls ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}`, sessions };
}

/** A request body that never ends (the tunnel's outgoing side). */
async function* forever(): AsyncIterable<Uint8Array> {
  await new Promise(() => {});
}

function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

const u32 = (...v: number[]) => Buffer.concat(v.map((x) => Buffer.from([x >>> 24, (x >>> 16) & 255, (x >>> 8) & 255, x & 255])));

const rawServers: net.Server[] = [];
afterEach(async () => {
  for (const s of rawServers.splice(0)) await new Promise<void>((r) => s.close(() => r()));
});

/** A scripted HTTP/2 server: SETTINGS, then `frames` once the client's first bytes arrive; `drop` then closes the socket. */
async function rawServer(frames: Buffer[], drop = false): Promise<string> {
  const server = net.createServer((sock) => {
    sock.on("error", () => {});
    sock.write(frame(4, 0, 0));
    sock.once("data", () => {
      sock.write(Buffer.concat(frames));
      if (drop) setTimeout(() => sock.destroy(), 50);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  rawServers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function* chunks(...parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
}

function request(url: string, body?: AsyncIterable<Uint8Array>, signal?: AbortSignal): UniversalClientRequest {
  return { url: `${url}/svc/Method`, method: "POST", header: new Headers({ "content-type": "application/grpc", te: "trailers", authorization: "Bearer t" }), body, signal };
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const out: Uint8Array[] = [];
  for await (const c of body) out.push(c);
  return Buffer.concat(out);
}

/** Echoes the request body, then answers with trailers. */
const echo: Handler = (stream) => {
  stream.respond({ ":status": 200, "content-type": "application/grpc+proto", "x-big": "v".repeat(300) }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "grpc-message": "all%20good" }));
  stream.pipe(stream);
};

describe("the edge's HTTP/2 client", () => {
  let pki: TestPki;
  beforeAll(() => {
    pki = makeTestPki();
  });
  afterAll(() => rmSync(pki.dir, { recursive: true, force: true }));

  it("sends the request headers and body, and reads response headers, body and trailers (cleartext)", async () => {
    let seen: http2.IncomingHttpHeaders = {};
    const { url } = await serve((stream, headers) => {
      seen = headers;
      echo(stream, headers);
    });
    const res = await createH2Client()(request(url, chunks(Buffer.from("hello "), Buffer.from("world"))));
    expect(res.status).toBe(200);
    expect(res.header.get("content-type")).toBe("application/grpc+proto");
    expect(res.header.get("x-big")).toBe("v".repeat(300));
    expect((await readAll(res.body)).toString()).toBe("hello world");
    expect(res.trailer.get("grpc-status")).toBe("0");
    expect(res.trailer.get("grpc-message")).toBe("all%20good");
    expect(seen[":method"]).toBe("POST");
    expect(seen[":path"]).toBe("/svc/Method");
    expect(seen[":scheme"]).toBe("http");
    expect(seen[":authority"]).toBe(new URL(url).host);
    expect(seen.authorization).toBe("Bearer t");
    expect(seen.te).toBe("trailers");
  });

  it("dials connectAddress while the URL's host still names the server (one of several addresses a name resolves to)", async () => {
    let authority = "";
    const { url } = await serve((stream, headers) => {
      authority = String(headers[":authority"]);
      echo(stream, headers);
    });
    const port = new URL(url).port;
    // A name that does not resolve: only the given address is dialled.
    const res = await createH2Client({ connectAddress: "127.0.0.1" })(request(`http://managers.invalid:${port}`, chunks(Buffer.from("via address"))));
    expect(res.status).toBe(200);
    expect((await readAll(res.body)).toString()).toBe("via address");
    expect(authority).toBe(`managers.invalid:${port}`);
    // TLS verifies the name, not the address: a certificate for 127.0.0.1/localhost is refused for another name.
    const secure = await serve(echo, pki);
    const tlsPort = new URL(secure.url).port;
    const ok = await createH2Client({ ca: pki.caPem, connectAddress: "127.0.0.1" })(request(`https://localhost:${tlsPort}`, chunks(Buffer.from("tls"))));
    expect((await readAll(ok.body)).toString()).toBe("tls");
    const refused = await createH2Client({ ca: pki.caPem, connectAddress: "127.0.0.1" })(request(`https://managers.invalid:${tlsPort}`, chunks(Buffer.from("x")))).catch((e) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect(String(refused.message)).toMatch(/altnames|certificate|Hostname/i);
  });

  it("moves megabytes both ways under flow control, messages interleaved as a bidi stream needs", async () => {
    const { url } = await serve(echo);
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    const parts = Array.from({ length: 48 }, (_, i) => big.subarray(i * 65536, (i + 1) * 65536));
    const res = await createH2Client()(request(url, chunks(...parts)));
    const got = await readAll(res.body);
    expect(got.length).toBe(big.length);
    expect(got.equals(big)).toBe(true);
    expect(res.trailer.get("grpc-status")).toBe("0");
  });

  it("answers the server's PINGs and keeps a stream open while the request body waits", async () => {
    let pinged: Promise<boolean> | undefined;
    const { url } = await serve((stream) => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" });
      stream.write("first");
      pinged = new Promise((resolve) => stream.session!.ping((err) => resolve(!err)));
      stream.on("data", (d: Buffer) => stream.end(`got ${d}`));
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const body = (async function* () {
      await gate;
      yield Buffer.from("late");
    })();
    const res = await createH2Client()(request(url, body));
    const it = res.body[Symbol.asyncIterator]();
    expect(Buffer.from((await it.next()).value!).toString()).toBe("first");
    expect(await pinged).toBe(true);
    release();
    expect(Buffer.from((await it.next()).value!).toString()).toBe("got late");
    expect((await it.next()).done).toBe(true);
  });

  it("passes a trailers-only response through as headers, with an empty body", async () => {
    const { url } = await serve((stream) => {
      stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "16", "grpc-message": "bad token" }, { endStream: true });
    });
    const res = await createH2Client()(request(url, chunks(Buffer.from("x"))));
    expect(res.header.get("grpc-status")).toBe("16");
    expect((await readAll(res.body)).length).toBe(0);
  });

  it("turns a stream reset by the server into the Connect code for its HTTP/2 error code", async () => {
    // HEADERS (:status 200, static index 8), DATA "partial", then RST_STREAM REFUSED_STREAM (7).
    const url = await rawServer([frame(1, 4, 1, Buffer.from([0x88])), frame(0, 0, 1, Buffer.from("partial")), frame(3, 0, 1, u32(7))]);
    const res = await createH2Client()(request(url, forever()));
    expect(res.status).toBe(200);
    await expect(readAll(res.body)).rejects.toMatchObject({ code: Code.Unavailable, message: expect.stringMatching(/REFUSED_STREAM/) });
    expect(errorFromResetCode(8)?.code).toBe(Code.Canceled);
    expect(errorFromResetCode(0)).toBeUndefined();
  });

  it("resets the stream with CANCEL when the call is aborted", async () => {
    let rst: Promise<number> | undefined;
    const { url } = await serve((stream) => {
      rst = new Promise((resolve) => stream.on("close", () => resolve(stream.rstCode)));
      stream.respond({ ":status": 200, "content-type": "application/grpc" });
    });
    const ac = new AbortController();
    const res = await createH2Client()(request(url, (async function* () { await new Promise(() => {}); })(), ac.signal));
    const reading = readAll(res.body);
    ac.abort(new ConnectError("stop", Code.Canceled));
    await expect(reading).rejects.toMatchObject({ code: Code.Canceled });
    expect(await rst).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it("fails UNAVAILABLE when the connection is refused, dropped, or the server is going away", async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    await expect(createH2Client()(request(`http://127.0.0.1:${port}`))).rejects.toMatchObject({ code: Code.Unavailable, message: expect.stringMatching(/ECONNREFUSED/) });

    const dropping = await rawServer([frame(1, 4, 1, Buffer.from([0x88])), frame(0, 0, 1, Buffer.from("x"))], true);
    const res = await createH2Client()(request(dropping, forever()));
    await expect(readAll(res.body)).rejects.toMatchObject({ code: Code.Unavailable });

    // GOAWAY with last stream id 0: our stream was not processed.
    const goingAway = await rawServer([frame(7, 0, 0, u32(0, 0))]);
    await expect(createH2Client()(request(goingAway, forever()))).rejects.toMatchObject({ code: Code.Unavailable, message: expect.stringMatching(/going away/) });
  });

  it("gives up a connect (or a TLS handshake) that does not complete within connectTimeoutMs, UNAVAILABLE", async () => {
    // A TCP server that accepts and never answers: the TLS handshake never completes.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const port = (silent.address() as AddressInfo).port;
    try {
      await expect(createH2Client({ connectTimeoutMs: 300 })(request(`https://127.0.0.1:${port}`))).rejects.toMatchObject({
        code: Code.Unavailable,
        message: expect.stringMatching(/could not connect to 127\.0\.0\.1:\d+ within 300 ms \(TCP and TLS handshake\)/),
      });
    } finally {
      silent.close();
    }
  });

  it("ends the connection on a protocol error from the server", async () => {
    const url = await rawServer([frame(1, 4, 1, Buffer.from([0x88])), frame(0, 0, 3, Buffer.from("wrong stream"))]);
    const res = await createH2Client()(request(url, forever()));
    await expect(readAll(res.body)).rejects.toMatchObject({ code: Code.Internal, message: expect.stringMatching(/protocol error/) });
  });

  it("speaks HTTP/2 over TLS with ALPN, verifying the server against the given CA only", async () => {
    const { url } = await serve(echo, pki);
    const res = await createH2Client({ ca: pki.caPem })(request(url, chunks(Buffer.from("secure"))));
    expect((await readAll(res.body)).toString()).toBe("secure");
    await expect(createH2Client()(request(url, chunks()))).rejects.toMatchObject({ code: Code.Unavailable, message: expect.stringMatching(/certificate|self[- ]signed|unable to verify/i) });
  });

  it("refuses a TLS server that does not negotiate h2", async () => {
    const tls = await import("node:tls");
    const server = tls.createServer({ cert: readFileSync(pki.serverCert), key: readFileSync(pki.serverKey), ALPNProtocols: ["http/1.1"] }, (s) => s.on("error", () => {}));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      await expect(createH2Client({ ca: pki.caPem })(request(`https://127.0.0.1:${(server.address() as AddressInfo).port}`))).rejects.toMatchObject({
        code: Code.Unavailable,
      });
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
