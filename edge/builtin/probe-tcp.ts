/** probe_tcp (D1): can this host open a TCP connection to host:port, how fast, and what does the service say first. */
import net from "node:net";
import { lookup } from "node:dns/promises";
import { defineSkill } from "../../skill/define.ts";
import { PROBE_TCP } from "../../skill/catalog/probe-tcp.ts";
import { SkillError } from "../../skill/errors.ts";
import { parseDuration } from "../../skill/duration.ts";

/** Quiet time after which a service is taken to have said all it says unprompted. */
const BANNER_SILENCE_MS = 500;

/** A probe's own timeout combined with the call's signal; `expired()` tells the probe timeout from a call deadline or cancel. */
export interface ProbeDeadline {
  signal: AbortSignal;
  expired(): boolean;
  /** Error to throw once `signal` has fired: a SkillError("timeout") for the probe's own timeout, else the call's abort reason. */
  error(what: string, hint: string): Error;
}

/** Starts the probe's own timeout; the call's deadline and cancellation still win. */
export function probeDeadline(callSignal: AbortSignal, timeoutMs: number, timeoutText: string): ProbeDeadline {
  const timer = AbortSignal.timeout(timeoutMs);
  const expired = () => timer.aborted && !callSignal.aborted;
  return {
    signal: AbortSignal.any([callSignal, timer]),
    expired,
    error(what, hint) {
      if (expired()) return new SkillError("timeout", `${what} did not complete within ${timeoutText}`, hint);
      return callSignal.reason instanceof Error ? callSignal.reason : new Error("the call was cancelled");
    },
  };
}

/** Settles like `p`, or rejects with `onAbort()` as soon as `signal` fires (for work that cannot itself be aborted). */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal, onAbort: () => Error): Promise<T> {
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener("abort", abort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(e);
      },
    );
  });
}

/** Milliseconds since `start`, to 0.1 ms: loopback and LAN latencies are well under one millisecond. */
export function elapsedMs(start: number): number {
  return Math.round((performance.now() - start) * 10) / 10;
}

/** An open TCP connection and how it was reached. */
export interface TcpConnection {
  socket: net.Socket;
  address: string;
  family: 4 | 6;
  dns_ms: number;
  connect_ms: number;
}

/**
 * Resolves `host` with the system resolver (as every client on this host would) and connects to the
 * first address, mapping each failure to its own code: dns_failed, connection_refused, unreachable,
 * timeout, connection_failed.
 */
export async function connectTcp(host: string, port: number, deadline: ProbeDeadline): Promise<TcpConnection> {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const target = `${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
  const dnsStart = performance.now();
  let address = bare;
  let family = net.isIP(bare) as 0 | 4 | 6;
  if (family === 0) {
    try {
      const found = await raceAbort(lookup(bare), deadline.signal, () =>
        deadline.error(`resolving ${bare}`, "The system resolver is slow or unreachable; check /etc/resolv.conf and the DNS servers with probe_dns."),
      );
      address = found.address;
      family = found.family === 6 ? 6 : 4;
    } catch (err) {
      if (deadline.signal.aborted || err instanceof SkillError) throw err;
      const code = (err as NodeJS.ErrnoException).code ?? "";
      throw new SkillError(
        "dns_failed",
        `cannot resolve ${bare}: ${code || (err as Error).message}`,
        code === "EAI_AGAIN"
          ? "The resolver did not answer (temporary failure); check the host's DNS servers with probe_dns, then retry."
          : "The name does not resolve on this host; check its spelling, or ask a specific server with probe_dns to see what it answers.",
      );
    }
  }
  const dns_ms = family === net.isIP(bare) ? 0 : elapsedMs(dnsStart); // an IP address needs no lookup
  const connectStart = performance.now();
  const socket = net.connect({ host: address, port, family });
  try {
    await new Promise<void>((resolve, reject) => {
      const cleanup = () => {
        socket.off("connect", onConnect);
        socket.off("error", onError);
        deadline.signal.removeEventListener("abort", onAbort);
      };
      const onConnect = () => {
        cleanup();
        resolve();
      };
      const onError = (err: Error) => {
        cleanup();
        reject(err);
      };
      const onAbort = () => {
        cleanup();
        reject(deadline.error(`connecting to ${target}`, `No answer from ${target}: a firewall may drop the packets, or the host is down; check the route and firewall rules, or retry with a longer timeout.`));
      };
      socket.once("connect", onConnect);
      socket.once("error", onError);
      if (deadline.signal.aborted) onAbort();
      else deadline.signal.addEventListener("abort", onAbort, { once: true });
    });
  } catch (err) {
    socket.destroy();
    if (err instanceof SkillError || deadline.signal.aborted) throw err;
    throw connectError(err as NodeJS.ErrnoException, target);
  }
  // A late error (reset by the peer) must never be unhandled; readers notice it through "close".
  socket.on("error", () => {});
  return { socket, address, family: family === 6 ? 6 : 4, dns_ms, connect_ms: elapsedMs(connectStart) };
}

function connectError(err: NodeJS.ErrnoException, target: string): SkillError {
  switch (err.code) {
    case "ECONNREFUSED":
      return new SkillError(
        "connection_refused",
        `connection to ${target} refused: nothing listens on that port`,
        "Check that the service is running and bound to this address and port (host_processes, the service's config); a wrong port number is the usual cause.",
      );
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "EADDRNOTAVAIL":
      return new SkillError("unreachable", `${target} is unreachable from this host (${err.code})`, "There is no route to that address from this edge; check the routing table and the interface addresses (host_netns_inspect).");
    case "ETIMEDOUT":
      return new SkillError("timeout", `connecting to ${target} timed out (${err.code})`, "Packets are dropped on the way; check firewall rules between this host and the target.");
    default:
      return new SkillError("connection_failed", `cannot connect to ${target}: ${err.code ?? err.message}`, "Retry once; if it persists, check the target host and the network path.");
  }
}

/** Makes a banner printable: invalid UTF-8 becomes U+FFFD and control characters other than tab, CR and LF become \xNN. */
export function printable(bytes: Buffer): string {
  return bytes
    .toString("utf8")
    .replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Reads what the peer sends unprompted: until `max` bytes, BANNER_SILENCE_MS of silence, the peer closing, or the deadline. */
function readBanner(socket: net.Socket, max: number, signal: AbortSignal): Promise<{ bytes: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let silence: NodeJS.Timeout | undefined;
    const done = (closed: boolean) => {
      clearTimeout(silence);
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onEnd);
      socket.off("error", onEnd);
      signal.removeEventListener("abort", onAbort);
      resolve({ bytes: Buffer.concat(chunks).subarray(0, max), closed });
    };
    const arm = () => {
      clearTimeout(silence);
      silence = setTimeout(() => done(false), BANNER_SILENCE_MS);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= max) done(false);
      else arm();
    };
    const onEnd = () => done(true);
    const onAbort = () => done(false);
    socket.on("data", onData);
    socket.once("end", onEnd);
    socket.once("close", onEnd);
    socket.once("error", onEnd);
    if (signal.aborted) return done(false);
    signal.addEventListener("abort", onAbort, { once: true });
    arm();
  });
}

export default defineSkill({
  ...PROBE_TCP,
  async execute(ctx, params) {
    const timeoutMs = parseDuration(params.timeout);
    const deadline = probeDeadline(ctx.signal, timeoutMs, params.timeout);
    const conn = await connectTcp(params.host, params.port, deadline);
    try {
      let banner: { bytes: Buffer; closed: boolean } = { bytes: Buffer.alloc(0), closed: false };
      if (params.read_banner) banner = await readBanner(conn.socket, params.banner_bytes, deadline.signal);
      if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error("the call was cancelled");
      return {
        host: params.host,
        port: params.port,
        connected: true,
        address: conn.address,
        family: conn.family,
        dns_ms: conn.dns_ms,
        connect_ms: conn.connect_ms,
        ...(params.read_banner
          ? { banner: printable(banner.bytes), banner_read_bytes: banner.bytes.length, closed_by_peer: banner.closed }
          : {}),
      };
    } finally {
      conn.socket.destroy();
    }
  },
});
