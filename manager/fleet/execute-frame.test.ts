import { describe, expect, test } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConnectResponseSchema } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import { grpcFrame } from "./grpc-stream.ts";
import { createExecuteFrames } from "./execute-frame.ts";

/** The frame as encoding the whole message gives it. */
const whole = (callId: string, key: string, params: Record<string, unknown>, timeoutMs: number) =>
  grpcFrame(toBinary(ConnectResponseSchema, create(ConnectResponseSchema, { frame: { case: "execute", value: { callId, key, params: params as never, timeoutMs } } })));

describe("execute frames encoded once per params object", () => {
  const cases: Array<[string, string, string, Record<string, unknown>, number]> = [
    ["a UUID call id and small params", "0b6c6f1e-8f4e-4a53-9d57-0c7c3b1f5a11", "probe_tcp", { host: "127.0.0.1", port: 8080 }, 5000],
    ["no params, no deadline, no key", "c1", "", {}, 0],
    // 200 bytes of text: the inner length needs a two-byte varint; 20,000: three bytes.
    ["params over 127 bytes", "c2", "tail_file", { path: "/var/log/x", text: "y".repeat(200) }, 30_000],
    ["params over 16 KiB", "c3", "exec", { command: "z".repeat(20_000), nested: { list: [1, "two", null, true, { deep: 1.5 }] } }, 4_294_967_295],
    ["a call id over 127 bytes, not ASCII", `é${"i".repeat(200)}`, "host_load", { verbose: false }, 1],
  ];
  test.each(cases)("%s: byte for byte what encoding the whole message gives", (_name, callId, key, params, timeoutMs) => {
    const frame = createExecuteFrames()(callId, key, params, timeoutMs);
    expect(frame.equals(whole(callId, key, params, timeoutMs))).toBe(true);
    const decoded = fromBinary(ConnectResponseSchema, frame.subarray(5));
    expect(decoded.frame.case).toBe("execute");
    if (decoded.frame.case === "execute") expect(decoded.frame.value.callId).toBe(callId);
  });

  test("calls sharing a params object differ only in their call id; a new key or deadline is encoded afresh", () => {
    const executeFrame = createExecuteFrames();
    const params = { text: "x" };
    for (const id of ["id-1", "id-2", "another-id-3"]) expect(executeFrame(id, "bench_echo", params, 1000).equals(whole(id, "bench_echo", params, 1000))).toBe(true);
    expect(executeFrame("id-4", "other_key", params, 1000).equals(whole("id-4", "other_key", params, 1000))).toBe(true);
    expect(executeFrame("id-5", "other_key", params, 2500).equals(whole("id-5", "other_key", params, 2500))).toBe(true);
    expect(executeFrame("id-6", "bench_echo", params, 1000).equals(whole("id-6", "bench_echo", params, 1000))).toBe(true);
  });
});
