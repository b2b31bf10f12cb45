/**
 * A forwarded call's result in the form the entry manager passes on and records (M2,
 * PeerEncodedResult): made by the holder, checked by the entry.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { PeerEncodedResultSchema, type PeerEncodedResult } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
import { FanOutEdgeResultSchema } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { OngridError } from "../../skill/errors.ts";
import { resultToProto } from "../../skill/proto.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import { PreparedJson } from "../audit/record.ts";

/**
 * A result as the entry manager passes it on (encoded_results): the caller's FanOutEdgeResult
 * bytes and the envelope as JSON. The holder makes it, so that the entry manager (which gates,
 * audits and streams every call of the fan-out) does not encode the result again; the entry
 * makes it itself from a holder that answered envelope_json (one from before encoded_results).
 * Throws when the envelope cannot be encoded.
 */
export function encodedResult(edgeId: string, env: ResultEnvelope): PeerEncodedResult {
  return create(PeerEncodedResultSchema, {
    edgeResult: toBinary(FanOutEdgeResultSchema, create(FanOutEdgeResultSchema, { edgeId, result: resultToProto(env) })),
    resultJson: JSON.stringify(env),
  });
}

/**
 * A result envelope from a holder's JSON text, checked for the shape every reader of an envelope
 * relies on: an object whose success and truncated are booleans, whose duration_ms is a
 * non-negative number, and whose error, if any, has a string code and message. Returns the
 * envelope, or why not (a string).
 */
export function envelopeFromJson(text: string): ResultEnvelope | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return "is not JSON (rule: json)";
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return "is not a JSON object (rule: object)";
  const e = v as Record<string, unknown>;
  if (typeof e.success !== "boolean") return "success: is not a boolean (rule: type)";
  if (e.truncated !== undefined && typeof e.truncated !== "boolean") return "truncated: is not a boolean (rule: type)";
  if (typeof e.duration_ms !== "number" || !Number.isFinite(e.duration_ms) || e.duration_ms < 0) return "duration_ms: is not a non-negative number (rule: minimum)";
  if (e.edge_id !== undefined && typeof e.edge_id !== "string") return "edge_id: is not a string (rule: type)";
  if (e.error !== undefined && e.error !== null) {
    const err = e.error as Record<string, unknown>;
    if (typeof err !== "object" || typeof err.code !== "string" || typeof err.message !== "string") return "error: is not an object with a string code and message (rule: type)";
  }
  return v as ResultEnvelope;
}

/**
 * The entry manager's check of a holder's encoded result: result_json must be an envelope
 * (envelopeFromJson), and edge_result must decode as a FanOutEdgeResult whose result says the
 * same success. Returns the envelope and the result as the audit log stores it, in this
 * manager's own canonical form (so a holder's text cannot make a row disagree with its hash);
 * throws unavailable naming the field and the rule otherwise.
 */
export function readEncodedResult(holder: string, edgeId: string, e: PeerEncodedResult): { envelope: ResultEnvelope; stored: PreparedJson } {
  const bad = (why: string) => new OngridError("unavailable", `manager "${holder}" answered the call on edge "${edgeId}" with a result this manager cannot pass on: ${why}`, "check that every manager runs the same ongrid version");
  const env = envelopeFromJson(e.resultJson);
  if (typeof env === "string") throw bad(`result_json: ${env}`);
  let decoded;
  try {
    decoded = fromBinary(FanOutEdgeResultSchema, e.edgeResult);
  } catch {
    throw bad("edge_result: is not a FanOutEdgeResult (rule: protobuf)");
  }
  if (!decoded.result || decoded.result.success !== env.success || decoded.error || decoded.auditSeq) throw bad("edge_result: does not carry the result result_json holds (rule: match)");
  return { envelope: env, stored: PreparedJson.ofRedacted(env) };
}
