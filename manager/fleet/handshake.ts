/**
 * The opening of an edge's tunnel (C1, C4): its bearer token looked up, then hello, an inventory
 * request when the hello names an inventory the manager does not hold, and welcome. Until it is
 * welcomed, a stream is tracked so that revoking or rotating the token closes it too.
 */
import type http2 from "node:http2";
import type { Logger } from "pino";
import { Code } from "@connectrpc/connect";
import type { OngridError } from "../../skill/errors.ts";
import { formatDuration } from "../../skill/duration.ts";
import { labelProblem } from "../../skill/identity.ts";
import { ConnectRequestSchema, ConnectResponseSchema, type ConnectRequest, type Hello } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import { acceptBidi, checkGrpcRequest, refuse, type GrpcStatus } from "./grpc-stream.ts";
import type { EdgeTokens } from "./edge-tokens.ts";
import { MAX_SKILLS_PER_EDGE, type Inventory, type InventoryCache } from "./inventory-cache.ts";
import type { LiveSession, TunnelCall } from "./live-session.ts";
import type { EnrolledEdge } from "./sessions.ts";

/**
 * The token of an `authorization: Bearer <token>` header; undefined for any other form. Not
 * manager/rpc/auth.ts's bearerToken: that one also takes trailing whitespace, and a value ending
 * in a no-break space (U+00A0, which HTTP/2 delivers, unlike a trailing space or tab) would then
 * let an edge in that this refuses.
 */
function bearer(headers: http2.IncomingHttpHeaders): string | undefined {
  const h = String(headers.authorization ?? "");
  const m = /^Bearer\s+(\S+)$/i.exec(h);
  return m?.[1];
}

/** Why a frame that should be the hello is refused. */
function notHello(msg: ConnectRequest): string {
  const unknown = msg.$unknown?.[0];
  const got = msg.frame.case ?? (unknown ? `an unknown frame (field ${unknown.no})` : "an empty frame");
  return `the first frame must be hello, got ${got}`;
}

/** The enrolled edge of a tunnel request, or undefined when the request was refused (not gRPC, no token, a bad one, or the lookup failed). */
async function authenticate(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, tokens: EdgeTokens, log: Logger): Promise<EnrolledEdge | undefined> {
  const refused = (status: GrpcStatus) => void refuse(stream, status);
  const bad = checkGrpcRequest(headers);
  if (bad) return refused(bad);
  const token = bearer(headers);
  if (!token) return refused({ code: Code.Unauthenticated, message: "missing edge token; send it in the `authorization` header, as `Bearer` followed by the token" });
  let row;
  try {
    row = await tokens.authenticate(token);
  } catch (err) {
    const e = err as OngridError;
    if (e.code === "unauthenticated") {
      log.warn({ reason: e.message }, "edge refused: bad token");
      return refused({ code: Code.Unauthenticated, message: e.message });
    }
    log.error({ err: String(err) }, "edge authentication failed");
    return refused({ code: Code.Unavailable, message: "edge authentication is unavailable; retry later" });
  }
  return { id: row.id, tokenHash: row.tokenHash, labels: row.labels ?? {} };
}

/** What a welcome needs: the token re-check, the inventory cache, and the admission of the edge. */
interface WelcomeDeps {
  tokens: EdgeTokens;
  inventories: InventoryCache;
  admit(call: TunnelCall, edge: EnrolledEdge, hello: Hello, inv: Inventory): LiveSession;
}

/**
 * Checks a hello and admits the edge, or — when the hello names an inventory by a digest the
 * manager does not hold — answers "inventory": the caller asks the edge for its inventory and
 * admits it when the inventory frame arrives.
 */
async function welcome(deps: WelcomeDeps, call: TunnelCall, edge: EnrolledEdge, hello: Hello): Promise<LiveSession | "inventory" | undefined> {
  const { tokens, inventories } = deps;
  if (hello.edgeId !== edge.id) {
    call.end({ code: Code.PermissionDenied, message: `this token is enrolled for edge "${edge.id}", not "${hello.edgeId}"` });
    return undefined;
  }
  const labelsBad = labelProblem(hello.labels);
  if (labelsBad || hello.skills.length > MAX_SKILLS_PER_EDGE) {
    call.end({ code: Code.InvalidArgument, message: `hello refused: ${labelsBad ?? `at most ${MAX_SKILLS_PER_EDGE} skills per edge, got ${hello.skills.length}`}` });
    return undefined;
  }
  // The token may have been revoked or rotated since the stream opened.
  if (!(await tokens.stillValid(edge.id, edge.tokenHash))) {
    call.end({ code: Code.Unauthenticated, message: "edge token is unknown or revoked" });
    return undefined;
  }
  if (call.closed) return undefined;
  let inv: Inventory | undefined;
  if (hello.skills.length === 0 && hello.inventoryDigest) {
    inv = inventories.known(hello.inventoryDigest);
    if (!inv) return "inventory";
  } else {
    try {
      inv = inventories.of(hello.skills);
    } catch (err) {
      call.end({ code: Code.InvalidArgument, message: `hello refused: ${(err as Error).message}` });
      return undefined;
    }
  }
  return deps.admit(call, edge, hello, inv);
}

/** What the handshake needs; `admit` makes a welcomed edge's session live, `onFrame` takes every frame after, `drop` ends the session. */
interface HandshakeOptions extends WelcomeDeps {
  log: Logger;
  /** Largest frame accepted from an edge. */
  maxFrameBytes: number;
  /** How long an edge has to send hello, and its inventory when asked for it. */
  helloTimeoutMs: number;
  onFrame(session: LiveSession, frame: ConnectRequest["frame"]): void;
  drop(session: LiveSession, reason: string): void;
}

/** Creates the handshake. */
export function createHandshake(opts: HandshakeOptions) {
  const { log, tokens, inventories, helloTimeoutMs } = opts;
  const opening = new Map<string, Set<TunnelCall>>();

  /** Admits the edge of a stream that is no longer only opening. */
  function admit(call: TunnelCall, edge: EnrolledEdge, hello: Hello, inv: Inventory): LiveSession {
    opening.get(edge.id)?.delete(call);
    return opts.admit(call, edge, hello, inv);
  }
  const welcomeDeps: WelcomeDeps = { tokens, inventories, admit };

  /** Checks the request and its token, then accepts the stream. */
  async function open(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): Promise<void> {
    const edge = await authenticate(stream, headers, tokens, log);
    if (!edge || stream.destroyed) return;
    accept(stream, headers, edge);
  }

  /** Answers the stream and walks it through hello (and inventory) to its welcome; every later frame goes to `onFrame`. */
  function accept(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, edge: EnrolledEdge): void {
    let session: LiveSession | undefined;
    let helloSeen = false;
    /** The hello of an edge asked for its inventory, until the inventory frame arrives. */
    let awaitingInventory: Hello | undefined;
    let inventoryTimer: NodeJS.Timeout | undefined;
    const helloTimer = setTimeout(() => call.end({ code: Code.InvalidArgument, message: `no hello within ${formatDuration(helloTimeoutMs)}` }), helloTimeoutMs);
    const call = acceptBidi(stream, headers, ConnectRequestSchema, ConnectResponseSchema, opts.maxFrameBytes, {
      onMessage(msg) {
        const f = msg.frame;
        if (session) return opts.onFrame(session, f);
        if (awaitingInventory) {
          // Asked for its inventory: the edge's skills come next, then its welcome.
          if (f.case === "inventory") {
            const hello = awaitingInventory;
            awaitingInventory = undefined;
            clearTimeout(inventoryTimer);
            let inv: Inventory;
            try {
              inv = inventories.of(f.value.skills);
            } catch (err) {
              call.end({ code: Code.InvalidArgument, message: `inventory refused: ${(err as Error).message}` });
              return;
            }
            session = admit(call, edge, hello, inv);
          } else if (f.case === "hello") call.end({ code: Code.InvalidArgument, message: "hello may only be sent once" });
          return;
        }
        if (helloSeen) return; // heartbeats while the hello is being checked
        if (f.case !== "hello") return call.end({ code: Code.InvalidArgument, message: notHello(msg) });
        helloSeen = true;
        clearTimeout(helloTimer);
        welcome(welcomeDeps, call, edge, f.value).then(
          (s) => {
            if (s !== "inventory") session = s;
            else if (!call.closed) {
              awaitingInventory = f.value;
              inventoryTimer = setTimeout(() => call.end({ code: Code.InvalidArgument, message: `no inventory within ${formatDuration(helloTimeoutMs)} of the inventory request` }), helloTimeoutMs);
              call.send({ frame: { case: "inventoryRequest", value: {} } });
            }
          },
          (err) => {
            log.error({ err: String(err), edge: edge.id }, "edge welcome failed");
            call.end({ code: Code.Unavailable, message: "the manager could not admit the edge; retry later" });
          },
        );
      },
      onEnd: () =>
        !helloSeen
          ? { code: Code.InvalidArgument, message: "the stream ended before hello" }
          : awaitingInventory
            ? { code: Code.InvalidArgument, message: "the stream ended before the inventory the manager asked for" }
            : undefined,
      onClose(err) {
        clearTimeout(helloTimer);
        clearTimeout(inventoryTimer);
        opening.get(edge.id)?.delete(call);
        if (session) opts.drop(session, err ? `tunnel lost: ${err.message}` : "edge closed the tunnel");
      },
    });
    // Until it is welcomed, a stream is tracked so that revoking or rotating the token closes it too.
    let set = opening.get(edge.id);
    if (!set) opening.set(edge.id, (set = new Set()));
    set.add(call);
  }

  return {
    open,
    /** Ends the streams of an edge still awaiting their welcome (revocation, rotation). */
    endOpening(edgeId: string, message: string): void {
      for (const c of opening.get(edgeId) ?? []) c.end({ code: Code.Unauthenticated, message });
      opening.delete(edgeId);
    },
  };
}
