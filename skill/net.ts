/** Network helpers shared by the manager, the edge and the CLI. */

/**
 * Whether a host name or address (as in a URL's hostname or server.host; IPv6 with or without
 * brackets) names this machine's loopback interface, where plaintext never leaves the machine.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
