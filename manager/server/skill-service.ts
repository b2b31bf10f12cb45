/** ongrid.v1.SkillService: list, get and execute skills over Connect, gRPC and gRPC-Web. */
import type { ServiceImpl } from "@connectrpc/connect";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import type { SkillRegistry } from "../../skill/registry.ts";
import type { Dispatcher } from "../dispatch/dispatch.ts";
import { classFromProto, metadataToProto, resultToProto, scopeFromProto } from "./convert.ts";
import { callerOf } from "./caller.ts";


/** Builds the SkillService implementation over the registry and the dispatcher. */
export function createSkillService(deps: { registry: SkillRegistry; dispatcher: Dispatcher }): ServiceImpl<typeof SkillService> {
  const { registry, dispatcher } = deps;
  return {
    listSkills(req) {
      const skills = registry
        .list({ scope: scopeFromProto(req.scope), class: classFromProto(req.class), category: req.category || undefined })
        .filter(() => !req.edgeId);
      return { skills: skills.map((s) => metadataToProto(s)) };
    },
    getSkill(req) {
      return { skill: metadataToProto(registry.getOrThrow(req.key)) };
    },
    async executeSkill(req, ctx) {
      const out = await dispatcher.execute({
        key: req.key,
        params: req.input.case === "params" ? req.input.value : undefined,
        paramsJson: req.input.case === "paramsJson" ? req.input.value : undefined,
        edgeId: req.edgeId,
        sessionId: req.sessionId,
        timeoutMs: req.timeoutMs,
        caller: callerOf(ctx),
        signal: ctx.signal,
      });
      return { result: resultToProto(out.result), auditSeq: BigInt(out.auditSeq) };
    },
  };
}
