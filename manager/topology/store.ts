/** The topology tables: each edge's last observation, and the current graph (one row, replaced by each build). */
import { eq, inArray, notInArray, sql } from "drizzle-orm";
import type { HostSocketsOutput } from "../../skill/catalog/host-sockets.ts";
import type { Database } from "../db/client.ts";
import { edges, topologyGraphs, topologyObservations, type EdgeRow } from "../db/schema/index.ts";
import type { Observation, TopologyGraph } from "./types.ts";

const CURRENT = "current";

/** One edge's outcome of a collection: its sockets, or why there are none this time. */
export type Collected = { edgeId: string; at: Date } & ({ sockets: HostSocketsOutput } | { error: string });

/** Creates the store over an open database. */
export function createTopologyStore(database: Database) {
  const { db } = database;
  return {
    /**
     * Records a collection: a success replaces the edge's sockets; a failure keeps the last good
     * sockets (the graph keeps what was last seen) and records the error beside them.
     */
    async record(results: readonly Collected[]): Promise<void> {
      if (!results.length) return;
      const rows = results.map((r) =>
        "sockets" in r
          ? { edgeId: r.edgeId, collectedAt: r.at, sockets: r.sockets as unknown, lastError: "", lastAttemptAt: r.at }
          : { edgeId: r.edgeId, collectedAt: null, sockets: null, lastError: r.error.slice(0, 1000), lastAttemptAt: r.at },
      );
      await db.transaction(async (tx) => {
        // In chunks: one statement's parameters stay well under PostgreSQL's 65,535.
        for (let i = 0; i < rows.length; i += 500) {
          const chunk = rows.slice(i, i + 500);
          const ok = chunk.filter((r) => r.sockets !== null);
          const failed = chunk.filter((r) => r.sockets === null);
          if (ok.length)
            await tx
              .insert(topologyObservations)
              .values(ok)
              .onConflictDoUpdate({ target: topologyObservations.edgeId, set: { collectedAt: sql`excluded.collected_at`, sockets: sql`excluded.sockets`, lastError: sql`''`, lastAttemptAt: sql`excluded.last_attempt_at` } });
          if (failed.length)
            await tx
              .insert(topologyObservations)
              .values(failed)
              .onConflictDoUpdate({ target: topologyObservations.edgeId, set: { lastError: sql`excluded.last_error`, lastAttemptAt: sql`excluded.last_attempt_at` } });
        }
      });
    },

    /** Every stored observation. */
    async observations(): Promise<Observation[]> {
      const rows = await db.select().from(topologyObservations);
      return rows.map((r) => ({ edgeId: r.edgeId, collectedAt: r.collectedAt, sockets: (r.sockets as HostSocketsOutput | null) ?? null, error: r.lastError }));
    },

    /** Drops the observations of edges that are no longer enrolled (revoked or deleted), or of the listed ones. */
    async forget(o: { keep?: readonly string[]; drop?: readonly string[] }): Promise<number> {
      if (o.drop?.length) return (await db.delete(topologyObservations).where(inArray(topologyObservations.edgeId, [...o.drop])).returning({ id: topologyObservations.edgeId })).length;
      if (!o.keep) return 0;
      const where = o.keep.length ? notInArray(topologyObservations.edgeId, [...o.keep]) : undefined;
      return (await db.delete(topologyObservations).where(where).returning({ id: topologyObservations.edgeId })).length;
    },

    /** Replaces the current graph. */
    async saveGraph(graph: TopologyGraph): Promise<void> {
      const builtAt = new Date(graph.built_at);
      await db
        .insert(topologyGraphs)
        .values({ id: CURRENT, builtAt, graph })
        .onConflictDoUpdate({ target: topologyGraphs.id, set: { builtAt, graph } });
    },

    /** When the current graph was built (null: never), without reading it. */
    async builtAt(): Promise<Date | null> {
      const [row] = await db.select({ builtAt: topologyGraphs.builtAt }).from(topologyGraphs).where(eq(topologyGraphs.id, CURRENT));
      return row?.builtAt ?? null;
    },

    /** The current graph (null: none built yet). */
    async loadGraph(): Promise<TopologyGraph | null> {
      const [row] = await db.select().from(topologyGraphs).where(eq(topologyGraphs.id, CURRENT));
      return (row?.graph as TopologyGraph | undefined) ?? null;
    },
  };
}

/** The edges' ids, labels and revocation, without the rest of their rows (their skills' metadata is ~15 KB an edge). */
export async function listEdgeLabels(database: Database): Promise<Array<Pick<EdgeRow, "id" | "labels" | "revokedAt">>> {
  return database.db.select({ id: edges.id, labels: edges.labels, revokedAt: edges.revokedAt }).from(edges);
}

/** The store's interface. */
export type TopologyStore = ReturnType<typeof createTopologyStore>;
