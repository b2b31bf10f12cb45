import { randomUUID } from "node:crypto";
import { expect, test } from "vitest";
import { describeBothBackends } from "../../../test/support/pg.ts";
import { createRouteStore } from "./route-store.ts";
import type { RouteDecision } from "./router.ts";

const decision = (over: Partial<RouteDecision>): RouteDecision => ({
  id: randomUUID(),
  createdAt: new Date(),
  userId: "alice",
  sessionId: "",
  inputText: "redis 连接超时",
  isOncall: true,
  skillName: "network_diagnosis",
  confidence: 0.82,
  reason: "timeouts to a TCP service",
  path: "model",
  fallbackCause: "",
  recalled: ["- Redis timeouts — conntrack full [playbook: network_diagnosis] (redis.md)"],
  model: "m1",
  usage: { promptTokens: 812, completionTokens: 41, totalTokens: 853 },
  latencyMs: 120,
  ...over,
});

describeBothBackends("route store", (backend) => {
  test("stores every field of a decision and lists the newest first", async () => {
    const store = await backend.fresh();
    const database = await store.open();
    const routes = createRouteStore(database);
    const first = decision({ createdAt: new Date(Date.now() - 1000) });
    const second = decision({ path: "rules", fallbackCause: "timeout", skillName: "generic_oncall", confidence: 0.2, recalled: [], usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } });
    await routes.insert(first);
    await routes.insert(second);
    const got = await routes.recent(10);
    expect(got.map((d) => d.id)).toEqual([second.id, first.id]);
    expect(got[1]).toEqual({ ...first, confidence: expect.closeTo(0.82, 5) });
    expect(got[0]).toMatchObject({ path: "rules", fallbackCause: "timeout", skillName: "generic_oncall", recalled: [] });
    const rows = await store.query<{ path: string; prompt_tokens: number }>("select path, prompt_tokens from route_decisions order by created_at");
    expect(rows).toEqual([{ path: "model", prompt_tokens: 812 }, { path: "rules", prompt_tokens: 0 }]);
    await expect(routes.insert(first)).rejects.toThrow();
    await database.close();
  });
});
