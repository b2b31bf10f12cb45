/**
 * One connected edge as the hub keeps it (C1–C3): what the rest of the manager may read of it
 * (EdgeSession), and what the hub's own parts — handshake, heartbeat wheel, calls — share of it
 * (LiveSession). Types only, so that those parts import it and never each other.
 */
import type { Code } from "@connectrpc/connect";
import type { ResultEnvelope, Skill } from "../../skill/types.ts";
import type { ConnectResponseSchema, Hello } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import type { GrpcBidiCall } from "./grpc-stream.ts";

/** The manager's end of one edge's tunnel stream. */
export type TunnelCall = GrpcBidiCall<typeof ConnectResponseSchema>;

/** A call sent down the tunnel and not yet answered. */
export interface Pending {
  resolve(r: ResultEnvelope): void;
  reject(e: Error): void;
}

/** One connected edge. */
export interface EdgeSession {
  readonly edgeId: string;
  /** The edge's hello: id, version, hostname, OS, and the manager's labels for it (its skill list is not kept here; see `skills`). */
  readonly hello: Hello;
  /** The labels the edge reported in its hello: shown, never used for reach or selectors. */
  readonly reportedLabels: Readonly<Record<string, string>>;
  /** What the edge offers now: from hello, replaced by each inventory frame (pack rescans). */
  skills: ReadonlyMap<string, Skill>;
  readonly connectedAt: Date;
  lastHeard: number;
  /** The manager holding the edge's tunnel when it is another one (M2); absent for this manager's own edges. */
  readonly manager?: string;
}

/** A session as the hub's parts see it: its stream, its calls in flight, its place on the heartbeat wheel. */
export interface LiveSession extends EdgeSession {
  /** SHA-256 hex of the edge's token: the key of the evidence MAC. */
  tokenHash: string;
  call: TunnelCall;
  pending: Map<string, Pending>;
  /** Its slice of the heartbeat wheel, and the heartbeats sent so far. */
  slice: number;
  ticks: number;
  close(status: { code: Code; message: string }): void;
}
