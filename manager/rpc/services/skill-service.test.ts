/** How many results one batched FanOutSkill message may carry (the batches themselves: test/edge.e2e.test.ts, manager/calls/fan-out.test.ts). */
import { fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { FanOutSkillResponseSchema } from "../../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { encodedResult } from "../../fleet/encoded-result.ts";
import type { ResultEnvelope } from "../../../skill/types.ts";
import { encodedResponse, resultsPerMessage } from "./skill-service.ts";

test("a batch holds 256 results at most, fewer as the output cap grows, so a batch of capped results stays under 4 MiB, and never none", () => {
  expect(resultsPerMessage(256)).toBe(256);
  expect(resultsPerMessage(65_536)).toBe(45); // the default cap
  for (const cap of [256, 4096, 65_536, 1_048_576, 67_108_864]) {
    const n = resultsPerMessage(cap);
    expect(n).toBeGreaterThanOrEqual(1);
    if (n > 1) expect(n * (cap + 4096)).toBeLessThan(4 * 1024 * 1024);
  }
  expect(resultsPerMessage(67_108_864)).toBe(1);
});

test("results a holder encoded go out as bytes with this manager's edge_id and audit_seq, in order with results encoded here, batched or one to a message", () => {
  const env = (edgeId: string, output: unknown): ResultEnvelope => ({ success: true, output, duration_ms: 4, truncated: false, edge_id: edgeId });
  // The holder labels its result as another edge's: the entry's edge id wins.
  const spoofed = encodedResult("someone-else", env("b1", { from: "holder" })).edgeResult;
  const events = [
    { kind: "edge" as const, edgeId: "a1", result: env("a1", { from: "here" }), auditSeq: 7 },
    { kind: "edge" as const, edgeId: "b1", encoded: spoofed, auditSeq: 8 },
    { kind: "edge" as const, edgeId: "c1", error: { code: "unavailable", message: "gone", hint: "" }, auditSeq: 9 },
  ];
  const batch = toJson(FanOutSkillResponseSchema, fromBinary(FanOutSkillResponseSchema, toBinary(FanOutSkillResponseSchema, encodedResponse(events, true))));
  expect(batch).toEqual({
    edgeResults: {
      results: [
        { edgeId: "a1", result: { success: true, output: { from: "here" }, durationMs: 4, edgeId: "a1" }, auditSeq: "7" },
        { edgeId: "b1", result: { success: true, output: { from: "holder" }, durationMs: 4, edgeId: "b1" }, auditSeq: "8" },
        { edgeId: "c1", error: { code: "unavailable", message: "gone" }, auditSeq: "9" },
      ],
    },
  });
  const one = toJson(FanOutSkillResponseSchema, fromBinary(FanOutSkillResponseSchema, toBinary(FanOutSkillResponseSchema, encodedResponse([events[1]!], false))));
  expect(one).toEqual({ edgeResult: { edgeId: "b1", result: { success: true, output: { from: "holder" }, durationMs: 4, edgeId: "b1" }, auditSeq: "8" } });
});
