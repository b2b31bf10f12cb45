/**
 * Who calls (G1): the Caller every surface hands to the dispatcher, and the context key the
 * authentication interceptor (manager/rpc/auth.ts) fills before any service runs.
 */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { OngridError } from "../../skill/errors.ts";

/** Who is calling; "0"/"system" is the LLM caller (G1). */
export interface Caller {
  userId: string;
  /** viewer | operator | approver | admin | system (the LLM, on behalf of onBehalfOf). */
  role: string;
  /** Label selectors (user's, token's) an edge must all match to be reachable; none reaches all (G4). */
  reach?: string[];
  /** The API token that authenticated the call. */
  tokenId?: string;
  /** For the system caller: the user whose session it acts for. */
  onBehalfOf?: string;
  /** For the system caller: that user's role; a viewer's agent is held to what a viewer may run. */
  onBehalfRole?: string;
}

/** The user a call counts to for skills.max_calls_per_user: the one the LLM acts for, else the caller. */
export function callUserOf(caller: Caller): string {
  return caller.onBehalfOf || caller.userId;
}


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
