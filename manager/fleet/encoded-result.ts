/** A forwarded call's result in the form the entry manager passes on and records (M2, PeerEncodedResult). */
import { create, toBinary } from "@bufbuild/protobuf";
import { PeerEncodedResultSchema, type PeerEncodedResult } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
import { FanOutEdgeResultSchema } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { canonicalJson } from "../../skill/canonical.ts";
import { resultToProto } from "../../skill/proto.ts";
import type { ResultEnvelope } from "../../skill/types.ts";

/**
 * A result as the entry manager passes it on (encoded_results): the caller's FanOutEdgeResult
 * bytes and the audit log's canonical JSON. The holder makes it, so that the entry manager (which
 * gates, audits and streams every call of the fan-out) neither decodes nor encodes the result
 * again; the entry makes it itself from a holder that answered envelope_json (one from before
 * encoded_results).
 */
export function encodedResult(edgeId: string, env: ResultEnvelope): PeerEncodedResult {
  return create(PeerEncodedResultSchema, {
    edgeResult: toBinary(FanOutEdgeResultSchema, create(FanOutEdgeResultSchema, { edgeId, result: resultToProto(env) })),
    resultJson: canonicalJson(env),
    success: env.success,
    errorCode: env.error?.code ?? "",
    errorMessage: env.error?.message ?? "",
  });
}
