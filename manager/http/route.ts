/** A plain HTTP handler on the manager's one port, beside the RPCs (metrics, webhooks, the console). */
import type { ConnectNodeAdapterOptions } from "@connectrpc/connect-node";

type Fallback = NonNullable<ConnectNodeAdapterOptions["fallback"]>;

/** Answers a request it owns and returns true; returns false to let the next handler try. */
export type HttpRoute = (req: Parameters<Fallback>[0], res: Parameters<Fallback>[1]) => boolean;
