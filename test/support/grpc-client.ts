/** A plain @grpc/grpc-js client for any ongrid.v1 method, serialising with protobuf-es: proof the port speaks standard gRPC. */
import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary, type DescMessage, type MessageShape, type MessageInitShape, create } from "@bufbuild/protobuf";

/** Calls one unary method over gRPC (HTTP/2 cleartext) and resolves with the decoded response. */
export function grpcUnary<I extends DescMessage, O extends DescMessage>(
  address: string,
  path: string,
  input: I,
  output: O,
  request: MessageInitShape<I>,
  metadata: Record<string, string> = {},
): Promise<{ response: MessageShape<O>; trailers: grpc.Metadata }> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve, reject) => {
    let trailers = new grpc.Metadata();
    const call = client.makeUnaryRequest(
      path,
      (msg: MessageShape<I>) => Buffer.from(toBinary(input, msg)),
      (buf: Buffer) => fromBinary(output, buf),
      create(input, request),
      md,
      (err, res) => {
        client.close();
        if (err) reject(err);
        else resolve({ response: res as MessageShape<O>, trailers });
      },
    );
    call.on("status", (s) => {
      trailers = s.metadata;
    });
  });
}
