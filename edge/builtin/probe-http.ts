/** probe_http (D1): one HTTP(S) request from this host — status, timings, selected headers and the TLS certificate. */
import tls from "node:tls";
import net from "node:net";
import { readFile } from "node:fs/promises";
import { defineSkill } from "../../skill/define.ts";
import { PROBE_HTTP } from "../../skill/catalog/probe-http.ts";
import { SkillError } from "../../skill/errors.ts";
import type { SkillContext } from "../../skill/types.ts";
import { parseDuration } from "../../skill/duration.ts";
import { scrubSecrets } from "../../skill/credential.ts";
import { connectTcp, elapsedMs, printable, probeDeadline, type ProbeDeadline } from "./probe-tcp.ts";

const MAX_BODY_BYTES = 64 * 1024;
const MAX_HEAD_BYTES = 64 * 1024;
const MAX_REDIRECTS = 5;
const SELECTED_HEADERS = ["server", "content-type", "content-length", "location", "cache-control"] as const;
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
const DAY_MS = 86_400_000;
const NOT_HTTP_HINT = "The port answers but not with HTTP/1.x; check the port, or the scheme (https:// for a TLS port).";

/** The status line and headers of a response; header names lowercase, repeated headers joined with ", ". */
export interface ResponseHead {
  version: string;
  status: number;
  statusText: string;
  headers: Map<string, string>;
}

type Mode = "head" | "length" | "eof" | "chunk-size" | "chunk-data" | "chunk-crlf" | "trailer";

/**
 * Incremental HTTP/1.x response reader: skips interim 1xx responses, undoes chunked framing and
 * counts at most `maxBody` body bytes without keeping them. Malformed input is SkillError("bad_response").
 */
export class ResponseParser {
  head?: ResponseHead;
  bodyBytes = 0;
  /** True when the body is longer than what was read (more than maxBody bytes). */
  bodyTruncated = false;
  /** True when the peer closed before the body the headers announced was complete. */
  bodyIncomplete = false;
  done = false;
  private buf: Buffer = Buffer.alloc(0);
  private mode: Mode = "head";
  private remaining = 0;

  constructor(
    private readonly method: string,
    private readonly maxBody = MAX_BODY_BYTES,
  ) {}

  /** Feeds the next bytes from the peer; true once everything the probe needs has been read. */
  push(chunk: Buffer): boolean {
    this.buf = this.buf.length > 0 ? Buffer.concat([this.buf, chunk]) : chunk;
    while (!this.done && this.step()) {
      /* step consumed something and may be able to go on */
    }
    return this.done;
  }

  /** The peer closed the connection. */
  end(): void {
    if (this.done) return;
    if (this.mode === "head") {
      throw new SkillError(
        "bad_response",
        this.buf.length > 0 ? `the server closed the connection in the middle of the response headers: ${printable(this.buf.subarray(0, 80))}` : "the server closed the connection without sending a response",
        NOT_HTTP_HINT,
      );
    }
    if (this.mode !== "eof") this.bodyIncomplete = true;
    this.done = true;
  }

  private count(n: number): void {
    const room = this.maxBody - this.bodyBytes;
    if (n > room) {
      this.bodyBytes += room;
      this.bodyTruncated = true;
      this.done = true;
    } else {
      this.bodyBytes += n;
    }
  }

  private take(n: number): void {
    this.buf = this.buf.subarray(n);
  }

  private step(): boolean {
    switch (this.mode) {
      case "head":
        return this.readHead();
      case "length":
      case "chunk-data": {
        if (this.buf.length === 0) return false;
        const n = Math.min(this.remaining, this.buf.length);
        this.count(n);
        this.take(n);
        this.remaining -= n;
        if (this.remaining === 0) {
          if (this.mode === "length") this.done = true;
          else this.mode = "chunk-crlf";
        }
        return true;
      }
      case "eof":
        this.count(this.buf.length);
        this.take(this.buf.length);
        return false;
      case "chunk-crlf":
        if (this.buf.length < 2) return false;
        this.take(2);
        this.mode = "chunk-size";
        return true;
      case "chunk-size": {
        const eol = this.buf.indexOf("\r\n");
        if (eol < 0) {
          if (this.buf.length > 1024) throw new SkillError("bad_response", "a chunk-size line of the chunked body is too long", NOT_HTTP_HINT);
          return false;
        }
        const text = this.buf.subarray(0, eol).toString("latin1").split(";")[0].trim();
        if (!/^[0-9A-Fa-f]{1,12}$/.test(text)) throw new SkillError("bad_response", `invalid chunk size ${JSON.stringify(text.slice(0, 20))} in the chunked body`, NOT_HTTP_HINT);
        this.take(eol + 2);
        this.remaining = parseInt(text, 16);
        this.mode = this.remaining === 0 ? "trailer" : "chunk-data";
        return true;
      }
      case "trailer": {
        const eol = this.buf.indexOf("\r\n");
        if (eol < 0) return false;
        this.take(eol + 2);
        if (eol === 0) this.done = true;
        return true;
      }
    }
  }

  private readHead(): boolean {
    const end = this.buf.indexOf("\r\n\r\n");
    if (end < 0) {
      if (this.buf.length >= 8 && !this.buf.subarray(0, 5).equals(Buffer.from("HTTP/"))) {
        throw new SkillError("bad_response", `the server did not answer with HTTP: ${printable(this.buf.subarray(0, 80))}`, NOT_HTTP_HINT);
      }
      if (this.buf.length > MAX_HEAD_BYTES) throw new SkillError("bad_response", `the response headers exceed ${MAX_HEAD_BYTES} bytes`, NOT_HTTP_HINT);
      return false;
    }
    const lines = this.buf.subarray(0, end).toString("latin1").split("\r\n");
    this.take(end + 4);
    const m = /^HTTP\/(\d(?:\.\d)?) (\d{3})(?: (.*))?$/.exec(lines[0]);
    if (!m) throw new SkillError("bad_response", `the server did not answer with HTTP: ${printable(Buffer.from(lines[0].slice(0, 80), "latin1"))}`, NOT_HTTP_HINT);
    const status = Number(m[2]);
    if (status >= 100 && status < 200 && status !== 101) return true; // interim response (100 Continue, 103 Early Hints)
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const prev = headers.get(name);
      headers.set(name, prev === undefined ? value : `${prev}, ${value}`);
    }
    this.head = { version: m[1], status, statusText: (m[3] ?? "").slice(0, 200), headers };
    const te = headers.get("transfer-encoding")?.toLowerCase() ?? "";
    const length = headers.get("content-length");
    if (this.method === "HEAD" || status === 101 || status === 204 || status === 304) {
      this.done = true;
    } else if (/(?:^|,)\s*chunked\s*$/.test(te)) {
      this.mode = "chunk-size";
    } else if (length !== undefined && /^\d{1,15}$/.test(length)) {
      this.remaining = Number(length);
      this.mode = "length";
      if (this.remaining === 0) this.done = true;
    } else {
      this.mode = "eof";
    }
    return true;
  }
}

/** Parses OpenSSL's certificate date text ("Dec 30 16:18:44 2026 GMT") without relying on the engine's Date parser. */
export function parseCertDate(text: unknown): Date | null {
  if (typeof text !== "string") return null;
  const m = /^([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4}) GMT$/.exec(text.trim());
  if (!m) return null;
  const month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].indexOf(m[1]);
  if (month < 0) return null;
  return new Date(Date.UTC(Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])));
}

function distinguishedName(name: unknown): string | null {
  if (typeof name !== "object" || name === null) return null;
  const parts = Object.entries(name as Record<string, unknown>).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${k}=${String(x)}`));
  return parts.length > 0 ? parts.join(", ") : null;
}

const AUTHORIZATION_DETAIL: Readonly<Record<string, string>> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: "the certificate is self-signed",
  SELF_SIGNED_CERT_IN_CHAIN: "the chain ends in a self-signed root this host does not trust",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the issuer is not trusted here (private CA, or the server omits its intermediate certificates)",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the issuer is not trusted here (private CA, or the server omits its intermediate certificates)",
  CERT_HAS_EXPIRED: "the certificate has expired",
  CERT_NOT_YET_VALID: "the certificate is not valid yet (check the clocks)",
  ERR_TLS_CERT_ALTNAME_INVALID: "the certificate does not cover the host name in the URL",
};

/** The TLS facts of an established connection; an untrusted certificate is reported, never a failure. */
export function describeTls(socket: tls.TLSSocket, now = Date.now()) {
  const cert = socket.getPeerCertificate() as Partial<tls.PeerCertificate> | null;
  const validFrom = parseCertDate(cert?.valid_from);
  const validTo = parseCertDate(cert?.valid_to);
  const error = socket.authorized ? null : String(socket.authorizationError ?? "unknown");
  return {
    protocol: socket.getProtocol() ?? null,
    cipher: socket.getCipher()?.name ?? null,
    subject: distinguishedName(cert?.subject),
    issuer: distinguishedName(cert?.issuer),
    san: typeof cert?.subjectaltname === "string" ? cert.subjectaltname.split(", ").slice(0, 20) : [],
    valid_from: validFrom?.toISOString() ?? null,
    valid_to: validTo?.toISOString() ?? null,
    days_left: validTo ? Math.floor((validTo.getTime() - now) / DAY_MS) : null,
    authorized: socket.authorized === true,
    authorization_error: error,
    ...(error && AUTHORIZATION_DETAIL[error] ? { authorization_detail: AUTHORIZATION_DETAIL[error] } : {}),
  };
}

async function startTls(socket: net.Socket, host: string, ca: string[] | undefined, deadline: ProbeDeadline, target: string): Promise<tls.TLSSocket> {
  const isIp = net.isIP(host) !== 0;
  const secure = tls.connect({
    socket,
    host,
    ...(isIp ? {} : { servername: host }),
    rejectUnauthorized: false,
    ALPNProtocols: ["http/1.1"],
    ...(ca ? { ca } : {}),
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const cleanup = () => {
        secure.off("secureConnect", onSecure);
        secure.off("error", onError);
        secure.off("close", onClose);
        deadline.signal.removeEventListener("abort", onAbort);
      };
      const onSecure = () => {
        cleanup();
        resolve();
      };
      const onError = (err: NodeJS.ErrnoException) => {
        cleanup();
        reject(
          new SkillError(
            "tls_failed",
            `TLS handshake with ${target} failed: ${err.code === "ECONNRESET" ? "the server reset the connection" : err.message}`,
            "The port may not speak TLS (try http://), or the server needs a TLS version or cipher this host does not offer; probe_tcp shows whether the port is open.",
          ),
        );
      };
      const onClose = () => onError(Object.assign(new Error("the server closed the connection"), { code: "ECLOSED" }));
      const onAbort = () => {
        cleanup();
        reject(deadline.error(`the TLS handshake with ${target}`, "The port accepts connections but does not complete a TLS handshake; it may not speak TLS (try http://)."));
      };
      secure.once("secureConnect", onSecure);
      secure.once("error", onError);
      secure.once("close", onClose);
      if (deadline.signal.aborted) onAbort();
      else deadline.signal.addEventListener("abort", onAbort, { once: true });
    });
  } catch (err) {
    secure.destroy();
    throw err;
  }
  secure.on("error", () => {});
  return secure;
}

/** Sends the request and reads the response into `parser`; resolves with the time of the first response byte. */
function exchange(socket: net.Socket, request: string, parser: ResponseParser, deadline: ProbeDeadline, target: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let firstByteAt = 0;
    const cleanup = () => {
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onEnd);
      socket.off("error", onError);
      deadline.signal.removeEventListener("abort", onAbort);
    };
    const finish = (err?: Error) => {
      cleanup();
      if (err) reject(err);
      else resolve(firstByteAt);
    };
    const onData = (chunk: Buffer) => {
      if (firstByteAt === 0) firstByteAt = performance.now();
      try {
        if (parser.push(chunk)) finish();
      } catch (err) {
        finish(err as Error);
      }
    };
    const onEnd = () => {
      try {
        parser.end();
        finish();
      } catch (err) {
        finish(err as Error);
      }
    };
    const onError = (err: NodeJS.ErrnoException) => {
      if (parser.head && (err.code === "ECONNRESET" || err.code === "EPIPE")) return onEnd();
      finish(new SkillError("connection_reset", `the connection to ${target} failed while waiting for the response: ${err.code ?? err.message}`, "The server or a middlebox dropped the connection; check the server's error log, then retry."));
    };
    const onAbort = () =>
      finish(deadline.error(`the response from ${target}`, "The server accepted the connection but answered too slowly; check its load and upstreams, or retry with a longer timeout."));
    socket.on("data", onData);
    socket.once("end", onEnd);
    socket.once("close", onEnd);
    socket.on("error", onError);
    if (deadline.signal.aborted) return onAbort();
    deadline.signal.addEventListener("abort", onAbort, { once: true });
    socket.write(request);
  });
}

interface Hop {
  head: ResponseHead;
  parser: ResponseParser;
  address: string;
  ttfb_ms: number;
  timings: { dns_ms: number; connect_ms: number; tls_ms?: number };
  tls?: ReturnType<typeof describeTls>;
}

async function probeOnce(url: URL, method: string, deadline: ProbeDeadline, ca: string[] | undefined, authorization?: string): Promise<Hop> {
  const started = performance.now();
  const https = url.protocol === "https:";
  const port = url.port ? Number(url.port) : https ? 443 : 80;
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const conn = await connectTcp(host, port, deadline);
  let socket: net.Socket = conn.socket;
  try {
    let tlsFacts: Hop["tls"];
    let tls_ms: number | undefined;
    if (https) {
      const tlsStart = performance.now();
      const secure = await startTls(conn.socket, host, ca, deadline, url.host);
      socket = secure;
      tls_ms = elapsedMs(tlsStart);
      tlsFacts = describeTls(secure);
    }
    const parser = new ResponseParser(method);
    const auth = authorization !== undefined ? `Authorization: ${authorization}\r\n` : "";
    const request = `${method} ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nUser-Agent: ongrid-probe/1\r\nAccept: */*\r\n${auth}Connection: close\r\n\r\n`;
    const firstByteAt = await exchange(socket, request, parser, deadline, url.host);
    return {
      head: parser.head!,
      parser,
      address: conn.address,
      ttfb_ms: Math.round((firstByteAt - started) * 10) / 10,
      timings: { dns_ms: conn.dns_ms, connect_ms: conn.connect_ms, ...(tls_ms !== undefined ? { tls_ms } : {}) },
      ...(tlsFacts ? { tls: tlsFacts } : {}),
    };
  } finally {
    socket.destroy();
    conn.socket.destroy();
  }
}

function parseTarget(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SkillError("invalid_argument", `param "url": ${JSON.stringify(text.slice(0, 200))} is not a valid URL`, "Pass an absolute URL such as https://example.com/health.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SkillError("invalid_argument", `param "url": scheme ${url.protocol} is not http: or https:`, "Use probe_tcp for other protocols.");
  }
  if (url.username || url.password) {
    throw new SkillError("invalid_argument", 'param "url": credentials in the URL are not accepted', "Probe the URL without user:password@; a 401 status still shows the endpoint is up.");
  }
  return url;
}

/**
 * The Authorization header value for the injected credential. The messages never quote the value
 * (the manager injected it; the model only knows its name).
 */
export function authorizationHeader(value: string, scheme: "bearer" | "basic"): string {
  if (value === "") throw new SkillError("invalid_argument", 'param "credential": the credential is empty', "Store a non-empty value for the credential.");
  if (/[\r\n\0]/.test(value)) {
    throw new SkillError("invalid_argument", 'param "credential": the credential\'s value contains a line break or NUL, which cannot go in an HTTP header', "Store the value again without line breaks.");
  }
  if (scheme === "basic") {
    if (!value.includes(":")) {
      throw new SkillError("invalid_argument", 'param "credential": for auth_scheme basic the credential\'s value must be "user:password" (it has no ":")', 'Store it as "user:password", or use auth_scheme bearer.');
    }
    return `Basic ${Buffer.from(value, "utf8").toString("base64")}`;
  }
  return `Bearer ${value}`;
}

async function loadCa(settings: Readonly<Record<string, unknown>>): Promise<string[] | undefined> {
  const file = settings.ca_file;
  if (file === undefined || file === null || file === "") return undefined;
  if (typeof file !== "string") throw new SkillError("not_configured", "skills.probe_http.ca_file must be a path string", "Fix skills.probe_http.ca_file in the edge config.");
  try {
    return [...tls.rootCertificates, await readFile(file, "utf8")];
  } catch (err) {
    throw new SkillError("not_configured", `cannot read the extra CA bundle ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, "Fix or remove skills.probe_http.ca_file in the edge config.");
  }
}

export default defineSkill({
  ...PROBE_HTTP,
  async execute(ctx, params) {
    // The credential param holds the injected VALUE here; nothing of it may reach the output or an error.
    const secret = params.credential;
    if (secret === undefined) return probe(ctx, params, undefined);
    const hide = <T>(v: T): T => scrubSecrets(v, [{ name: "redacted", value: secret }]);
    try {
      return hide(await probe(ctx, params, authorizationHeader(secret, params.auth_scheme)));
    } catch (err) {
      if (err instanceof SkillError) throw new SkillError(err.code, hide(err.message), hide(err.hint));
      throw new Error(hide(String((err as Error)?.message ?? err)));
    }
  },
});

interface ProbeParams {
  url: string;
  method: "GET" | "HEAD";
  timeout: string;
  expect_status?: number;
  follow_redirects: boolean;
  credential?: string;
  auth_scheme: "bearer" | "basic";
}

async function probe(ctx: SkillContext, params: ProbeParams, authorization: string | undefined) {
  const started = performance.now();
  let url = parseTarget(params.url);
  const origin = url.origin;
  let authDropped = false;
  const ca = await loadCa(ctx.settings);
  const deadline = probeDeadline(ctx.signal, parseDuration(params.timeout), params.timeout);
  const redirects: { url: string; status: number }[] = [];
  let method: string = params.method;
  for (;;) {
    // Like browsers and curl: the credential goes to the URL's own origin only, never on to another after a redirect.
    const sendAuth = authorization !== undefined && url.origin === origin;
    if (authorization !== undefined && !sendAuth) authDropped = true;
    const hop = await probeOnce(url, method, deadline, ca, sendAuth ? authorization : undefined);
    const location = hop.head.headers.get("location");
    if (params.follow_redirects && REDIRECT_STATUSES.has(hop.head.status) && location) {
      let next: URL | undefined;
      try {
        next = new URL(location, url);
      } catch {
        next = undefined; // an unparsable Location ends the chain: report this response
      }
      if (next && (next.protocol === "http:" || next.protocol === "https:")) {
        if (redirects.length >= MAX_REDIRECTS) {
          throw new SkillError(
            "too_many_redirects",
            `more than ${MAX_REDIRECTS} redirects: ${[...redirects.map((r) => r.url), url.href].join(" → ")} → …`,
            "The site redirects in a loop or a long chain; probe with follow_redirects=false to inspect each hop's Location header.",
          );
        }
        redirects.push({ url: url.href, status: hop.head.status });
        next.username = "";
        next.password = "";
        if (hop.head.status === 303 && method !== "HEAD") method = "GET";
        url = next;
        continue;
      }
    }
    const status = hop.head.status;
    const headers: Record<string, string> = {};
    for (const name of SELECTED_HEADERS) {
      const v = hop.head.headers.get(name);
      if (v !== undefined) headers[name] = v.slice(0, 1000);
    }
    return {
      url: params.url,
      ...(redirects.length > 0 ? { final_url: url.href, redirects } : {}),
      status,
      status_text: hop.head.statusText,
      http_version: hop.head.version,
      ok: params.expect_status !== undefined ? status === params.expect_status : status >= 200 && status < 400,
      ...(params.expect_status !== undefined ? { expected_status: params.expect_status } : {}),
      address: hop.address,
      latency_ms: elapsedMs(started),
      ttfb_ms: hop.ttfb_ms,
      timings: hop.timings,
      headers,
      ...(hop.tls ? { tls: hop.tls } : {}),
      body_bytes: hop.parser.bodyBytes,
      body_truncated: hop.parser.bodyTruncated,
      ...(hop.parser.bodyIncomplete ? { body_incomplete: true } : {}),
      ...(authorization !== undefined ? { auth_scheme: params.auth_scheme, ...(authDropped ? { auth_dropped_on_redirect: true } : {}) } : {}),
    };
  }
}
