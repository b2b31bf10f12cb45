/**
 * Execute frames as gRPC bytes, encoded once per params object: the calls of one fan-out share
 * their validated params (and key and deadline), so only the call id differs between their
 * frames. The shared part is encoded by protobuf-es once; each frame is that part with the call
 * id written in front of it, byte for byte what encoding the whole ConnectResponse would give
 * (protobuf-es writes fields in field-number order, and call_id is field 1).
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { ExecuteSchema } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";

/** ConnectResponse.execute: field 2, length-delimited. */
const EXECUTE_TAG = (2 << 3) | 2;
/** Execute.call_id: field 1, length-delimited. */
const CALL_ID_TAG = (1 << 3) | 2;

/** Bytes a varint of `n` takes. */
function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function writeVarint(buf: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    buf[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}

/**
 * Returns `frame(callId, key, params, timeoutMs)`: one gRPC message (5-byte prefix included) of
 * ConnectResponse{execute{call_id, key, params, timeout_ms}}, for a call without approval
 * evidence (whose MAC covers the call id, so it is encoded whole). The encoded rest is kept per
 * params object while that object lives; the caller must not change params after a call.
 */
export function createExecuteFrames() {
  const rests = new WeakMap<object, { key: string; timeoutMs: number; rest: Uint8Array }>();
  return function executeFrame(callId: string, key: string, params: Record<string, unknown>, timeoutMs: number): Buffer {
    let r = rests.get(params);
    if (!r || r.key !== key || r.timeoutMs !== timeoutMs) {
      r = { key, timeoutMs, rest: toBinary(ExecuteSchema, create(ExecuteSchema, { key, params: params as never, timeoutMs })) };
      rests.set(params, r);
    }
    const idBytes = Buffer.byteLength(callId);
    const inner = 1 + varintLength(idBytes) + idBytes + r.rest.length;
    const body = 1 + varintLength(inner) + inner;
    const frame = Buffer.allocUnsafe(5 + body);
    frame[0] = 0;
    frame.writeUInt32BE(body, 1);
    let at = 5;
    frame[at++] = EXECUTE_TAG;
    at = writeVarint(frame, at, inner);
    frame[at++] = CALL_ID_TAG;
    at = writeVarint(frame, at, idBytes);
    at += frame.write(callId, at, "utf8");
    frame.set(r.rest, at);
    return frame;
  };
}
