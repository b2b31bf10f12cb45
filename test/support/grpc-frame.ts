/** gRPC message framing for tests that build request bodies by hand (including malformed ones). */

/** Frames a message as gRPC: flag byte, 4-byte big-endian length (`declared`, which may lie), body. */
export function grpcFrame(body: Uint8Array, flags = 0, declared = body.length): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out[0] = flags;
  out.writeUInt32BE(declared, 1);
  out.set(body, 5);
  return out;
}
