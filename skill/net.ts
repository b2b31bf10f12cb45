/** Network helpers shared by the manager, the edge and the CLI. */

/**
 * Whether a host name or address (as in a URL's hostname or server.host; IPv6 with or without
 * brackets) names this machine's loopback interface, where plaintext never leaves the machine.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * Why a manager URL may not be dialed, or undefined when it may: it must be http:// or https://,
 * and https:// when TLS is required. `tlsRequiredBy` is asked only for an http:// URL and names
 * what requires TLS (for the message), or gives undefined when nothing does.
 */
export function managerUrlProblem(url: URL, tlsRequiredBy: () => string | undefined): string | undefined {
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http:// or https:// URL";
  if (url.protocol !== "http:") return undefined;
  const by = tlsRequiredBy();
  return by ? `${url.origin} is plaintext and TLS is required (${by}); use an https:// URL` : undefined;
}
