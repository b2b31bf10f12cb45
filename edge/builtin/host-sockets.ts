/** host_sockets (K5): listening TCP sockets and established connections with their processes, read from /proc (no dependency on ss). */
import { readdir, readFile, readlink } from "node:fs/promises";
import { networkInterfaces } from "node:os";
import path from "node:path";
import { defineSkill } from "../../skill/define.ts";
import { HOST_SOCKETS, type Connection, type HostSocketsOutput, type ListeningSocket } from "../../skill/catalog/host-sockets.ts";
import { SkillError } from "../../skill/errors.ts";
import { isLocalOnly, parseFibTrieLocal, parseIfInet6, parseProcNetTcp, type ProcSocket } from "./proc-net.ts";

/** Processes whose fd tables are read at once. */
const BATCH = 64;
const WILDCARDS = new Set(["0.0.0.0", "::"]);

/** A file's text, or undefined when it does not exist (tcp6 on a host without IPv6). */
async function optional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * The process holding each socket inode, found through /proc/PID/fd links (socket:[inode]).
 * Another user's fd table cannot be read unless the edge is root: those sockets stay unowned.
 */
export async function socketOwners(proc: string, inodes: ReadonlySet<number>, signal: AbortSignal): Promise<Map<number, { pid: number; process: string }>> {
  const found = new Map<number, { pid: number; process: string }>();
  if (inodes.size === 0) return found;
  let pids: string[];
  try {
    pids = (await readdir(proc)).filter((n) => /^\d+$/.test(n));
  } catch {
    return found;
  }
  const names = new Map<number, string>();
  const scan = async (pid: string) => {
    let fds: string[];
    try {
      fds = await readdir(path.join(proc, pid, "fd"));
    } catch {
      return; // ended, or not ours to read
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = await readlink(path.join(proc, pid, "fd", fd));
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (!m) continue;
      const inode = Number(m[1]);
      if (!inodes.has(inode) || found.has(inode)) continue;
      const n = Number(pid);
      if (!names.has(n)) names.set(n, ((await readFile(path.join(proc, pid, "comm"), "utf8").catch(() => "")) as string).trim());
      found.set(inode, { pid: n, process: names.get(n)! });
    }
  };
  for (let i = 0; i < pids.length && found.size < inodes.size; i += BATCH) {
    signal.throwIfAborted();
    await Promise.all(pids.slice(i, i + BATCH).map(scan));
  }
  return found;
}

/** The host's own addresses from /proc (IPv4 from fib_trie, IPv6 from if_inet6), else from the interfaces Node sees; loopback and link-local left out. */
async function hostAddresses(proc: string): Promise<string[]> {
  const v4 = await optional(path.join(proc, "net", "fib_trie")).catch(() => undefined);
  const v6 = await optional(path.join(proc, "net", "if_inet6")).catch(() => undefined);
  let all = [...(v4 ? parseFibTrieLocal(v4) : []), ...(v6 ? parseIfInet6(v6) : [])];
  if (v4 === undefined) all = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((a) => a.address));
  return [...new Set(all.filter((a) => !isLocalOnly(a)))].sort();
}

/** Whether a connection's local end is one of the listeners (same port, the listener's address or a wildcard). */
function listenerIndex(listeners: ProcSocket[]): (s: ProcSocket) => boolean {
  const byPort = new Map<number, Set<string>>();
  for (const l of listeners) {
    const set = byPort.get(l.localPort) ?? new Set<string>();
    set.add(l.localAddress);
    byPort.set(l.localPort, set);
  }
  return (s) => {
    const set = byPort.get(s.localPort);
    if (!set) return false;
    for (const a of set) if (WILDCARDS.has(a) || a === s.localAddress) return true;
    return false;
  };
}

/** Orders connections: most merged first, then by peer and port, so the output is stable from call to call. */
function byWeight(a: Connection, b: Connection): number {
  return b.count - a.count || a.direction.localeCompare(b.direction) || a.peer_address.localeCompare(b.peer_address) || (a.peer_port ?? 0) - (b.peer_port ?? 0) || (a.local_port ?? 0) - (b.local_port ?? 0) || (a.pid ?? 0) - (b.pid ?? 0);
}

export default defineSkill({
  ...HOST_SOCKETS,
  async execute(ctx, params): Promise<HostSocketsOutput> {
    const proc = typeof ctx.settings.proc_root === "string" && ctx.settings.proc_root ? ctx.settings.proc_root : "/proc";
    let rows: ProcSocket[];
    try {
      const tcp = await readFile(path.join(proc, "net", "tcp"), "utf8");
      const tcp6 = await optional(path.join(proc, "net", "tcp6"));
      rows = [...parseProcNetTcp(tcp, "tcp"), ...(tcp6 ? parseProcNetTcp(tcp6, "tcp6") : [])];
    } catch (err) {
      ctx.signal.throwIfAborted();
      throw new SkillError("proc_unavailable", `cannot read TCP sockets from ${proc}/net/tcp: ${(err as Error).message}`, "host_sockets needs a Linux /proc; set skills.host_sockets.proc_root when the host's /proc is mounted elsewhere.");
    }
    const port = params.port as number | undefined;
    const wanted = (s: ProcSocket) => port === undefined || s.localPort === port || s.remotePort === port;
    const listeners = rows.filter((s) => s.state === "LISTEN");
    const established = rows.filter((s) => s.state === "ESTABLISHED");
    const isInbound = listenerIndex(listeners);
    const shownListeners = params.state === "established" ? [] : listeners.filter(wanted);
    const shownConns = params.state === "listening" ? [] : established.filter(wanted);

    const owners = await socketOwners(proc, new Set([...shownListeners, ...shownConns].map((s) => s.inode).filter((n) => n > 0)), ctx.signal);
    const owner = (s: ProcSocket) => owners.get(s.inode) ?? { pid: null, process: null };
    const unowned = [...shownListeners, ...shownConns].filter((s) => !owners.has(s.inode)).length;

    const listening = new Map<string, ListeningSocket>();
    for (const s of shownListeners) {
      const o = owner(s);
      const key = `${s.protocol}|${s.localAddress}|${s.localPort}|${o.pid}`;
      if (!listening.has(key)) listening.set(key, { protocol: s.protocol, address: s.localAddress, port: s.localPort, pid: o.pid, process: o.process });
    }
    const connections = new Map<string, Connection>();
    for (const s of shownConns) {
      const o = owner(s);
      const inbound = isInbound(s);
      const merge = params.aggregate !== false;
      const c: Connection = {
        direction: inbound ? "inbound" : "outbound",
        protocol: s.protocol,
        local_address: s.localAddress,
        local_port: merge && !inbound ? null : s.localPort,
        peer_address: s.remoteAddress,
        peer_port: merge && inbound ? null : s.remotePort,
        state: s.state,
        pid: o.pid,
        process: o.process,
        count: 1,
      };
      const key = `${c.direction}|${c.protocol}|${c.local_address}|${c.local_port}|${c.peer_address}|${c.peer_port}|${c.pid}`;
      const seen = connections.get(key);
      if (seen) seen.count++;
      else connections.set(key, c);
    }
    const listed = [...listening.values()].sort((a, b) => a.port - b.port || a.address.localeCompare(b.address) || (a.pid ?? 0) - (b.pid ?? 0));
    const conns = [...connections.values()].sort(byWeight);
    const limit = params.limit as number;
    return {
      addresses: await hostAddresses(proc),
      listening: listed.slice(0, limit),
      connections: conns.slice(0, limit),
      totals: { listening: shownListeners.length, connections: shownConns.length, unowned },
      truncated: listed.length > limit || conns.length > limit,
    };
  },
});
