/** The knowledge index (K2): Markdown runbooks and stored diagnosis reports, searched with PostgreSQL full-text search. */
import { sql } from "drizzle-orm";
import { customType, index, pgTable, serial, text, timestamp } from "drizzle-orm/pg-core";

/** PostgreSQL's tsvector, written by the database itself (a generated column). */
const tsvector = customType<{ data: string }>({ dataType: () => "tsvector" });

/** One indexed document: a runbook file or a diagnosis report. */
export const knowledgeDocs = pgTable(
  "knowledge_docs",
  {
    id: serial("id").primaryKey(),
    /** "runbook" (a file under knowledge.dirs) or "report" (a finished diagnosis session). */
    kind: text("kind").notNull(),
    /** Where it came from: the file's path, or "session:<id>"; unique. */
    source: text("source").notNull().unique(),
    title: text("title").notNull().default(""),
    body: text("body").notNull(),
    /** The file's modification time (or the report's time): re-indexing skips unchanged sources. */
    modifiedAt: timestamp("modified_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    indexedAt: timestamp("indexed_at", { withTimezone: true, precision: 3, mode: "date" }).notNull(),
    /** A report's edge (its session's edge_id; "" for a session on no edge and for runbooks): a report is shown only to callers who reach it (G4). */
    edgeId: text("edge_id").notNull().default(""),
    /** Title weighted above body; English stemming ("restarting" finds "restart"). */
    tsv: tsvector("tsv")
      .notNull()
      .generatedAlwaysAs(sql`setweight(to_tsvector('english', coalesce("title", '')), 'A') || setweight(to_tsvector('english', "body"), 'B')`),
  },
  (t) => [index("knowledge_docs_tsv_idx").using("gin", t.tsv), index("knowledge_docs_kind_idx").on(t.kind)],
);
