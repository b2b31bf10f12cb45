/**
 * The hub's token checks (C4): the lookup of a dialling edge's bearer token, and the re-check
 * that an admitted edge's token is still the enrolled, unrevoked one (at its welcome and every
 * few heartbeats), each bounded so that a slow database makes the edge retry, not hang.
 */
import type { EdgeStore } from "./edge-store.ts";

/** How long a token lookup may take before the edge is told to retry. */
const AUTH_TIMEOUT_MS = 10_000;
/** Periodic token re-checks of live edges are gathered this long into one query. */
const RECHECK_BATCH_MS = 1000;

/** Resolves like `p`, or rejects after `ms`. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** Creates the checks over the edge store. */
export function createEdgeTokens(store: EdgeStore) {
  return {
    /** The edge row of a bearer token; rejects with unauthenticated for a bad one, or with a timeout. */
    authenticate: (token: string) => withTimeout(store.authenticate(token), AUTH_TIMEOUT_MS),

    /**
     * Whether an edge's token is still the enrolled, unrevoked one. The store batches the reads:
     * welcomes of the same tick share one query, periodic re-checks are gathered over
     * RECHECK_BATCH_MS, so 10,000 edges cost a few queries, not 10,000.
     */
    async stillValid(edgeId: string, tokenHash: string, urgent = true): Promise<boolean> {
      const row = await withTimeout(store.credential(edgeId, urgent ? 0 : RECHECK_BATCH_MS), AUTH_TIMEOUT_MS);
      return Boolean(row && !row.revokedAt && row.tokenHash === tokenHash);
    },
  };
}

/** The hub's token checks. */
export type EdgeTokens = ReturnType<typeof createEdgeTokens>;
