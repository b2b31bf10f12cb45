/** The router's ranking (I3): tokenisation, BM25, the scope check, the calibrated decision, and its accuracy on the held-back cases. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, test } from "vitest";
import { createPlaybookRegistry, GENERIC_PLAYBOOK } from "../../playbooks/registry.ts";
import { createRanker, createRankIndex, createScopeIndex, decideRoute, tokenize, type RankFeatures } from "./rank.ts";
import { createRouter } from "./router.ts";

const builtin = createPlaybookRegistry({ dirs: [], disabled: [], log: pino({ level: "silent" }) });
const ranker = createRanker(builtin.current().playbooks.values());

describe("tokenize", () => {
  test("splits alert names, stems English, drops stop words and numbers that are not statuses", () => {
    expect(tokenize("NodeFilesystemAlmostOutOfSpace")).toEqual(["node", "filesystem", "almost", "space"]);
    expect(tokenize("OOMKilled pods")).toEqual(["oom", "kill", "pod"]);
    expect(tokenize("the disks are failing on port 9100")).toEqual(["disk", "fail", "port"]);
    expect(tokenize("HTTP 502 and 5xx, 10.0.0.1 or :8080")).toEqual(["http", "502", "5xx"]);
  });

  test("Chinese becomes character bigrams, without pairs of two stop characters", () => {
    expect(tokenize("磁盘满了")).toEqual(["磁盘", "盘满", "满了"]);
    expect(tokenize("我们的")).toEqual([]);
    expect(tokenize("卡")).toEqual(["卡"]);
  });
});

describe("BM25 index", () => {
  const index = createRankIndex([
    { id: "disk", fields: [{ text: "disk full, filesystem out of space", weight: 2 }, { text: "long body about disks and inodes", weight: 1 }] },
    { id: "net", fields: [{ text: "connection refused, DNS does not resolve", weight: 2 }] },
  ]);

  test("ranks by shared, specific terms; stems meet across forms", () => {
    expect(index.rank("the filesystems are full").map((r) => r.id)).toEqual(["disk"]);
    expect(index.rank("connections refused")[0]).toMatchObject({ id: "net", matched: ["connect", "refus"] });
    expect(index.rank("weather in Paris")).toEqual([]);
  });

  test("coverage is the share of the input's terms the documents hold", () => {
    expect(index.coverage("disk full")).toEqual({ share: 1, terms: 2, known: 2 });
    expect(index.coverage("disk recipe").share).toBe(0.5);
    expect(index.coverage("").share).toBe(0);
  });
});

describe("scope", () => {
  test("a term held by one side counts more than a term both sides hold", () => {
    const s = createScopeIndex(["server outage restart"], ["poem song server"]);
    const sig = s.signal("write a poem about the server outage");
    expect(sig.opsTerms.sort()).toEqual(["outag", "server"]);
    expect(sig.offTopicTerms.sort()).toEqual(["poem", "server"]);
    // "server" is on both sides: it adds ln(1 + 0.5/2.5) to each, "outage" and "poem" ln 2 to theirs.
    expect(sig.ops).toBeCloseTo(Math.log(2) + Math.log(1.2), 6);
    expect(sig.offTopic).toBeCloseTo(Math.log(2) + Math.log(1.2), 6);
  });

  test.each([
    "红烧肉怎么做",
    "who won the final last night?",
    "write me a poem about autumn",
    "recommend a good movie for the weekend",
    "天气怎么样",
  ])("refuses %s offline", (text) => {
    expect(ranker.scope(text).outOfScope).toBe(true);
  });

  test.each(["the game server is down, players get timeouts", "足球比分接口报错 502", "nginx.service keeps restarting", "线上出问题了，快看看", "disk full on db-2"])("does not refuse %s", (text) => {
    expect(ranker.scope(text).outOfScope).toBe(false);
  });

  test("lenient (a model will judge): an input the references barely know is let through, an everyday request is not", () => {
    expect(ranker.scope("xyzzy plugh").outOfScope).toBe(true);
    expect(ranker.scope("xyzzy plugh", true).outOfScope).toBe(false);
    expect(ranker.scope("give me a recipe for carbonara", true).outOfScope).toBe(true);
  });
});

describe("decideRoute", () => {
  const f = (scores: Record<string, [number, number]>): RankFeatures => ({
    signal: { ops: 1, opsSpecific: 1, offTopic: 0, everyday: 0, opsShare: 1, technical: false, opsTerms: [], offTopicTerms: [] },
    hasGeneric: true,
    playbooks: Object.entries(scores).map(([name, [bm25, rules]]) => ({ name, bm25, rules, terms: [], matched: rules ? ["t"] : [] })),
  });
  const cal = { triggerWeight: 3, minScore: 3, minMargin: 0.15, offTopicRatio: 0.75, minOpsShare: 0.25, technicalWeight: 1, specificOps: 0, everydayWeight: 0 };

  test("triggers add to BM25; the best wins when high and clearly ahead", () => {
    expect(decideRoute(f({ a: [2, 1], b: [4, 0], [GENERIC_PLAYBOOK]: [1, 0] }), cal).skillName).toBe("a");
  });
  test("too low, too close, or generic first: generic_oncall, saying why", () => {
    expect(decideRoute(f({ a: [2, 0], b: [1, 0] }), cal).reason).toMatch(/scores below 3/);
    const close = decideRoute(f({ a: [10, 0], b: [9, 0] }), cal);
    expect(close.skillName).toBe(GENERIC_PLAYBOOK);
    expect(close.reason).toMatch(/does not lead b 9.0 by 15%/);
    expect(decideRoute(f({ a: [5, 0], [GENERIC_PLAYBOOK]: [9, 0] }), cal).skillName).toBe(GENERIC_PLAYBOOK);
  });
});

/**
 * The held-back set (scripts/bench/router-cases-heldback3.json, 150 cases) was written apart from
 * the router and never tuned on. Its figures when the ranking was committed: 136 of 150 right,
 * 111 of 125 operations cases, all 25 off-topic requests refused, one operations question refused
 * ("our standard procedure for declaring a SEV1"). A change that drops below these fails here; one
 * that improves them should raise them.
 */
describe("the router without a model on the held-back cases", () => {
  test("keeps its committed accuracy", async () => {
    const cases = JSON.parse(readFileSync(join(import.meta.dirname, "../../../scripts/bench/router-cases-heldback3.json"), "utf8")) as Array<{ text: string; expected: string | null }>;
    const router = createRouter({ playbooks: builtin, store: { insert: async () => {} }, log: pino({ level: "silent" }) });
    let right = 0;
    let opsRight = 0;
    let refusedOff = 0;
    let refusedOps = 0;
    for (const c of cases) {
      const d = await router.route({ text: c.text });
      const got = d.isOncall ? d.skillName : null;
      if (got === c.expected) right++;
      if (c.expected !== null && got === c.expected) opsRight++;
      if (c.expected === null && !d.isOncall) refusedOff++;
      if (c.expected !== null && !d.isOncall) refusedOps++;
    }
    expect(cases).toHaveLength(150);
    expect(right).toBeGreaterThanOrEqual(136);
    expect(opsRight).toBeGreaterThanOrEqual(111);
    expect(refusedOff).toBe(25);
    expect(refusedOps).toBeLessThanOrEqual(1);
  });
});
