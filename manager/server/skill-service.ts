/** ongrid.v1.SkillService: list, get, execute and fan out skills over Connect, gRPC and gRPC-Web. */
import type { ServiceImpl } from "@connectrpc/connect";
import { SkillService, type ExecuteSkillRequest } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { Dispatcher } from "../dispatch/dispatch.ts";
import { fanOut } from "../dispatch/fan-out.ts";
import { listInventory } from "../registry/inventory.ts";
import type { Hub } from "../tunnel/hub.ts";
import { classFromProto, metadataToProto, resultToProto, scopeFromProto } from "./convert.ts";
import { callerOf } from "./caller.ts";
import { OngridError } from "../../skill/errors.ts";
import type { PackSet } from "../../skill/pack/loader.ts";
import { formatProblem } from "../../skill/pack/manifest.ts";
import { PermissionMode } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import type { PermissionMode as Mode } from "../gate/gate.ts";
import { reaches } from "../identity/reach.ts";
import { approvalToProto } from "./approval-service.ts";

/** The contract's mode as the gate's; unspecified → undefined (the configured default). */
export function modeFromProto(m: PermissionMode): Mode | undefined {
  if (m === PermissionMode.UNSPECIFIED) return undefined;
  const name = PermissionMode[m] as Mode | undefined;
  if (!name) throw new OngridError("invalid_argument", `permission_mode: ${m} is not a mode (rule: enum)`);
  return name;
}

/** The params of an execute or fan-out request, as the dispatcher takes them. */
function paramsOf(input: ExecuteSkillRequest["input"]): { params?: unknown; paramsJson?: string } {
  return input.case === "params" ? { params: input.value } : input.case === "paramsJson" ? { paramsJson: input.value } : {};
}

/** Builds the SkillService implementation over the registry, the hub and the dispatcher. */
export function createSkillService(deps: { registry: SkillRegistry; hub: Hub; dispatcher: Dispatcher; packs?: PackSet }): ServiceImpl<typeof SkillService> {
  const { registry, hub, dispatcher, packs } = deps;
  return {
    rescanPacks() {
      if (!packs) {
        throw new OngridError("failed_precondition", "this manager has no skill pack directories configured", "set packs.dirs (ONGRID_PACK_DIRS) and restart the manager");
      }
      const r = packs.rescan();
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
      for await (const ev of fanOut(
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
        },
      )) {
        if (ev.kind === "edge") {
          yield {
            event: {
              case: "edgeResult",
              value: { edgeId: ev.edgeId, result: ev.result ? resultToProto(ev.result) : undefined, error: ev.error, auditSeq: BigInt(ev.auditSeq) },
            },
          };
        } else {
          yield { event: { case: "summary", value: { targeted: ev.targeted, succeeded: ev.succeeded, failed: ev.failed, timedOut: ev.timedOut, durationMs: ev.durationMs, leftOut: ev.leftOut } } };
        }
      }
    },
  };
}
