/** Route decisions in the database (I3: "the decision and its path are recorded"). */
import { desc } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { routeDecisions } from "../../db/schema/index.ts";
import type { RouteDecision, RouteStore } from "./router.ts";

/** The store over the manager's database, with the newest decisions for listings. */
export function createRouteStore(database: Database): RouteStore & { recent(limit: number): Promise<RouteDecision[]> } {
  const { db } = database;
  return {
    async insert(d) {
      await db.insert(routeDecisions).values({
        id: d.id,
        createdAt: d.createdAt,
        userId: d.userId,
        sessionId: d.sessionId,
        inputText: d.inputText,
        isOncall: d.isOncall,
        skillName: d.skillName,
        confidence: d.confidence,
        reason: d.reason,
        path: d.path,
        fallbackCause: d.fallbackCause,
        recalled: d.recalled,
        model: d.model,
        promptTokens: d.usage.promptTokens,
        completionTokens: d.usage.completionTokens,
        latencyMs: d.latencyMs,
      });
    },
    async recent(limit) {
      const rows = await db.select().from(routeDecisions).orderBy(desc(routeDecisions.createdAt)).limit(limit);
      return rows.map((r) => ({
        id: r.id,
        createdAt: r.createdAt,
        userId: r.userId,
        sessionId: r.sessionId,
        inputText: r.inputText,
        isOncall: r.isOncall,
        skillName: r.skillName,
        confidence: r.confidence,
        reason: r.reason,
        path: r.path as RouteDecision["path"],
        fallbackCause: r.fallbackCause,
        recalled: r.recalled,
        model: r.model,
        usage: { promptTokens: r.promptTokens, completionTokens: r.completionTokens, totalTokens: r.promptTokens + r.completionTokens },
        latencyMs: r.latencyMs,
      }));
    },
  };
}
