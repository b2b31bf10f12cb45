/** ongrid.v1.SkillService: list, get, execute and fan out skills over Connect, gRPC and gRPC-Web. */
import type { ServiceImpl } from "@connectrpc/connect";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { FanOutEdgeResultSchema, FanOutSkillResponseSchema, SkillService, type ExecuteSkillRequest, type FanOutSkillResponse } from "../../../proto/gen/ongrid/v1/skill_service_pb.ts";
import type { SkillRegistry } from "../../../skill/registry.ts";
import type { Dispatcher } from "../../calls/execute.ts";
import { fanOutBatches, type FanOutEvent } from "../../calls/fan-out.ts";
import { listInventory } from "../../fleet/inventory.ts";
import type { Hub } from "../../fleet/hub.ts";
import { classFromProto, metadataToProto, resultToProto, scopeFromProto } from "../convert.ts";
import { callerOf } from "../../identity/caller.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { PackSet } from "../../../skill/pack/loader.ts";
import { formatProblem } from "../../../skill/pack/manifest.ts";
import { reaches } from "../../identity/reach.ts";
import { approvalToProto } from "../messages/approval.ts";
import { modeFromProto } from "../messages/mode.ts";

/** The params of an execute or fan-out request, as the dispatcher takes them. */
function paramsOf(input: ExecuteSkillRequest["input"]): { params?: unknown; paramsJson?: string } {
  return input.case === "params" ? { params: input.value } : input.case === "paramsJson" ? { paramsJson: input.value } : {};
}

/** The most edge results one batched FanOutSkill message carries. */
const MAX_RESULTS_PER_MESSAGE = 256;
/** What the results of one batched message may add up to at most, each counted at the output cap plus its envelope. */
const BATCH_BYTES = 3 * 1024 * 1024;
/** Room counted for a result's envelope besides its output: edge id, error message and hint, numbers. */
const ENVELOPE_BYTES = 4096;

/**
 * Results a batched FanOutSkill message may carry: 256, fewer when skills.output_cap_bytes is
 * large, so that a batch of results all at the cap stays under 4 MiB (gRPC clients' default
 * message limit). With the default cap (64 KiB): 45.
 */
export function resultsPerMessage(outputCapBytes: number): number {
  return Math.max(1, Math.min(MAX_RESULTS_PER_MESSAGE, Math.floor(BATCH_BYTES / (outputCapBytes + ENVELOPE_BYTES))));
}

/** One edge's event as the contract's FanOutEdgeResult. */
function edgeResultToProto(ev: Extract<FanOutEvent, { kind: "edge" }>): MessageInitShape<typeof FanOutEdgeResultSchema> {
  return { edgeId: ev.edgeId, result: ev.result ? resultToProto(ev.result) : undefined, error: ev.error, auditSeq: BigInt(ev.auditSeq) };
}

/**
 * Whether a request's messages travel in the binary protobuf encoding (gRPC, gRPC-Web and Connect
 * without `+json`): only then may a response carry results as bytes the holder encoded.
 */
function binaryCodec(contentType: string | null): boolean {
  return !!contentType && !/json/i.test(contentType);
}

/** Field numbers: FanOutSkillResponse.edge_result and .edge_results, FanOutEdgeResults.results, FanOutEdgeResult.edge_id and .audit_seq. */
const EDGE_RESULT_FIELD = 1;
const EDGE_RESULTS_FIELD = 3;
const RESULTS_FIELD = 1;
const EDGE_ID_FIELD = 1;
const AUDIT_SEQ_FIELD = 4;

/**
 * Writes one edge's event as a FanOutEdgeResult, length first: the bytes its holder encoded
 * (checked by this manager: readEncodedResult), then this manager's edge_id and audit_seq (of
 * a field given twice, the last wins: a holder cannot label a result as another edge's), or the
 * event encoded here.
 */
function writeEdgeResult(w: BinaryWriter, ev: Extract<FanOutEvent, { kind: "edge" }>): BinaryWriter {
  if (ev.encoded) return w.fork().raw(ev.encoded).tag(EDGE_ID_FIELD, WireType.LengthDelimited).string(ev.edgeId).tag(AUDIT_SEQ_FIELD, WireType.Varint).uint64(ev.auditSeq).join();
  return w.bytes(toBinary(FanOutEdgeResultSchema, create(FanOutEdgeResultSchema, edgeResultToProto(ev))));
}

/**
 * A FanOutSkillResponse whose edge_result (one event) or edge_results (a batch, in the order
 * given) is written here as bytes and held as an unknown field, which protobuf-es writes as it
 * is: results a holder encoded are copied, not decoded and encoded again.
 */
export function encodedResponse(events: ReadonlyArray<Extract<FanOutEvent, { kind: "edge" }>>, batched: boolean): FanOutSkillResponse {
  const w = new BinaryWriter();
  if (batched) {
    w.fork();
    for (const ev of events) writeEdgeResult(w.tag(RESULTS_FIELD, WireType.LengthDelimited), ev);
    w.join();
  } else writeEdgeResult(w, events[0]!);
  const m = create(FanOutSkillResponseSchema);
  m.$unknown = [{ no: batched ? EDGE_RESULTS_FIELD : EDGE_RESULT_FIELD, wireType: WireType.LengthDelimited, data: w.finish() }];
  return m;
}

/** Builds the SkillService implementation over the registry, the hub and the dispatcher. */
export function createSkillService(deps: { registry: SkillRegistry; hub: Hub; dispatcher: Dispatcher; packs?: PackSet; outputCapBytes: number; reloadEverywhere?(what: "packs"): void }): ServiceImpl<typeof SkillService> {
  const { registry, hub, dispatcher, packs } = deps;
  const perMessage = resultsPerMessage(deps.outputCapBytes);
  return {
    rescanPacks() {
      if (!packs) {
        throw new OngridError("failed_precondition", "this manager has no skill pack directories configured", "set packs.dirs (ONGRID_PACK_DIRS) and restart the manager");
      }
      const r = packs.rescan();
      // The other managers sharing the database rescan their own pack directories too.
      deps.reloadEverywhere?.("packs");
      return { added: r.added, changed: r.changed, removed: r.removed, loaded: r.loaded, problems: r.problems.map(formatProblem) };
    },
    listSkills(req, ctx) {
      const caller = callerOf(ctx);
      const entries = listInventory(registry, hub, {
        visible: (labels) => reaches(caller, labels),
        scope: scopeFromProto(req.scope),
        class: classFromProto(req.class),
        category: req.category || undefined,
        edgeId: req.edgeId || undefined,
      });
      return { skills: entries.map((e) => metadataToProto(e.skill, e.edgeIds)) };
    },
    getSkill(req, ctx) {
      const caller = callerOf(ctx);
      const entry = listInventory(registry, hub, { visible: (labels) => reaches(caller, labels) }).find((e) => e.skill.meta.key === req.key);
      return { skill: entry ? metadataToProto(entry.skill, entry.edgeIds) : metadataToProto(registry.getOrThrow(req.key)) };
    },
    async executeSkill(req, ctx) {
      const out = await dispatcher.execute({
        key: req.key,
        ...paramsOf(req.input),
        edgeId: req.edgeId,
        sessionId: req.sessionId,
        timeoutMs: req.timeoutMs,
        caller: callerOf(ctx),
        signal: ctx.signal,
        mode: modeFromProto(req.permissionMode),
        sop: req.sop || undefined,
        waitForApproval: req.waitForApproval,
        playbook: req.playbook || undefined,
      });
      return { result: out.result ? resultToProto(out.result) : undefined, auditSeq: BigInt(out.auditSeq), approval: out.approval ? approvalToProto(out.approval) : undefined };
    },
    async *fanOutSkill(req, ctx) {
      const binary = binaryCodec(ctx.requestHeader.get("content-type"));
      const batches = fanOutBatches(
        { dispatcher, hub },
        {
          key: req.key,
          ...paramsOf(req.input),
          edgeIds: req.edgeIds,
          selector: req.selector,
          perEdgeTimeoutMs: req.perEdgeTimeoutMs,
          sessionId: req.sessionId,
          caller: callerOf(ctx),
          signal: ctx.signal,
          mode: modeFromProto(req.permissionMode),
          playbook: req.playbook || undefined,
          // Over a binary codec, the results of edges other managers hold are copied as their holders encoded them.
          encodedResults: binary,
        },
        req.batchResults ? perMessage : Number.MAX_SAFE_INTEGER,
      );
      for await (const batch of batches) {
        const first = batch[0]!;
        if (first.kind === "summary") {
          yield { event: { case: "summary", value: { targeted: first.targeted, succeeded: first.succeeded, failed: first.failed, timedOut: first.timedOut, durationMs: first.durationMs, leftOut: first.leftOut } } };
        } else if (binary && (batch as Array<typeof first>).some((ev) => ev.encoded)) {
          if (req.batchResults) yield encodedResponse(batch as Array<typeof first>, true);
          else for (const ev of batch as Array<typeof first>) yield ev.encoded ? encodedResponse([ev], false) : { event: { case: "edgeResult", value: edgeResultToProto(ev) } };
        } else if (req.batchResults) {
          yield { event: { case: "edgeResults", value: { results: (batch as Array<typeof first>).map(edgeResultToProto) } } };
        } else {
          for (const ev of batch as Array<typeof first>) yield { event: { case: "edgeResult", value: edgeResultToProto(ev) } };
        }
      }
    },
  };
}
