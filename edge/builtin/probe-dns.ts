/** probe_dns (D1): ask this host's DNS servers, or a given one, for one record type of one name. */
import net from "node:net";
import { getServers, Resolver } from "node:dns/promises";
import { defineSkill } from "../../skill/define.ts";
import { PROBE_DNS, RECORD_TYPES } from "../../skill/catalog/probe-dns.ts";
import { SkillError } from "../../skill/errors.ts";
import { parseDuration } from "../../skill/duration.ts";
import { elapsedMs, probeDeadline } from "./probe-tcp.ts";

type RecordType = (typeof RECORD_TYPES)[number];


/** c-ares error codes that are DNS answers (an rcode), not failures to get one. */
const ANSWER_CODES: Readonly<Record<string, string>> = {
  ENODATA: "NOERROR",
  ENOTFOUND: "NXDOMAIN",
  ESERVFAIL: "SERVFAIL",
  EREFUSED: "REFUSED",
  ENOTIMP: "NOTIMP",
  EFORMERR: "FORMERR",
};

/** Turns the resolver param into the form Resolver#setServers takes ("1.2.3.4:53", "[::1]:53", "::1"); invalid_argument otherwise. */
export function parseResolver(text: string): string {
  const bad = (why: string) =>
    new SkillError("invalid_argument", `param "resolver": ${JSON.stringify(text.slice(0, 80))} ${why}`, 'Give the DNS server as an IP address with an optional port: "10.0.0.2", "10.0.0.2:5353", "[fd00::53]:53" or "fd00::53".');
  let host = text;
  let port: string | undefined;
  const bracketed = /^\[(.+)\](?::(\d+))?$/.exec(text);
  const v4 = /^([\d.]+)(?::(\d+))?$/.exec(text);
  if (bracketed) [, host, port] = bracketed;
  else if (v4) [, host, port] = v4;
  const family = net.isIP(host);
  if (family === 0 || (bracketed && family !== 6) || (v4 && family !== 4)) throw bad("is not an IP address");
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) throw bad("has a port outside 1-65535");
  if (port === undefined) return host;
  return family === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The name a PTR query asks for: IP addresses become their in-addr.arpa / ip6.arpa name, anything else is kept. */
export function reverseName(name: string): string {
  if (net.isIPv4(name)) return `${name.split(".").reverse().join(".")}.in-addr.arpa`;
  if (!net.isIPv6(name)) return name;
  let text = name;
  const v4tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4tail) {
    const [a, b, c, d] = v4tail[1].split(".").map(Number);
    text = `${text.slice(0, -v4tail[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left, right] = text.includes("::") ? text.split("::") : [text, undefined];
  const l = left ? left.split(":") : [];
  const r = right ? right.split(":") : [];
  const groups = right === undefined ? l : [...l, ...Array(8 - l.length - r.length).fill("0"), ...r];
  const nibbles = groups.map((g) => g.padStart(4, "0")).join("");
  return `${[...nibbles].reverse().join(".")}.ip6.arpa`;
}

async function query(resolver: Resolver, type: RecordType, name: string): Promise<Record<string, unknown>[]> {
  switch (type) {
    case "A":
      return (await resolver.resolve4(name, { ttl: true })).map((a) => ({ address: a.address, ttl: a.ttl }));
    case "AAAA":
      return (await resolver.resolve6(name, { ttl: true })).map((a) => ({ address: a.address, ttl: a.ttl }));
    case "CNAME":
      return (await resolver.resolveCname(name)).map((target) => ({ name: target }));
    case "MX":
      return (await resolver.resolveMx(name)).sort((a, b) => a.priority - b.priority).map((m) => ({ exchange: m.exchange, priority: m.priority }));
    case "TXT":
      return (await resolver.resolveTxt(name)).map((chunks) => ({ text: chunks.join("").slice(0, 4096) }));
    case "NS":
      return (await resolver.resolveNs(name)).map((ns) => ({ name: ns }));
    case "SRV":
      return (await resolver.resolveSrv(name))
        .sort((a, b) => a.priority - b.priority || b.weight - a.weight)
        .map((s) => ({ name: s.name, port: s.port, priority: s.priority, weight: s.weight }));
    case "PTR":
      return (await resolver.resolvePtr(name)).map((ptr) => ({ name: ptr }));
  }
}

export default defineSkill({
  ...PROBE_DNS,
  async execute(ctx, params) {
    const name = params.name.startsWith("[") && params.name.endsWith("]") ? params.name.slice(1, -1) : params.name;
    const queryName = params.type === "PTR" ? reverseName(name) : name;
    const server = params.resolver !== undefined ? parseResolver(params.resolver) : undefined;
    if (params.type !== "PTR" && net.isIP(name) !== 0) {
      // An IP literal is not a name: a query would answer NXDOMAIN, which reads as "the name does not resolve".
      return {
        name: params.name,
        type: params.type,
        ip_literal: true,
        records: [],
        note: `${name} is an IP literal: it needs no resolution, so no DNS query was made; ask type PTR for its reverse name, or probe_tcp/probe_http it directly`,
      };
    }
    const timeoutMs = parseDuration(params.timeout);
    const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
    if (server) resolver.setServers([server]);
    const servers = server ? [server] : getServers();
    const where = server ?? `this host's DNS servers (${servers.join(", ") || "none configured"})`;
    const deadline = probeDeadline(ctx.signal, timeoutMs, params.timeout);
    const cancel = () => resolver.cancel();
    deadline.signal.addEventListener("abort", cancel, { once: true });
    const started = performance.now();
    const base = {
      name: params.name,
      ...(queryName !== name ? { query_name: queryName } : {}),
      type: params.type,
      resolver: server ?? "system",
      ...(server ? {} : { servers }),
    };
    try {
      const records = await query(resolver, params.type, queryName);
      return { ...base, rcode: "NOERROR", records, latency_ms: elapsedMs(started) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "";
      const rcode = ANSWER_CODES[code];
      if (rcode) return { ...base, rcode, records: [], latency_ms: elapsedMs(started) };
      const timeoutHint = `${server ? "The server" : "This host's DNS servers"} did not answer: it may be down, overloaded or filtered (UDP port 53); check with probe_tcp on port 53, or ask another resolver.`;
      if (deadline.signal.aborted) throw deadline.error(`the ${params.type} query for ${queryName} to ${where}`, timeoutHint);
      if (code === "ETIMEOUT") throw new SkillError("timeout", `no answer from ${where} for ${queryName} within ${params.timeout}`, timeoutHint);
      if (code === "ECONNREFUSED") {
        throw new SkillError(
          "resolver_unreachable",
          `no DNS server answers at ${where} (connection refused)`,
          server ? "Nothing listens for DNS at that address and port; check the address, the port and that the DNS service is running." : "Check the nameserver lines of /etc/resolv.conf and that those servers run.",
        );
      }
      if (code === "EBADRESP" || code === "EBADFAMILY") {
        throw new SkillError("bad_response", `${where} sent a malformed answer for ${queryName} (${code})`, "The server is not a working DNS server, or something in the path rewrites DNS; try another resolver.");
      }
      if (code === "EBADNAME" || code === "EBADQUERY") {
        throw new SkillError("invalid_argument", `param "name": ${JSON.stringify(params.name)} is not a name a DNS query can carry (${code})`, "Pass a DNS name such as api.example.com.");
      }
      throw new SkillError("dns_failed", `the ${params.type} query for ${queryName} to ${where} failed: ${code || (err as Error).message}`, "Retry once; if it persists, try another resolver.");
    } finally {
      deadline.signal.removeEventListener("abort", cancel);
    }
  },
});
