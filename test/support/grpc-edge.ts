/** An edge written against plain @grpc/grpc-js (no ongrid code): proof the tunnel is ordinary gRPC. */
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ConnectRequestSchema,
  ConnectResponseSchema,
  type ConnectResponse,
} from "../../proto/gen/ongrid/v1/tunnel_pb.ts";

/** The one skill the tests' hand-written edges offer in their hello (key echo_text, one required string param). */
export const ECHO_TEXT_METADATA = {
  key: "echo_text",
  name: "Echo",
  description: "Use when testing the tunnel: returns the text it is given.",
  class: 1,
  scope: 1,
  params: { fields: [{ name: "text", type: 1, description: "what to echo", required: true }] },
};

/** A connected fake edge: the frames it received, a way to send, and its end status. */
export interface GrpcEdge {
  received: ConnectResponse[];
  send(frame: MessageInitShape<typeof ConnectRequestSchema>): void;
  /** Resolves with the final gRPC status when the stream ends. */
  ended: Promise<grpc.StatusObject>;
  close(): void;
}

/** An `onFrame` that answers every execute frame with success and the output "<id>:<params.text>". */
export function answerEchoText(id: string): (f: ConnectResponse, edge: GrpcEdge) => void {
  return (f, e) => {
    if (f.frame.case !== "execute") return;
    const x = f.frame.value;
    e.send({ frame: { case: "result", value: { callId: x.callId, result: { success: true, output: { kind: { case: "stringValue", value: `${id}:${String(x.params?.text)}` } }, durationMs: 1 } } } });
  };
}

/** Opens EdgeTunnelService.Connect with grpc-js; `onFrame` may answer frames. */
export function connectGrpcEdge(address: string, token: string, onFrame?: (f: ConnectResponse, edge: GrpcEdge) => void): GrpcEdge {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${token}`);
  const call = client.makeBidiStreamRequest(
    "/ongrid.v1.EdgeTunnelService/Connect",
    (m: MessageInitShape<typeof ConnectRequestSchema>) => Buffer.from(toBinary(ConnectRequestSchema, create(ConnectRequestSchema, m))),
    (b: Buffer) => fromBinary(ConnectResponseSchema, b),
    md,
  );
  let resolveEnded!: (s: grpc.StatusObject) => void;
  const edge: GrpcEdge = {
    received: [],
    send: (f) => call.write(f),
    ended: new Promise((r) => (resolveEnded = r)),
    close: () => {
      call.end();
      client.close();
    },
  };
  call.on("data", (f: ConnectResponse) => {
    edge.received.push(f);
    onFrame?.(f, edge);
  });
  call.on("status", (s) => resolveEnded(s));
  call.on("error", () => {});
  return edge;
}
