/** The knowledge_docs table: upserts by source, removals, finished diagnosis reports, and the full-text search. */
import { and, count, desc, eq, inArray, ne, notExists, notInArray, or, sql, type SQL } from "drizzle-orm";
import type { Database } from "../../../db/client.ts";
import { agentSessions, knowledgeDocs } from "../../../db/schema/index.ts";

/** What the index holds of one source. */
export interface KnowledgeDoc {
  kind: "runbook" | "report";
  source: string;
  title: string;
  body: string;
  modifiedAt: Date;
  /** A report's edge (its session's); "" for runbooks and for a session on no edge. */
  edgeId?: string;
}

/**
 * Which reports a search or a count may see (G4): "all", or only reports of sessions on one of
 * these edges or on none. Runbooks are not edge-scoped and are always seen.
 */
export type ReportScope = "all" | { edgeIds: readonly string[] };

/** One search hit, best first. */
export interface KnowledgeHit {
  kind: string;
  source: string;
  title: string;
  snippet: string;
  rank: number;
  modifiedAt: Date;
}

/** Marks around the matched words in a snippet. */
const MATCH_START = "«";
const MATCH_END = "»";

/** ts_headline's options: two short fragments with the match marked. */
const HEADLINE_OPTIONS = `StartSel=${MATCH_START}, StopSel=${MATCH_END}, MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=" … "`;

/** A report's source: the session it came from. */
const REPORT_PREFIX = "session:";

/** A report's title: what the diagnosis was about. */
const REPORT_TITLE_CHARS = 160;

/** PostgreSQL's text cannot hold NUL; a report is cut to the same size limit as a runbook. */
function cleanReport(text: string, maxBytes: number): string {
  const t = text.replace(/\u0000/g, "");
  return Buffer.byteLength(t) > maxBytes ? Buffer.from(t).subarray(0, maxBytes).toString("utf8").replace(/\uFFFD$/, "") : t;
}

/** Creates the store over an open database. */
export function createKnowledgeStore(database: Database) {
  const { db } = database;

  /** Inserts or replaces one source's row. */
  async function upsert(doc: KnowledgeDoc): Promise<void> {
    const now = new Date();
    const edgeId = doc.edgeId ?? "";
    await db
      .insert(knowledgeDocs)
      .values({ ...doc, edgeId, indexedAt: now })
      .onConflictDoUpdate({ target: knowledgeDocs.source, set: { kind: doc.kind, title: doc.title, body: doc.body, modifiedAt: doc.modifiedAt, edgeId, indexedAt: now } });
  }

  /** The rows a scope lets through: runbooks, and reports on no edge or on an edge of the scope. */
  function inScope(scope: ReportScope): SQL | undefined {
    if (scope === "all") return undefined;
    // Edge ids never hold a comma (EDGE_ID_PATTERN), so one text parameter carries any number of them.
    const ids = sql`string_to_array(${scope.edgeIds.join(",")}, ',')`;
    return or(ne(knowledgeDocs.kind, "report"), eq(knowledgeDocs.edgeId, ""), sql`${knowledgeDocs.edgeId} = any(${ids})`);
  }

  return {
    upsert,

    /** Every runbook row's source, file modification time and indexing time (ms), to skip unchanged files. */
    async runbookTimes(): Promise<Map<string, { modified: number; indexed: number }>> {
      const rows = await db.select({ source: knowledgeDocs.source, modifiedAt: knowledgeDocs.modifiedAt, indexedAt: knowledgeDocs.indexedAt }).from(knowledgeDocs).where(eq(knowledgeDocs.kind, "runbook"));
      return new Map(rows.map((r) => [r.source, { modified: r.modifiedAt.getTime(), indexed: r.indexedAt.getTime() }]));
    },

    /** Removes the given sources' rows; returns how many went. */
    async remove(sources: string[]): Promise<number> {
      let n = 0;
      for (let i = 0; i < sources.length; i += 500) {
        const chunk = sources.slice(i, i + 500);
        n += (await db.delete(knowledgeDocs).where(inArray(knowledgeDocs.source, chunk)).returning({ id: knowledgeDocs.id })).length;
      }
      return n;
    },

    /**
     * Indexes the reports of finished sessions ("done", with a report) not yet indexed as they are
     * now; `prune` also removes reports whose session is gone or no longer done. Returns how many
     * were indexed and removed.
     */
    async syncReports(maxBytes: number, prune: boolean): Promise<{ indexed: number; removed: number }> {
      const done = and(eq(agentSessions.status, "done"), ne(agentSessions.report, ""));
      const source = sql<string>`${REPORT_PREFIX} || ${agentSessions.id}`;
      const current = db
        .select({ one: sql`1` })
        .from(knowledgeDocs)
        .where(and(eq(knowledgeDocs.source, source), eq(knowledgeDocs.modifiedAt, agentSessions.updatedAt)));
      const sessions = await db
        .select({ id: agentSessions.id, inputText: agentSessions.inputText, edgeId: agentSessions.edgeId, report: agentSessions.report, updatedAt: agentSessions.updatedAt })
        .from(agentSessions)
        .where(and(done, notExists(current)))
        .orderBy(agentSessions.updatedAt);
      for (const s of sessions) {
        const about = s.inputText.replace(/\s+/g, " ").trim();
        const title = `Diagnosis: ${about.length > REPORT_TITLE_CHARS ? `${about.slice(0, REPORT_TITLE_CHARS - 1)}…` : about}`;
        await upsert({ kind: "report", source: `${REPORT_PREFIX}${s.id}`, title, body: cleanReport(s.report, maxBytes), modifiedAt: s.updatedAt, edgeId: s.edgeId });
      }
      let removed = 0;
      if (prune) {
        const finished = db.select({ source }).from(agentSessions).where(done);
        removed = (await db.delete(knowledgeDocs).where(and(eq(knowledgeDocs.kind, "report"), notInArray(knowledgeDocs.source, finished))).returning({ id: knowledgeDocs.id })).length;
      }
      return { indexed: sessions.length, removed };
    },

    /** How many rows of each kind the index holds (reports: those the scope sees). */
    async counts(scope: ReportScope = "all"): Promise<{ runbooks: number; reports: number }> {
      const rows = await db.select({ kind: knowledgeDocs.kind, n: count() }).from(knowledgeDocs).where(inScope(scope)).groupBy(knowledgeDocs.kind);
      const of = (k: string) => Number(rows.find((r) => r.kind === k)?.n ?? 0);
      return { runbooks: of("runbook"), reports: of("report") };
    },

    /** How many search terms a query leaves after stemming and stop words (0: nothing to search for). */
    async termCount(query: string): Promise<number> {
      const [row] = await db.select({ n: sql<number>`numnode(websearch_to_tsquery('english', ${query}))` }).from(sql`(select 1) as one`);
      return Number(row?.n ?? 0);
    },

    /**
     * Ranked full-text search (websearch syntax, English stemming) with marked snippets, best first.
     * `scope` leaves out, in the query itself, the reports the caller may not see, so `limit` rows
     * are the best `limit` the caller may see.
     */
    async search(query: string, kind: "runbook" | "report" | "any", limit: number, scope: ReportScope = "all"): Promise<KnowledgeHit[]> {
      const tsq = sql`websearch_to_tsquery('english', ${query})`;
      const rank = sql<number>`ts_rank_cd(${knowledgeDocs.tsv}, ${tsq})`;
      // Rank and cut first, then build snippets (ts_headline re-parses the text) for the few rows kept.
      const ranked = db
        .select({ kind: knowledgeDocs.kind, source: knowledgeDocs.source, title: knowledgeDocs.title, body: knowledgeDocs.body, modifiedAt: knowledgeDocs.modifiedAt, rank: rank.as("rank") })
        .from(knowledgeDocs)
        .where(and(sql`${knowledgeDocs.tsv} @@ ${tsq}`, kind === "any" ? undefined : eq(knowledgeDocs.kind, kind), inScope(scope)))
        .orderBy(desc(rank), desc(knowledgeDocs.modifiedAt), knowledgeDocs.source)
        .limit(limit)
        .as("ranked");
      const rows = await db
        .select({
          kind: ranked.kind,
          source: ranked.source,
          title: ranked.title,
          modifiedAt: ranked.modifiedAt,
          rank: ranked.rank,
          snippet: sql<string>`ts_headline('english', ${ranked.body}, websearch_to_tsquery('english', ${query}), ${HEADLINE_OPTIONS})`,
        })
        .from(ranked)
        .orderBy(desc(ranked.rank), desc(ranked.modifiedAt), ranked.source);
      return rows.map((r) => ({ ...r, rank: Number(r.rank), modifiedAt: r.modifiedAt instanceof Date ? r.modifiedAt : new Date(r.modifiedAt as unknown as string) }));
    },
  };
}

/** The store's interface. */
export type KnowledgeStore = ReturnType<typeof createKnowledgeStore>;
