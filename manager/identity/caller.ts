/** Who is calling an RPC: set by the authentication interceptor (manager/rpc/auth.ts) before any service runs. */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Caller } from "../calls/execute.ts";
import { OngridError } from "../../skill/errors.ts";

/** Context key the authentication interceptor fills; read by every service. */
export const kCaller = createContextKey<Caller | undefined>(undefined, { description: "ongrid caller" });

/** The authenticated caller of the current RPC (a handler reached without one is a bug: refused). */
export function callerOf(ctx: HandlerContext): Caller {
  const c = ctx.values.get(kCaller);
  if (!c) throw new OngridError("unauthenticated", "the call was not authenticated");
  return c;
}

/** The caller's network address, from the connection (set by the front door). */
export const kPeerAddress = createContextKey<string>("", { description: "ongrid peer address" });
