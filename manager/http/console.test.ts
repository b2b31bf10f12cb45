/** The console's static handler on a real loopback server: what it serves, what it refuses, and that no path can throw. */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_CSP, createConsole } from "./console.ts";

let dir: string;
let server: http.Server;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-console-"));
  const root = join(dir, "console");
  mkdirSync(join(root, "assets"), { recursive: true });
  writeFileSync(join(root, "index.html"), '<!doctype html><div id="root"></div><script type="module" src="/assets/index-abc.js"></script>');
  writeFileSync(join(root, "assets", "index-abc.js"), "console.log(1)");
  writeFileSync(join(dir, "secret.txt"), "outside the console");
  symlinkSync(join(dir, "secret.txt"), join(root, "assets", "leak.txt"));
  const serve = createConsole(root);
  server = http.createServer((req, res) => {
    if (serve(req, res)) return;
    res.writeHead(404);
    res.end("not the console");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** Sends the path exactly as given (fetch would normalise "..", "//" and escapes away). */
function raw(path: string, method = "GET"): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("console static handler", () => {
  it("serves index.html for / and the console's pages, with the CSP and no caching", async () => {
    for (const path of ["/", "/skills", "/skills/probe_tcp", "/topology", "/admin/audit?tool=x", "/approvals/apr_1"]) {
      const r = await raw(path);
      expect(r.status, path).toBe(200);
      expect(r.body).toContain('<div id="root">');
      expect(r.headers["content-security-policy"]).toBe(CONSOLE_CSP);
      expect(r.headers["cache-control"]).toBe("no-store");
    }
    const head = await raw("/skills", "HEAD");
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
  });

  it("serves a built asset with its type and long caching", async () => {
    const r = await raw("/assets/index-abc.js");
    expect(r.status).toBe(200);
    expect(r.headers["content-type"]).toMatch(/^text\/javascript/);
    expect(r.headers["cache-control"]).toMatch(/immutable/);
    expect(r.body).toBe("console.log(1)");
  });

  it("gzips an asset for a client that accepts it, and says so", async () => {
    const r = await new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http
        .request({ host: "127.0.0.1", port, path: "/assets/index-abc.js", headers: { "accept-encoding": "gzip, br" } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (d: Buffer) => chunks.push(d));
          res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        })
        .on("error", reject)
        .end();
    });
    expect(r.headers["content-encoding"]).toBe("gzip");
    expect(r.headers.vary).toBe("accept-encoding");
    expect(gunzipSync(r.body).toString()).toBe("console.log(1)");
  });

  it.each([
    ["a parent directory", "/assets/../secret.txt"],
    ["an encoded parent directory", "/assets/..%2f..%2fsecret.txt"],
    ["encoded dots", "/assets/%2e%2e/secret.txt"],
    ["a backslash", "/assets/..\\secret.txt"],
    ["a NUL", "/assets/%00"],
    ["a nested path", "/assets/x/index-abc.js"],
    ["a hidden name", "/assets/.index-abc.js"],
    ["a symlink out of the console", "/assets/leak.txt"],
    ["a missing asset", "/assets/nope.js"],
    ["a double slash", "//"],
    ["a double slash before a page", "//skills"],
    ["an unknown page", "/package.json"],
    ["a very long path", "/" + "a".repeat(10_000)],
  ])("refuses %s without serving a file (%s)", async (_what, path) => {
    const r = await raw(path);
    expect(r.status).toBe(404);
    expect(r.body).toBe("not the console");
  });

  it.each([["/%"], ["/skills/%E0%A4%A"], ["/assets/%"], ["/%zz"]])("answers a malformed escape (%s) with 400 and keeps serving", async (path) => {
    const r = await raw(path);
    expect(r.status).toBe(400);
    expect(r.body).toMatch(/malformed percent-encoding/);
    expect((await raw("/skills")).status).toBe(200);
  });

  it("answers 503 with the build command when the console is not built", async () => {
    const serve = createConsole(join(dir, "nothing-here"));
    const res = { status: 0, body: "", writeHead(s: number) { this.status = s; }, end(b: string | Buffer) { this.body = String(b); } };
    expect(serve({ method: "GET", url: "/skills" }, res)).toBe(true);
    expect(res.status).toBe(503);
    expect(res.body).toMatch(/npm run build:web/);
  });
});
