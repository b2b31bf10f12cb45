/** The safe network readers (A6): ss and `ip … show`. */
import type { CommandSpec } from "../options.ts";

const NONE = { reads: [], lists: [] };

/** ip's global options allowed before the object, exactly (ip also takes prefixes; only these words pass). */
const IP_GLOBAL = new Set(["-4", "-6", "-s", "-stats", "-statistics", "-d", "-details", "-j", "-json", "-p", "-pretty", "-o", "-oneline", "-c", "-color", "-br", "-brief", "-h", "-human", "-r", "-resolve"]);
/** Objects ip may show, each with the verbs that only read. */
const IP_OBJECTS: Record<string, readonly string[]> = {
  addr: ["show", "list", "ls"],
  address: ["show", "list", "ls"],
  a: ["show", "list", "ls"],
  link: ["show", "list", "ls"],
  l: ["show", "list", "ls"],
  route: ["show", "list", "ls", "get"],
  r: ["show", "list", "ls", "get"],
  ro: ["show", "list", "ls", "get"],
  neigh: ["show", "list", "ls"],
  neighbor: ["show", "list", "ls"],
  neighbour: ["show", "list", "ls"],
  n: ["show", "list", "ls"],
  rule: ["show", "list", "ls"],
  netns: ["list", "ls"],
};
/** The words of a show filter (`dev eth0`, `table main`, `scope link`): plain names and addresses. */
const IP_ARG = /^[A-Za-z0-9_:.\/%@+-]{1,64}$/;

/** The network commands, by name. */
export const NETWORK_COMMANDS: Record<string, CommandSpec> = {
  ss: {
    // No -K/--kill (closes sockets), -F/--filter (reads a file), -D/--diag (writes a file), -N (another namespace), -E (never ends).
    options: {
      flags: "tulnpaxws46emioHrOM0dSb",
      valued: "fA",
      long: { tcp: "flag", udp: "flag", raw: "flag", unix: "flag", listening: "flag", numeric: "flag", processes: "flag", all: "flag", summary: "flag", extended: "flag", memory: "flag", info: "flag", options: "flag", "no-header": "flag", resolve: "flag", ipv4: "flag", ipv6: "flag", oneline: "flag", family: "value", query: "value", socket: "value" },
      never: ["-K", "--kill", "-F", "--filter", "-D", "--diag", "-N", "--net", "-E", "--events"],
    },
    check: (a) => {
      const bad = a.operands.find((o) => !/^[A-Za-z0-9_:.,=!<>()\[\]\/%*-]{1,128}$/.test(o));
      return bad === undefined ? NONE : `ss filter word "${bad}" has characters outside a filter's`;
    },
  },
  ip: { raw: (args) => ipProblem(args) ?? NONE },
};

/** ip has its own grammar: `ip [global options] OBJECT [VERB [args]]`. */
export function ipProblem(args: readonly string[]): string | undefined {
  let i = 0;
  while (i < args.length && args[i].startsWith("-")) {
    if (!IP_GLOBAL.has(args[i])) return `ip option ${args[i]} is not on the allowlist`;
    i++;
  }
  const object = args[i++];
  if (object === undefined) return "ip needs an object (addr, link, route, neigh, rule)";
  const verbs = Object.hasOwn(IP_OBJECTS, object) ? IP_OBJECTS[object] : undefined;
  if (!verbs) return `ip object "${object}" is not on the allowlist`;
  const verb = args[i];
  if (verb === undefined) return object === "netns" ? "ip netns needs list" : undefined;
  if (!verbs.includes(verb)) return `ip ${object} ${verb} is not a read-only verb (${verbs.join(", ")})`;
  const bad = args.slice(i + 1).find((w) => !IP_ARG.test(w) || w === "exec");
  return bad === undefined ? undefined : `ip ${object} ${verb} argument "${bad}" is not a plain name or address`;
}
