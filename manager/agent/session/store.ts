/** Agent sessions in the database (J2 "sessions are stored"). */
import { desc, eq } from "drizzle-orm";
import type { Database } from "../../db/client.ts";
import { agentSessions } from "../../db/schema/index.ts";

/** A session row as the agent and the CLI use it. */
export type AgentSession = typeof agentSessions.$inferSelect;

/** Creates, updates and reads sessions. */
export function createSessionStore(database: Database) {
  const { db } = database;
  return {
    async create(s: Pick<AgentSession, "id" | "userId" | "inputText" | "edgeId" | "mode">): Promise<void> {
      const now = new Date();
      await db.insert(agentSessions).values({ ...s, createdAt: now, updatedAt: now, status: "running" });
    },
    async update(id: string, patch: Partial<Omit<AgentSession, "id" | "createdAt">>): Promise<void> {
      await db.update(agentSessions).set({ ...patch, updatedAt: new Date() }).where(eq(agentSessions.id, id));
    },
    async get(id: string): Promise<AgentSession | undefined> {
      return (await db.select().from(agentSessions).where(eq(agentSessions.id, id)))[0];
    },
    async recent(limit: number): Promise<AgentSession[]> {
      return db.select().from(agentSessions).orderBy(desc(agentSessions.createdAt)).limit(limit);
    },
  };
}

/** The store's interface. */
export type SessionStore = ReturnType<typeof createSessionStore>;
