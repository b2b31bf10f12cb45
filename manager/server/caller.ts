/** Who is calling an RPC. Until identity (G1) lands every RPC caller is recorded as anonymous. */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Caller } from "../dispatch/dispatch.ts";

/** Context key an authentication interceptor fills; read by every service. */
export const kCaller = createContextKey<Caller>({ userId: "anonymous", role: "anonymous" }, { description: "ongrid caller" });

/** The caller of the current RPC. */
export function callerOf(ctx: HandlerContext): Caller {
  return ctx.values.get(kCaller);
}
