/** Destroyers of the network (A6): firewall flushes and policies, rule sets from files or stdin, address and route flushes. */
import { hasLong, hasShort, type DangerRule } from "./common.ts";

/** Network destroyers. */
export const networkRule: DangerRule = (call) => {
  const { name } = call;
  const words = call.args.map((w) => w.value);
  if (/^(ip6?tables|ebtables|arptables)(-legacy|-nft)?$/.test(name)) {
    if (hasShort(call, "FXPZ") || hasLong(call, "flush", "delete-chain", "policy", "zero")) return `${name} flushes rules or sets a chain's policy`;
    return undefined;
  }
  if (/^(ip6?tables|ebtables|arptables)(-legacy|-nft)?-restore$/.test(name) || name === "ipset" || name === "tc") return `${name} replaces rules wholesale`;
  if (name === "nft") {
    if (hasShort(call, "f") || hasLong(call, "file")) return "nft runs a rule set from a file or stdin";
    if (words.some((w) => /^(flush|delete|destroy|reset)$/.test(w))) return "nft flushes or deletes rules";
    if (call.args.some((w) => w.dynamic)) return "nft with a rule only known at run time";
    return undefined;
  }
  if (name === "ufw" && words.some((w) => w === "disable" || w === "reset")) return "ufw disable/reset";
  if (name === "firewall-cmd" && words.some((w) => /^--(panic-on|complete-reload|reset-to-defaults)/.test(w))) return "firewall-cmd drops all traffic or resets";
  if (name === "ip" && words.some((w) => w === "flush")) return "ip flushes addresses, routes or neighbours";
  if (name === "ip" && words.includes("link") && words.includes("down")) return "ip link set … down";
  if ((name === "ifdown" || name === "ifconfig") && (name === "ifdown" || words.includes("down"))) return `${name} takes an interface down`;
  return undefined;
};
