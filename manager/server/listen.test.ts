import net from "node:net";
import http2 from "node:http2";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, type Listener } from "./listen.ts";

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
