/**
 * The managers an edge may dial (M2): the URLs of `--manager URL1,URL2,…`, each name resolved
 * before every round to all its addresses (a DNS name standing for several managers), in the
 * order the edge prefers: as listed (`--manager-order first`), or a random order drawn once per
 * edge process (`random`, the default: a fleet spreads over the managers, and each edge returns
 * to the same one after a failover).
 */
import { lookup } from "node:dns/promises";
import net from "node:net";
import type { DialPlan, DialTarget } from "./dialer.ts";
import { createTunnelTransport } from "./transport.ts";

/** How long the rebalancing probe's TCP connect may take. */
const PROBE_TIMEOUT_MS = 2_000;

/** Whether a TCP connection to host:port opens within PROBE_TIMEOUT_MS. */
export function tcpProbe(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      clearTimeout(t);
      s.destroy();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), PROBE_TIMEOUT_MS);
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

/** Fisher–Yates with an injectable random source (tests). */
export function shuffled<T>(list: readonly T[], random = Math.random): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** The dial plan over `urls` (already validated). `resolve` is for tests. */
export function createDialPlan(o: {
  urls: URL[];
  order: "first" | "random";
  rebalanceMs: number;
  ca?: Buffer;
  random?: () => number;
  resolve?: (host: string) => Promise<string[]>;
}): DialPlan {
  const random = o.random ?? Math.random;
  const urls = o.order === "random" ? shuffled(o.urls, random) : [...o.urls];
  /** A stable random rank per address, so a name's addresses keep one order across rounds. */
  const rank = new Map<string, number>();
  const resolve = o.resolve ?? (async (host: string) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address));
  const transports = new Map<string, DialTarget>();
  const target = (url: URL, address?: string): DialTarget => {
    const base = url.toString().replace(/\/$/, "");
    const label = address ? `${url.origin} (${address})` : url.origin;
    let t = transports.get(label);
    if (!t) {
      const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
      const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
      t = { label, transport: createTunnelTransport(base, { ca: o.ca, ...(address ? { connectAddress: address } : {}) }), probe: () => tcpProbe(address ?? host, port) };
      transports.set(label, t);
    }
    return t;
  };
  return {
    rebalanceMs: o.rebalanceMs,
    async targets() {
      const out: DialTarget[] = [];
      for (const url of urls) {
        const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
        if (net.isIP(host)) {
          out.push(target(url));
          continue;
        }
        let addresses: string[];
        try {
          addresses = [...new Set(await resolve(host))];
        } catch {
          addresses = [];
        }
        if (addresses.length <= 1) {
          out.push(target(url));
          continue;
        }
        for (const a of addresses) if (!rank.has(a)) rank.set(a, o.order === "random" ? random() : rank.size);
        addresses.sort((x, y) => rank.get(x)! - rank.get(y)!);
        for (const a of addresses) out.push(target(url, a));
      }
      return out;
    },
  };
}
