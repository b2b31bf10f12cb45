/**
 * A fan-out's shares held by other managers (M2), through the real dispatcher and audit log on
 * PGlite, against a stand-in cluster hub: which calls go to their holders as one batch per
 * holder with results encoded there (only safe, allowed calls of skills without credentials),
 * and which stay on the call-by-call path; every forwarded call gets its one row, written here,
 * from its holder's canonical JSON, with the caller's bytes passed on as they came; a holder's
 * answer this manager cannot record fails that call alone, recorded. (Three real managers:
 * test/cluster.e2e.test.ts.)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary, toJson } from "@bufbuild/protobuf";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FanOutEdgeResultSchema } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { OngridError } from "../../skill/errors.ts";
import { buildSkill, createRegistry } from "../../skill/registry.ts";
import type { ResultEnvelope, Skill } from "../../skill/types.ts";
import { createAuditLog } from "../audit/log.ts";
import type { AuditLog } from "../audit/types.ts";
import { loadConfig } from "../config/load.ts";
import { openDatabase, type Database } from "../db/client.ts";
import { createEdgeStore } from "../fleet/edge-store.ts";
import type { Forwarding, Hub } from "../fleet/hub.ts";
import type { EncodedOutcome, ForwardedCall, Holder } from "../fleet/peer-link.ts";
import { encodedResult } from "../fleet/encoded-result.ts";
import type { Caller } from "../identity/caller.ts";
import { createApprovalStore } from "./approvals/store.ts";
import { createDispatcher, type Dispatcher } from "./execute.ts";
import { fanOutBatches, type FanOutEvent } from "./fan-out.ts";

const host = (key: string, cls: "safe" | "mutating", params: Record<string, { type: string; description: string; required?: boolean }>): Skill =>
  buildSkill({ key, name: key, description: `A host skill of the test (${cls}).`, class: cls, scope: "host", category: "test", params: params as never, execute: async () => ({}) }, {});
const SKILLS = new Map<string, Skill>([
  ["h_read", host("h_read", "safe", { text: { type: "string", description: "Text.", required: true } })],
  ["h_write", host("h_write", "mutating", { text: { type: "string", description: "Text.", required: true } })],
  ["h_secret", host("h_secret", "safe", { token: { type: "credential", description: "A stored credential's name." } })],
]);

/** Edges: l* held here, a* by manager m-a, b* by manager m-b. */
const EDGES = ["l1", "l2", "a1", "a2", "a3", "b1", "b2"];
const HOLDERS: Record<string, Holder> = { a: { id: "m-a", url: "http://127.0.0.1:1" }, b: { id: "m-b", url: "http://127.0.0.1:2" } };

let dir: string;
let database: Database;
let audit: AuditLog;
let dispatcher: Dispatcher;
let hub: Hub;
/** Batches the stand-in forwarding was handed, and how it answers a call. */
const batches: Array<{ holder: string; calls: ForwardedCall[] }> = [];
/** A holder whose link cannot be opened: callEncoded throws for it. */
let unusable: string | undefined;
let answer: (holder: Holder, call: ForwardedCall) => EncodedOutcome;
/** Calls that went down the call-by-call path (hub.call). */
const perCall: string[] = [];
const operator: Caller = { userId: "olga", role: "operator" };

const envelopeOf = (edgeId: string, text: unknown): ResultEnvelope => ({ success: true, output: { echoed: text, on: edgeId }, duration_ms: 3, truncated: false, edge_id: edgeId });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ongrid-fwd-"));
  database = await openDatabase({ dataDir: dir });
  audit = createAuditLog(database);
  const log = pino({ level: "silent" });
  const sessions = EDGES.map((edgeId) => ({ edgeId, hello: { labels: { team: "t" } }, skills: SKILLS }));
  const forwarding: Forwarding = {
    peerOf: (edgeId) => HOLDERS[edgeId[0]!],
    callEncoded(holder, calls, _signal, settle) {
      if (holder.id === unusable) throw new Error("Invalid URL");
      batches.push({ holder: holder.id, calls: [...calls] });
      // Answers arrive later, two to a message, as a link delivers them.
      setImmediate(() => calls.forEach((c, i) => setImmediate(() => settle(i, answer(holder, c)))));
    },
  };
  hub = {
    sessions: () => sessions,
    session: (id: string) => sessions.find((s) => s.edgeId === id),
    offered: () => true,
    async call(edgeId: string, key: string, params: unknown) {
      perCall.push(edgeId);
      return envelopeOf(edgeId, (params as { text?: string }).text);
    },
    forwarding,
  } as unknown as Hub;
  const config = loadConfig({ env: {} });
  dispatcher = createDispatcher({ registry: createRegistry({ log }), hub, edges: createEdgeStore(database, "m-test"), audit, config, log, approvals: createApprovalStore(database) });
}, 120_000);
afterAll(async () => {
  await dispatcher?.drain();
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});

let summary: Extract<FanOutEvent, { kind: "summary" }> | undefined;
async function fanOutAll(key: string, params: unknown): Promise<Array<Extract<FanOutEvent, { kind: "edge" }>>> {
  batches.length = 0;
  perCall.length = 0;
  const out: Array<Extract<FanOutEvent, { kind: "edge" }>> = [];
  for await (const batch of fanOutBatches({ dispatcher, hub }, { key, params, edgeIds: [], selector: "team=t", caller: operator, encodedResults: true })) {
    for (const ev of batch) if (ev.kind === "edge") out.push(ev);
    else summary = ev;
  }
  await audit.flush();
  return out;
}
async function rowsOf(seqs: number[]) {
  const rows = await audit.list({ limit: 1000 });
  return seqs.map((s) => rows.find((r) => r.seq === s));
}

describe("a fan-out's shares on other managers", () => {
  it("go to each holder as one batch, results encoded there; one row each, written here from the holder's JSON", async () => {
    answer = (_h, c) => ({ encoded: encodedResult(c.edgeId, envelopeOf(c.edgeId, (c.params as { text: string }).text)) });
    const events = await fanOutAll("h_read", { text: "fwd" });
    expect(batches.map((b) => [b.holder, b.calls.map((c) => c.edgeId)])).toEqual([
      ["m-a", ["a1", "a2", "a3"]],
      ["m-b", ["b1", "b2"]],
    ]);
    expect(batches[0]!.calls[0]).toMatchObject({ key: "h_read", params: { text: "fwd" } });
    expect(perCall.sort()).toEqual(["l1", "l2"]);
    expect(events.map((e) => e.edgeId).sort()).toEqual([...EDGES].sort());
    const rows = await rowsOf(events.map((e) => e.auditSeq));
    for (const [i, ev] of events.entries()) {
      const row = rows[i]!;
      expect(row, ev.edgeId).toMatchObject({ deviceId: ev.edgeId, toolName: "h_read", decision: "allow", error: "", callerUserId: "olga", args: { text: "fwd" } });
      expect(row.result).toEqual(envelopeOf(ev.edgeId, "fwd"));
      if (ev.edgeId.startsWith("l")) {
        expect(ev.encoded).toBeUndefined();
        expect(ev.result).toEqual(envelopeOf(ev.edgeId, "fwd"));
      } else {
        // The caller's bytes are the holder's, passed on: they decode to the envelope.
        const decoded = toJson(FanOutEdgeResultSchema, fromBinary(FanOutEdgeResultSchema, ev.encoded!));
        expect(decoded).toMatchObject({ edgeId: ev.edgeId, result: { success: true, output: { echoed: "fwd", on: ev.edgeId }, durationMs: 3, edgeId: ev.edgeId } });
        expect(ev.result).toBeUndefined();
      }
    }
    expect((await audit.verify()).ok).toBe(true);
  });

  it("a mutating call (refused in a fan-out) and a skill with a credential stay on the call-by-call path", async () => {
    answer = () => {
      throw new Error("not forwarded");
    };
    const refused = await fanOutAll("h_write", { text: "no" });
    expect(batches).toEqual([]);
    expect(refused.every((e) => e.error?.code === "permission_denied")).toBe(true);
    expect(refused).toHaveLength(EDGES.length);
    const withCredential = await fanOutAll("h_secret", {});
    expect(batches).toEqual([]);
    expect(perCall.sort()).toEqual([...EDGES].sort());
    expect(withCredential.every((e) => e.result?.success)).toBe(true);
  });

  it("a holder's error, or an answer this manager cannot record, fails that call alone, with its row", async () => {
    answer = (h, c) => {
      if (c.edgeId === "a1") return { error: new OngridError("unavailable", `manager "${h.id}" could not be reached: gone`) };
      // Text that would splice another row into the insert if it were not checked.
      if (c.edgeId === "b1") return { encoded: { ...encodedResult(c.edgeId, envelopeOf(c.edgeId, "x")), resultJson: 'null},{"seq":1' } as never };
      if (c.edgeId === "b2") return { encoded: { ...encodedResult(c.edgeId, envelopeOf(c.edgeId, "x")), resultJson: "[1]" } as never };
      return { encoded: encodedResult(c.edgeId, envelopeOf(c.edgeId, "x")) };
    };
    const before = (await audit.list({ newestFirst: true, limit: 1 }))[0]!.seq;
    const events = await fanOutAll("h_read", { text: "x" });
    const by = new Map(events.map((e) => [e.edgeId, e]));
    expect(by.get("a1")!.error).toMatchObject({ code: "unavailable" });
    expect(by.get("b1")!.error?.message).toMatch(/manager "m-b" answered the call on edge "b1" with a result this manager cannot pass on: result_json: is not JSON/);
    expect(by.get("b2")!.error?.message).toMatch(/result_json: is not a JSON object/);
    for (const id of ["a2", "a3", "l1"]) expect(by.get(id)!.error, id).toBeUndefined();
    // One row per edge, none more: the refused text entered no insert.
    const rows = await audit.list({ afterSeq: before, limit: 100 });
    expect(rows.map((r) => r.deviceId).sort()).toEqual([...EDGES].sort());
    for (const id of ["a1", "b1", "b2"]) {
      const row = rows.find((r) => r.deviceId === id)!;
      expect(row.seq).toBe(by.get(id)!.auditSeq);
      expect(row.result).toBeNull();
      expect(row.error).toMatch(/^unavailable: /);
    }
    expect((await audit.verify()).ok).toBe(true);
  });

  it("a holder whose link cannot even be opened fails its share's calls unavailable, each with its row; the other calls run", async () => {
    answer = (_h, c) => ({ encoded: encodedResult(c.edgeId, envelopeOf(c.edgeId, "y")) });
    unusable = "m-a";
    try {
      const before = (await audit.list({ newestFirst: true, limit: 1 }))[0]!.seq;
      const events = await fanOutAll("h_read", { text: "y" });
      const by = new Map(events.map((e) => [e.edgeId, e]));
      for (const id of ["a1", "a2", "a3"]) expect(by.get(id)!.error?.message, id).toMatch(/^manager "m-a" \(http:\/\/127\.0\.0\.1:1\), which holds the edge, could not be reached: Invalid URL/);
      for (const id of ["b1", "b2", "l1", "l2"]) expect(by.get(id)!.error, id).toBeUndefined();
      const rows = await audit.list({ afterSeq: before, limit: 100 });
      expect(rows.map((r) => r.deviceId).sort()).toEqual([...EDGES].sort());
      expect(rows.filter((r) => r.error.startsWith("unavailable: ")).map((r) => r.deviceId).sort()).toEqual(["a1", "a2", "a3"]);
      await dispatcher.drain();
    } finally {
      unusable = undefined;
    }
  });

  it("the summary counts forwarded successes, failures and deadlines from the checked envelopes and errors", async () => {
    answer = (_h, c) => {
      if (c.edgeId === "a1") return { error: new OngridError("deadline_exceeded", "the edge did not answer in time") };
      if (c.edgeId === "a2") return { encoded: encodedResult(c.edgeId, { ...envelopeOf(c.edgeId, "z"), success: false, error: { code: "deadline_exceeded", message: "timed out", hint: "" } }) };
      if (c.edgeId === "b1") return { encoded: encodedResult(c.edgeId, { ...envelopeOf(c.edgeId, "z"), success: false, error: { code: "upstream_unavailable", message: "no", hint: "" } }) };
      return { encoded: encodedResult(c.edgeId, envelopeOf(c.edgeId, "z")) };
    };
    const events = await fanOutAll("h_read", { text: "z" });
    expect(events).toHaveLength(EDGES.length);
    // l1, l2 (local), a3, b2 succeed; a1, a2 hit the deadline; b1 failed otherwise.
    expect(summary).toMatchObject({ targeted: 7, succeeded: 4, failed: 3, timedOut: 2 });
    const rows = await rowsOf(events.map((e) => e.auditSeq));
    expect(rows.find((r) => r?.deviceId === "a2")?.error).toBe("deadline_exceeded: timed out");
    expect(rows.find((r) => r?.deviceId === "b1")?.error).toBe("upstream_unavailable: no");
  });
});
