/** query_knowledge (K2): ranked full-text search over the Markdown runbooks of knowledge.dirs and past diagnosis reports. */
import { sep } from "node:path";
import { SkillError } from "../../../../skill/errors.ts";
import type { SkillDefinition } from "../../../../skill/types.ts";
import { defineBaseTool } from "../../define.ts";
import { invocationOf } from "../../invocation.ts";
import { visibleEdgeIds } from "../../../incidents/changes.ts";
import type { Caller } from "../../../identity/caller.ts";
import type { EdgeStore } from "../../../fleet/edge-store.ts";
import type { KnowledgeIndexer } from "./indexer.ts";
import type { ReportScope } from "./store.ts";

/** The params after validation (defaults applied). */
interface Params {
  query: string;
  kind: "runbook" | "report" | "any";
  limit: number;
}

/** How many skipped files a result lists (the rest are counted). */
const SKIPPED_SHOWN = 10;

const SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["query"],
  properties: {
    query: {
      type: "string",
      minLength: 1,
      maxLength: 500,
      description: 'What to look for: symptoms, error messages, service names. Web-search syntax: all words must match unless joined by "or"; "quoted phrase"; -word excludes. Words are stemmed ("restarting" finds "restart").',
    },
    kind: { type: "string", enum: ["runbook", "report", "any"], default: "any", description: "runbook: the Markdown runbooks; report: past diagnosis reports; any: both." },
    limit: { type: "integer", minimum: 1, maximum: 20, default: 5, description: "How many results to return, best first." },
  },
} as const;

/** The configured directory a runbook's path lies under (the longest match), and its path relative to it. */
function placeOf(source: string, dirs: readonly string[]): { dir: string; rel: string } {
  let best = "";
  for (const d of dirs) if (source.startsWith(d.endsWith(sep) ? d : d + sep) && d.length > best.length) best = d;
  return best ? { dir: best, rel: source.slice(best.length).replace(/^[\\/]+/, "") } : { dir: "", rel: source };
}

/**
 * The reports a caller may see (G4): a report is as visible as the edge its diagnosis ran on —
 * every one for an unlimited reach, else those on an enrolled edge in reach or on no edge.
 */
async function reportScope(edges: Pick<EdgeStore, "list">, caller: Caller): Promise<ReportScope> {
  const edgeIds = await visibleEdgeIds(edges, caller);
  return edgeIds ? { edgeIds } : "all";
}

/** Creates query_knowledge over an indexer; `edges` gives the edges' labels for the caller's reach. */
export function createQueryKnowledge(indexer: KnowledgeIndexer, edges: Pick<EdgeStore, "list">): SkillDefinition<Params> {
  return defineBaseTool<Params>({
    key: "query_knowledge",
    name: "Query knowledge",
    description:
      "Search the team's Markdown runbooks (knowledge.dirs) and the reports of past diagnosis sessions with full-text search; returns ranked results with the source path, title and a snippet with the matched words marked «like this». Use when a symptom, alert or error message may already be covered by a runbook or was diagnosed before, before improvising a fix.",
    class: "safe",
    category: "knowledge",
    schema: SCHEMA,
    resultPreview: {
      query: "nginx 502 upstream",
      kind: "any",
      returned: 1,
      results: [{ kind: "runbook", title: "Nginx returns 502 Bad Gateway", source: "web/nginx-502.md", dir: "/srv/runbooks", snippet: "… «nginx» answers «502» when the «upstream» …", rank: 0.42, modified_at: "2026-01-01T00:00:00.000Z" }],
      index: { runbooks: 12, reports: 3, indexed_at: "2026-01-01T00:00:00.000Z", skipped: [], skipped_total: 0, errors: [] },
    },
    async execute(ctx, params) {
      const { caller } = invocationOf(ctx);
      const query = params.query.trim();
      const pass = await indexer.ensureFresh();
      const terms = query ? await indexer.store.termCount(query) : 0;
      if (terms === 0) {
        throw new SkillError(
          "invalid_query",
          `query ${JSON.stringify(params.query.slice(0, 100))} has no words to search for (it is empty, or only stop words such as "the", "and", "of")`,
          "Use distinctive words: an error message, a service or unit name, a symptom (e.g. \"nginx 502 upstream\").",
        );
      }
      // Reports of diagnoses on edges outside the caller's reach are left out by the search itself,
      // so a page holds `limit` results the caller may see whenever there are that many.
      const scope = await reportScope(edges, caller);
      const hits = await indexer.store.search(query, params.kind, params.limit, scope);
      const counts = await indexer.store.counts(scope);
      const results = hits.map((h) => {
        const place = h.kind === "runbook" ? placeOf(h.source, indexer.dirs) : { dir: "", rel: h.source };
        return {
          kind: h.kind,
          title: h.title,
          source: place.rel,
          ...(place.dir ? { dir: place.dir } : {}),
          snippet: h.snippet.replace(/\s+/g, " ").trim(),
          rank: Math.round(h.rank * 10_000) / 10_000,
          modified_at: h.modifiedAt.toISOString(),
        };
      });
      const searched = params.kind === "any" ? `${counts.runbooks} runbooks and ${counts.reports} reports` : params.kind === "runbook" ? `${counts.runbooks} runbooks` : `${counts.reports} reports`;
      let hint: string | undefined;
      if (!results.length) {
        hint = `Nothing in ${searched} matches. Try fewer or other words (every word must match unless joined by "or"), kind "any", or a different spelling of the error.`;
        if (params.kind !== "report" && indexer.dirs.length === 0) hint += " No runbook directories are configured (knowledge.dirs).";
      }
      return {
        query,
        kind: params.kind,
        returned: results.length,
        results,
        ...(hint ? { hint } : {}),
        index: {
          runbooks: counts.runbooks,
          reports: counts.reports,
          indexed_at: pass.at.toISOString(),
          skipped: pass.skipped.slice(0, SKIPPED_SHOWN).map((s) => ({ file: s.rel, dir: s.dir, reason: s.reason })),
          skipped_total: pass.skipped.length,
          errors: pass.errors,
        },
      };
    },
  });
}
