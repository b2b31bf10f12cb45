/** Who is calling an RPC. Until identity (G1) lands every RPC caller is recorded as anonymous. */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Caller } from "../dispatch/dispatch.ts";
import { OngridError } from "../../skill/errors.ts";

/** Context key an authentication interceptor fills; read by every service. */
export const kCaller = createContextKey<Caller>({ userId: "anonymous", role: "anonymous" }, { description: "ongrid caller" });

/** The caller of the current RPC. */
export function callerOf(ctx: HandlerContext): Caller {
  return ctx.values.get(kCaller);
}

/** The caller's network address, from the connection (set by the front door). */
export const kPeerAddress = createContextKey<string>("", { description: "ongrid peer address" });

/** Whether an address is on this machine's loopback (127.0.0.0/8, ::1, or IPv4-mapped 127.x). */
export function isLoopback(address: string): boolean {
  return /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/.test(address);
}

/**
 * Until identity and roles exist (issue 5, G1), RPCs that hand out or take away credentials are
 * served only to callers on the manager's own host.
 */
export function requireLocalAdmin(ctx: HandlerContext, what: string): void {
  const peer = ctx.values.get(kPeerAddress);
  if (!isLoopback(peer)) {
    throw new OngridError(
      "permission_denied",
      `${what} is only served to callers on the manager's host until user authentication is enabled (caller: ${peer || "unknown"})`,
      "run `ongrid edge …` on the manager host",
    );
  }
}
