/** The contract's playbook messages from the manager's rows, for the services and the CLI. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { PlaybookSchema, RoutePath, type Playbook as PlaybookProto, type PlaybookProblem as ProblemProto, type RouteDecision as RouteDecisionProto } from "../../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import type { RouteDecision } from "../../agent/router/router.ts";
import type { Playbook, PlaybookProblem } from "../../playbooks/parse.ts";
import type { PlaybookSet } from "../../playbooks/registry.ts";

const PATHS: Record<RouteDecision["path"], RoutePath> = {
  out_of_scope: RoutePath.OUT_OF_SCOPE,
  model: RoutePath.MODEL,
  model_unknown_name: RoutePath.MODEL_UNKNOWN_NAME,
  rules: RoutePath.RULES,
};

/** A playbook as the contract's message; the body only when asked. */
export function playbookToProto(p: Playbook, withBody: boolean): PlaybookProto {
  return create(PlaybookSchema, {
    name: p.name,
    displayName: p.displayName,
    description: p.description,
    category: p.category,
    platforms: p.platforms,
    tags: p.tags,
    triggers: p.triggers,
    allowedTools: p.allowedTools,
    riskLevel: p.riskLevel,
    fallbackSteps: p.fallbackSteps.map((s) => ({ tool: s.tool, args: s.args as never, note: s.note ?? "" })),
    body: withBody ? p.body : "",
    file: p.file,
    source: p.source,
    license: p.license ?? "",
    metadata: p.metadata as never,
  });
}

export const problemToProto = (p: PlaybookProblem): Omit<ProblemProto, "$typeName"> => ({ file: p.file, field: p.field, rule: p.rule, message: p.message, severity: p.severity });

/** A stored decision as the contract's message. */
export function decisionToProto(d: RouteDecision): Omit<RouteDecisionProto, "$typeName"> {
  return {
    id: d.id,
    isOncall: d.isOncall,
    skillName: d.skillName,
    confidence: d.confidence,
    reason: d.reason,
    path: PATHS[d.path],
    fallbackCause: d.fallbackCause,
    recalled: d.recalled,
    usage: { promptTokens: d.usage.promptTokens, completionTokens: d.usage.completionTokens, totalTokens: d.usage.totalTokens } as never,
    model: d.model,
    latencyMs: d.latencyMs,
    createdAt: timestampFromDate(d.createdAt),
    userId: d.userId,
  };
}

/** The ListPlaybooks answer for one generation: playbooks by name without bodies, problems, skipped, generation. */
export function listPlaybooksResponse(set: PlaybookSet) {
  return {
    playbooks: [...set.playbooks.values()].sort((a, b) => a.name.localeCompare(b.name)).map((p) => playbookToProto(p, false)),
    problems: set.problems.map(problemToProto),
    skipped: set.skipped,
    generation: BigInt(set.generation),
  };
}
