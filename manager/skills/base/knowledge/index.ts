/** The knowledge base tools; each tool in its own file in this folder. */
import type { SkillDefinition } from "../../../../skill/types.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { createKnowledgeIndexer } from "./indexer.ts";
import { createQueryKnowledge } from "./query-knowledge.ts";

/** Every knowledge tool, bound to the manager's parts; the index starts (first pass, watcher) once the manager serves. */
export function createKnowledgeTools(deps: BaseToolDeps): SkillDefinition<any>[] {
  const dirs = deps.config.knowledge.dirs.split(":").map((d) => d.trim()).filter(Boolean);
  const indexer = createKnowledgeIndexer({ database: deps.database, dirs, watch: deps.config.knowledge.watch, log: deps.log });
  // Without a serving manager (the CLI's in-process core) the index is brought up to date before each query.
  deps.onServe?.(() => indexer.start());
  return [createQueryKnowledge(indexer, deps.edges)];
}
