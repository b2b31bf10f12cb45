/**
 * Parsers of the kernel's socket tables and address lists under /proc/net, for host_sockets: no
 * dependency on ss or netstat, and every function takes the file's text so tests feed it real
 * captures.
 */
import { endianness } from "node:os";

/** TCP states as /proc/net/tcp numbers them (include/net/tcp_states.h). */
const TCP_STATES: Record<number, string> = {
  1: "ESTABLISHED",
  2: "SYN_SENT",
  3: "SYN_RECV",
  4: "FIN_WAIT1",
  5: "FIN_WAIT2",
  6: "TIME_WAIT",
  7: "CLOSE",
  8: "CLOSE_WAIT",
  9: "LAST_ACK",
  10: "LISTEN",
  11: "CLOSING",
  12: "NEW_SYN_RECV",
};

/** One row of /proc/net/tcp or tcp6. */
export interface ProcSocket {
  protocol: "tcp" | "tcp6";
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  state: string;
  uid: number;
  /** The socket's inode: /proc/PID/fd/N links to socket:[inode] for the process holding it (0: none, e.g. TIME_WAIT). */
  inode: number;
}

const LITTLE = endianness() === "LE";

/** One 32-bit word as the kernel prints it (%08X of the word in host order) → its four bytes in network order. */
function wordBytes(hex: string): number[] {
  const n = parseInt(hex, 16);
  const b = [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
  return LITTLE ? b.reverse() : b;
}

/** An IPv6 address from 16 bytes, compressed (RFC 5952); an IPv4-mapped one (::ffff:a.b.c.d) becomes the IPv4 address. */
export function ipv6FromBytes(b: number[]): string {
  if (b.slice(0, 10).every((x) => x === 0) && b[10] === 255 && b[11] === 255) return b.slice(12).join(".");
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((b[i] << 8) | b[i + 1]);
  // The longest run of two or more zero groups becomes "::" (the first one on a tie).
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

/** An address field of /proc/net/tcp (8 hex digits) or tcp6 (32), as text. */
export function decodeAddress(hex: string): string {
  if (hex.length === 8) return wordBytes(hex).join(".");
  if (hex.length === 32) {
    const bytes: number[] = [];
    for (let i = 0; i < 32; i += 8) bytes.push(...wordBytes(hex.slice(i, i + 8)));
    return ipv6FromBytes(bytes);
  }
  throw new Error(`address field "${hex.slice(0, 40)}" is neither 8 nor 32 hex digits`);
}

/** Parses /proc/net/tcp or tcp6; lines that do not parse are skipped. */
export function parseProcNetTcp(text: string, protocol: "tcp" | "tcp6"): ProcSocket[] {
  const out: ProcSocket[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const [local, remote, st] = [f[1], f[2], f[3]];
    const li = local.indexOf(":");
    const ri = remote.indexOf(":");
    if (li < 0 || ri < 0 || !/^[0-9A-Fa-f]+$/.test(st)) continue;
    try {
      out.push({
        protocol,
        localAddress: decodeAddress(local.slice(0, li)),
        localPort: parseInt(local.slice(li + 1), 16),
        remoteAddress: decodeAddress(remote.slice(0, ri)),
        remotePort: parseInt(remote.slice(ri + 1), 16),
        state: TCP_STATES[parseInt(st, 16)] ?? `UNKNOWN_${st}`,
        uid: Number(f[7]),
        inode: Number(f[9]),
      });
    } catch {
      /* a malformed row: skipped */
    }
  }
  return out;
}

/** Whether an address is loopback (127/8, ::1) or link-local (169.254/16, fe80::/10): never another host's address. */
export function isLocalOnly(address: string): boolean {
  return /^127\./.test(address) || address === "::1" || /^169\.254\./.test(address) || /^fe[89ab][0-9a-f]?:/i.test(address);
}

/** The local IPv4 addresses in /proc/net/fib_trie (the "/32 host LOCAL" leaves). */
export function parseFibTrieLocal(text: string): string[] {
  const out = new Set<string>();
  let last = "";
  for (const line of text.split("\n")) {
    const leaf = /\|--\s+(\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (leaf) {
      last = leaf[1];
      continue;
    }
    if (last && /\/32 host LOCAL/.test(line)) out.add(last);
  }
  return [...out];
}

/** The IPv6 addresses in /proc/net/if_inet6 (32 hex digits in network order, then index, prefix, scope, flags, name). */
export function parseIfInet6(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split("\n")) {
    const hex = line.trim().split(/\s+/)[0];
    if (!/^[0-9a-fA-F]{32}$/.test(hex ?? "")) continue;
    const bytes: number[] = [];
    for (let i = 0; i < 32; i += 2) bytes.push(parseInt(hex.slice(i, i + 2), 16));
    out.add(ipv6FromBytes(bytes));
  }
  return [...out];
}
