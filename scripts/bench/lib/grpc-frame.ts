/** gRPC length-prefixed message framing (1 flag byte + 4-byte big-endian length), by hand. */

/** Prefixes one serialised message with the 5-byte gRPC header (uncompressed): the manager's own framing. */
export { grpcFrame as frame } from "../../../manager/fleet/grpc-stream.ts";

/** Splits a byte stream into message bodies; feed it every DATA chunk in order. */
export function createDeframer(onMessage: (body: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= 5) {
      const len = pending.readUInt32BE(1);
      if (pending.length < 5 + len) break;
      const body = pending.subarray(5, 5 + len);
      pending = pending.subarray(5 + len);
      onMessage(body);
    }
  };
}
