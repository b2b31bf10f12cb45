/**
 * A network namespace joined to the host by a veth pair on a private /30 (partition tests): the
 * host side gets `hostIp`, the namespace side `nsIp`, and the namespace's loopback is up.
 */
import { execFileSync } from "node:child_process";

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: "pipe", encoding: "utf8" });

/** The names and addresses of one namespace and its veth pair. */
export interface VethNamespace {
  ns: string;
  hostIf: string;
  nsIf: string;
  hostIp: string;
  nsIp: string;
}

/** Creates the namespace, the veth pair and their addresses. */
export function createVethNamespace(n: VethNamespace): void {
  sh("ip", ["netns", "add", n.ns]);
  sh("ip", ["link", "add", n.hostIf, "type", "veth", "peer", "name", n.nsIf, "netns", n.ns]);
  sh("ip", ["addr", "add", `${n.hostIp}/30`, "dev", n.hostIf]);
  sh("ip", ["link", "set", n.hostIf, "up"]);
  sh("ip", ["-n", n.ns, "addr", "add", `${n.nsIp}/30`, "dev", n.nsIf]);
  sh("ip", ["-n", n.ns, "link", "set", n.nsIf, "up"]);
  sh("ip", ["-n", n.ns, "link", "set", "lo", "up"]);
}

/**
 * Deletes the namespace, which deletes any nft table in it and the veth pair (both ends); a failure
 * is reported on the console, not thrown (it runs in afterAll).
 */
export function removeVethNamespace(n: VethNamespace, label: string): void {
  try {
    sh("ip", ["netns", "del", n.ns]);
  } catch (err) {
    console.warn(`${label}: ip netns del ${n.ns} failed:`, err);
  }
  try {
    sh("ip", ["link", "del", n.hostIf]);
  } catch {
    /* gone with the namespace */
  }
}
