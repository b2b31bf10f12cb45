import net from "node:net";
import http2 from "node:http2";
import https from "node:https";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listener } from "./listen.ts";
import { makeTestPki, type TestPki } from "../../test/support/tls.ts";

let l: Listener;
beforeAll(async () => {
  l = await listen((req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(`${req.httpVersion} ${req.url}`);
  }, { host: "127.0.0.1", port: 0 });
});
afterAll(() => l.close());

function rawExchange(parts: Buffer[], gapMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(l.port, "127.0.0.1");
    let got = Buffer.alloc(0);
    sock.on("data", (d) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 9) {
        sock.destroy();
        resolve(got);
      }
    });
    sock.on("error", reject);
    sock.on("connect", async () => {
      for (const p of parts) {
        sock.write(p);
        await new Promise((r) => setTimeout(r, gapMs));
      }
    });
  });
}

describe("front door", () => {
  it("serves HTTP/1.1 and HTTP/2 cleartext on one port", async () => {
    const h1 = await fetch(`${l.url}/a`);
    expect(await h1.text()).toBe("1.1 /a");
    const session = http2.connect(l.url);
    const body = await new Promise<string>((resolve, reject) => {
      const req = session.request({ ":path": "/b" });
      let data = "";
      req.on("data", (d) => (data += d));
      req.on("end", () => resolve(data));
      req.on("error", reject);
      req.end();
    });
    session.close();
    expect(body).toBe("2.0 /b");
  });

  it("waits for enough bytes when the HTTP/2 preface arrives in pieces", async () => {
    const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const emptySettings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    const got = await rawExchange([preface.subarray(0, 1), preface.subarray(1, 6), Buffer.concat([preface.subarray(6), emptySettings])], 30);
    // The server's first frame is SETTINGS (type 4) on stream 0: it spoke HTTP/2.
    expect(got[3]).toBe(4);
    expect(got.readUInt32BE(5) & 0x7fffffff).toBe(0);
  });

  it("hands a POST whose first packet is only \"P\" to HTTP/1.1, not HTTP/2", async () => {
    const req = Buffer.from("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    const got = await rawExchange([req.subarray(0, 1), req.subarray(1, 2), req.subarray(2)], 30);
    expect(got.toString("latin1")).toMatch(/^HTTP\/1\.1 200/);
  });

  it("refuses unusable TLS material naming the config keys", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-badtls-"));
    writeFileSync(join(dir, "c.pem"), "not a certificate");
    writeFileSync(join(dir, "k.pem"), "not a key");
    await expect(listen(() => {}, { host: "127.0.0.1", port: 0, tlsCert: join(dir, "c.pem"), tlsKey: join(dir, "k.pem") })).rejects.toThrow(
      /server\.tls_cert\/tls_key: not a usable PEM certificate and key/,
    );
    await expect(listen(() => {}, { host: "127.0.0.1", port: 0, tlsCert: join(dir, "missing.pem"), tlsKey: join(dir, "k.pem") })).rejects.toThrow(
      /server\.tls_cert\/tls_key: cannot read/,
    );
  });
});

describe("raw stream handlers", () => {
  let raw: Listener;
  const seen: string[] = [];
  beforeAll(async () => {
    raw = await listen(
      (req, res) => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`handler ${req.url}`);
      },
      {
        host: "127.0.0.1",
        port: 0,
        streams: {
          "/raw": (stream) => {
            seen.push("raw");
            stream.respond({ ":status": 200 });
            stream.end("raw");
          },
          "/maybe": (stream, headers) => {
            if (headers["x-take"] !== "yes") return false;
            stream.respond({ ":status": 200 });
            stream.end("taken");
            return true;
          },
        },
      },
    );
  });
  afterAll(() => raw.close());

  async function get(path: string, headers: Record<string, string> = {}): Promise<string> {
    const session = http2.connect(raw.url);
    try {
      return await new Promise<string>((resolve, reject) => {
        const req = session.request({ ":path": path, ...headers });
        let body = "";
        req.setEncoding("utf8");
        req.on("data", (c: string) => (body += c));
        req.on("end", () => resolve(body));
        req.on("error", reject);
        req.end();
      });
    } finally {
      session.close();
    }
  }

  it("serves a path with a raw handler raw, and every other path through the handler", async () => {
    expect(await get("/raw")).toBe("raw");
    expect(await get("/other")).toBe("handler /other");
  });

  it("gives the handler a stream its raw handler declines", async () => {
    expect(await get("/maybe", { "x-take": "yes" })).toBe("taken");
    expect(await get("/maybe")).toBe("handler /maybe");
  });
});

describe("front door with TLS", () => {
  let pki: TestPki;
  let t: Listener;
  let handled = 0;
  beforeAll(async () => {
    pki = makeTestPki();
    t = await listen((req, res) => {
      handled++;
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(`${req.httpVersion} ${req.url}`);
    }, { host: "127.0.0.1", port: 0, tlsCert: pki.serverCert, tlsKey: pki.serverKey });
  });
  afterAll(async () => {
    await t?.close();
    if (pki) rmSync(pki.dir, { recursive: true, force: true });
  });

  /** Sends bytes on a plain TCP connection and collects everything until the server closes it. */
  function plaintext(bytes: Buffer | string): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(t.port, "127.0.0.1", () => sock.write(bytes));
      const got: Buffer[] = [];
      sock.on("data", (d) => got.push(d));
      sock.on("end", () => resolve(Buffer.concat(got)));
      sock.on("error", reject);
    });
  }

  it("serves HTTP/1.1 and HTTP/2 over TLS (ALPN) on the same port", async () => {
    const h1 = await new Promise<string>((resolve, reject) => {
      https.get({ host: "127.0.0.1", port: t.port, path: "/one", ca: pki.caPem }, (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve(body));
      }).on("error", reject);
    });
    expect(h1).toBe("1.1 /one");
    const session = http2.connect(t.url, { ca: pki.caPem });
    const h2 = await new Promise<string>((resolve, reject) => {
      const req = session.request({ ":path": "/two" });
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => resolve(body));
      req.on("error", reject);
      req.end();
    });
    session.close();
    expect(h2).toBe("2.0 /two");
  });

  it("answers a plaintext HTTP/1.1 request with a 400 that says TLS is required, and never runs the handler", async () => {
    const before = handled;
    const got = (await plaintext("POST /ongrid.v1.SkillService/ListSkills HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")).toString("latin1");
    expect(got).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(got).toContain("plaintext refused: this port serves TLS only; use an https:// URL");
    expect(handled).toBe(before);
  });

  it("answers an HTTP/2 cleartext client (h2c prior knowledge) with GOAWAY INADEQUATE_SECURITY carrying the reason", async () => {
    const before = handled;
    const got = await plaintext(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    // SETTINGS (type 4), then GOAWAY (type 7) on stream 0: last stream 0, INADEQUATE_SECURITY (0xc), the reason as debug data.
    expect(got[3]).toBe(4);
    const goaway = got.subarray(9 + got.readUIntBE(0, 3));
    expect(goaway[3]).toBe(7);
    expect(goaway.readUInt32BE(9)).toBe(0);
    expect(goaway.readUInt32BE(13)).toBe(0xc);
    expect(goaway.subarray(17, 9 + goaway.readUIntBE(0, 3)).toString()).toBe("plaintext refused: this port serves TLS only; use an https:// URL");
    expect(handled).toBe(before);
    // node's own HTTP/2 client reports it as a refused session rather than hanging.
    const session = http2.connect(`http://127.0.0.1:${t.port}`);
    const err = await new Promise<Error>((resolve) => {
      session.on("error", resolve);
      const req = session.request({ ":path": "/x" });
      req.on("error", resolve);
      req.end();
    });
    session.destroy();
    expect(String(err)).toMatch(/INADEQUATE_SECURITY|GOAWAY|code 12/i);
  });
});

describe("incomplete HTTP/2 streams", () => {
  // headersTimeoutMs must not exceed requestTimeoutMs (node refuses it for HTTP/1.1).
  const limits = { maxIncompleteStreams: 10, requestTimeoutMs: 300, headersTimeoutMs: 300 };
  const limited: Array<{ what: string; peer: string }> = [];
  /** Resolved by /slow once it has read a whole request, which it then never answers. */
  let slowRead: () => void = () => {};
  /** Answers a request once its body has arrived. */
  const echoOnEnd = (req: http2.Http2ServerRequest | import("node:http").IncomingMessage, res: http2.Http2ServerResponse | import("node:http").ServerResponse) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
    });
  };
  const streams = {
    // Answered at once and held open without the client ever ending: the edge tunnel's shape.
    "/answered": (stream: http2.ServerHttp2Stream) => {
      stream.respond({ ":status": 200 });
    },
    // Reads the whole request and never answers (a long call).
    "/slow": (stream: http2.ServerHttp2Stream) => {
      stream.resume();
      stream.on("end", () => slowRead());
    },
  };
  let c: Listener;
  let pki: TestPki;
  let t: Listener;
  beforeAll(async () => {
    const onLimit = (what: string, peer: string) => limited.push({ what, peer });
    c = await listen(echoOnEnd as never, { host: "127.0.0.1", port: 0, streams, limits, onLimit });
    pki = makeTestPki();
    t = await listen(echoOnEnd as never, { host: "127.0.0.1", port: 0, tlsCert: pki.serverCert, tlsKey: pki.serverKey, streams, limits, onLimit });
  });
  afterAll(async () => {
    await c?.close();
    await t?.close();
    if (pki) rmSync(pki.dir, { recursive: true, force: true });
  });

  function connect(url: string): http2.ClientHttp2Session {
    const session = http2.connect(url, url.startsWith("https:") ? { ca: pki.caPem } : {});
    session.on("error", () => undefined);
    return session;
  }

  /** Opens a stream that sends its headers and never ends the request. */
  function hold(session: http2.ClientHttp2Session, path = "/upload"): http2.ClientHttp2Stream {
    const st = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc" }, { endStream: false });
    st.on("error", () => undefined);
    return st;
  }

  /** Sends one complete POST and resolves with its status. */
  function post(session: http2.ClientHttp2Session, path = "/upload"): Promise<number> {
    return new Promise((resolve, reject) => {
      const st = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc" });
      let status = 0;
      st.on("response", (h) => (status = Number(h[":status"])));
      st.resume();
      st.on("end", () => resolve(status));
      st.on("error", reject);
      st.end("x".repeat(200));
    });
  }

  /** Resolves with an event's arguments, or rejects after a generous bound. */
  function next<T extends unknown[]>(emitter: NodeJS.EventEmitter, event: string, boundMs = 10_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${event} within ${boundMs} ms`)), boundMs);
      emitter.once(event, (...args: unknown[]) => {
        clearTimeout(timer);
        resolve(args as T);
      });
    });
  }

  for (const kind of ["cleartext", "TLS"] as const) {
    it(`closes a ${kind} session holding more than the cap with GOAWAY ENHANCE_YOUR_CALM, and only that session`, async () => {
      const url = kind === "TLS" ? t.url : c.url;
      const good = connect(url);
      expect(await post(good)).toBe(200);
      const before = limited.length;
      const bad = connect(url);
      const goaway = next<[number]>(bad, "goaway");
      const closed = next(bad, "close");
      for (let i = 0; i < 11; i++) hold(bad);
      const [code] = await goaway;
      expect(code).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
      await closed;
      expect(limited.slice(before)).toEqual([{ what: expect.stringContaining("server.max_incomplete_streams"), peer: "127.0.0.1" }]);
      // The other session on the same listener was not touched.
      expect(good.closed || good.destroyed).toBe(false);
      expect(await post(good)).toBe(200);
      good.close();
    });
  }

  it("does not cut off a session sending 50 complete requests at once", async () => {
    const session = connect(c.url);
    let goaway = false;
    session.on("goaway", () => (goaway = true));
    const statuses = await Promise.all(Array.from({ length: 50 }, () => post(session)));
    expect(statuses).toEqual(Array(50).fill(200));
    expect(goaway).toBe(false);
    expect(session.destroyed).toBe(false);
    session.close();
  });

  it("resets an incomplete stream with CANCEL after the request timeout, but not an answered one or one whose request completed", async () => {
    const session = connect(c.url);
    // The answered and the completed stream reach the server first, so their timers would fire first.
    const answered = hold(session, "/answered");
    await next(answered, "response");
    const slow = session.request({ ":method": "POST", ":path": "/slow" });
    slow.on("error", () => undefined);
    await new Promise<void>((resolve) => {
      slowRead = resolve;
      slow.end("done");
    });
    const incomplete = hold(session);
    await next(incomplete, "close");
    expect(incomplete.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(answered.closed || answered.destroyed).toBe(false);
    expect(slow.closed || slow.destroyed).toBe(false);
    expect(session.destroyed).toBe(false);
    // node 20's client spins (and runs out of memory) when a session is destroyed in the same
    // turn as one of its streams closed on a server reset while another stream is open; a turn later it does not.
    await new Promise((r) => setImmediate(r));
    session.destroy();
  });
});
