/** A free TCP port on 127.0.0.1 (no test framework here: the benchmarks use it too). */
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1 (bound and released; the caller binds it right away). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * A free TCP port on 127.0.0.1 below the kernel's ephemeral range (net.ipv4.ip_local_port_range),
 * for a server that is stopped and started again on the same port. While it is down, a port of
 * the ephemeral range can be handed to another listener binding port 0, or be the local port of a
 * client dialing it — a TCP self-connect, which "succeeds" and then never answers; either way a
 * client reconnecting during the outage waits for its connect timeout instead of being refused.
 * Ports below the range are never handed out by the kernel.
 */
export async function freeStablePort(): Promise<number> {
  let low = 32768;
  try {
    low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: keep the usual default
  }
  const from = Math.min(10_000, low - 1000);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = from + Math.floor(Math.random() * (low - from));
    if (await canBind(port)) return port;
  }
  throw new Error(`no free port between ${from} and ${low - 1} after 200 tries`);
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}
