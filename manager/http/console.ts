/**
 * Serves the web console (manager/web, built by Vite into dist/console) on the manager's one port:
 * hashed assets with long caching, index.html for every console path (the app routes itself),
 * and a strict Content-Security-Policy on every response: the bundle needs no inline code and
 * talks only to this origin.
 */
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { extname, join, resolve, sep } from "node:path";
import { gzipSync } from "node:zlib";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

/** Where `npm run build:web` (and `npm start`) put the console. */
export const DEFAULT_CONSOLE_DIR = resolve(import.meta.dirname, "..", "..", "dist", "console");

/** The console's Content-Security-Policy: same-origin everything, no inline script or style, no framing. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** Types worth compressing. */
const COMPRESSIBLE = /^(text\/|application\/json|image\/svg)/;

/** A built asset's file name: no separators, no leading dot. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/** The first path segments the single-page app answers with index.html. */
const APP_PATHS = new Set(["", "skills", "edges", "topology", "approvals", "playbooks", "chat", "admin", "login"]);

/** Whether a built console is in `dir` (so the start-up banner can say where it is, or how to build it). */
export function consoleBuilt(dir = DEFAULT_CONSOLE_DIR): boolean {
  return existsSync(join(dir, "index.html"));
}

/** What the handler needs of a request and a response (node:http and node:http2 compat both fit). */
type Req = Pick<IncomingMessage | Http2ServerRequest, "method" | "url"> & { headers?: IncomingMessage["headers"] };
interface Res {
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  end(body: Buffer | string): unknown;
}

/** A console handler: answers a request for the console and returns true, or returns false. */
export type ConsoleHandler = (req: Req, res: Res) => boolean;

/** Builds the console handler over a built console directory. */
export function createConsole(dir = DEFAULT_CONSOLE_DIR): ConsoleHandler {
  const root = resolve(dir);
  const security = {
    "content-security-policy": CONSOLE_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
  };
  const send = (res: Res, status: number, type: string, body: Buffer | string, cache: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...security, "content-type": type, "cache-control": cache, "content-length": Buffer.byteLength(body), ...extra });
    res.end(body);
  };
  // Gzipped assets, by real path: the bundle is ~700 KB, ~220 KB gzipped; compressed once per build.
  const gzipped = new Map<string, Buffer>();
  const index = () => {
    try {
      return readFileSync(join(root, "index.html"));
    } catch {
      return null;
    }
  };
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    // Only the path matters. It is split by hand (URL refuses "//x") and each segment decoded on
    // its own; nothing here may throw, since a throw in connect's fallback would end the process.
    const path = (req.url ?? "/").split(/[?#]/)[0];
    if (!path.startsWith("/")) return false;
    let segments: string[];
    try {
      segments = path.slice(1).split("/").map((s) => decodeURIComponent(s));
    } catch {
      send(res, 400, "text/plain; charset=utf-8", "malformed percent-encoding in the path\n", "no-store");
      return true;
    }
    if (segments[0] === "assets") {
      // Vite writes assets flat, named by content hash: /assets/<name> and nothing else.
      const name = segments.length === 2 ? segments[1] : "";
      if (!ASSET_NAME.test(name)) return false;
      let body: Buffer;
      let file: string;
      try {
        file = realpathSync(join(root, "assets", name));
        if (!file.startsWith(realpathSync(root) + sep) || !statSync(file).isFile()) return false;
        body = readFileSync(file);
      } catch {
        return false; // gone (a rebuild swapped it out) or unreadable: 404
      }
      const type = TYPES[extname(name)] ?? "application/octet-stream";
      const cache = "public, max-age=31536000, immutable";
      if (COMPRESSIBLE.test(type) && /\bgzip\b/.test(String(req.headers?.["accept-encoding"] ?? ""))) {
        let gz = gzipped.get(file);
        if (!gz) {
          gz = gzipSync(body);
          if (gzipped.size > 64) gzipped.clear();
          gzipped.set(file, gz);
        }
        send(res, 200, type, gz, cache, { "content-encoding": "gzip", vary: "accept-encoding" });
        return true;
      }
      send(res, 200, type, body, cache, { vary: "accept-encoding" });
      return true;
    }
    // "/" itself, or a console page (its own path below that is the app's business).
    if (segments[0] === "" ? segments.length !== 1 : !APP_PATHS.has(segments[0])) return false;
    const html = index();
    if (!html) {
      send(res, 503, "text/plain; charset=utf-8", `The web console is not built (no ${join(root, "index.html")}).\nRun \`npm run build:web\` (\`npm start\` does it), then reload.\n`, "no-store");
      return true;
    }
    send(res, 200, TYPES[".html"], html, "no-store");
    return true;
  };
}
