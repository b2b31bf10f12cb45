/**
 * The dispatcher in process (B3, B4, G2): real audit log, approval store and edge store on PGlite,
 * in-process manager skills, no port. Every outcome writes exactly one row; a parked call runs
 * once approved, through the same recorder; a fan-out's call holds no slot of its own, is refused
 * rather than parked, and shares its parsed params. (Edges and the RPC surface: test/*.e2e.)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { defineSkill } from "../../skill/define.ts";
import { createRegistry } from "../../skill/registry.ts";
import { createAuditLog } from "../audit/log.ts";
import type { AuditLog } from "../audit/types.ts";
import { loadConfig } from "../config/load.ts";
import { openDatabase, type Database } from "../db/client.ts";
import { createEdgeStore } from "../fleet/edge-store.ts";
import type { Hub } from "../fleet/hub.ts";
import type { Caller } from "../identity/caller.ts";
import { createApprovalStore, type ApprovalStore } from "./approvals/store.ts";
import { createDispatcher, type Dispatcher } from "./execute.ts";
import { AuditedError, type CallObservation } from "./types.ts";

let dir: string;
let database: Database;
let audit: AuditLog;
let approvals: ApprovalStore;
let dispatcher: Dispatcher;
const ran: Array<{ key: string; params: unknown; invocation: unknown }> = [];
const observed: CallObservation[] = [];
let release: (() => void) | undefined;

const operator: Caller = { userId: "olga", role: "operator" };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ongrid-dispatch-"));
  database = await openDatabase({ dataDir: dir });
  audit = createAuditLog(database);
  approvals = createApprovalStore(database);
  const log = pino({ level: "silent" });
  const registry = createRegistry({ log });
  registry.register(
    defineSkill({
      key: "t_echo",
      name: "Echo",
      description: "Returns its text; a test skill that is safe.",
      class: "safe",
      scope: "manager",
      category: "test",
      params: { text: { type: "string", description: "What to return.", required: true } },
      async execute(ctx, params) {
        ran.push({ key: "t_echo", params, invocation: ctx.invocation });
        if (params.text === "hold") await new Promise<void>((r) => (release = r));
        return { echoed: params.text };
      },
    }),
  );
  registry.register(
    defineSkill({
      key: "t_write",
      name: "Write",
      description: "Pretends to change something; a test skill that is mutating.",
      class: "mutating",
      scope: "manager",
      category: "test",
      params: { what: { type: "string", description: "What to change.", required: true } },
      async execute(_ctx, params) {
        ran.push({ key: "t_write", params, invocation: undefined });
        return { changed: params.what };
      },
    }),
  );
  const config = loadConfig({ env: { ONGRID_SKILLS_MAX_CALLS_PER_USER: "1" } });
  const hub = { sessions: () => [], session: () => undefined } as unknown as Hub;
  dispatcher = createDispatcher({ registry, hub, edges: createEdgeStore(database, "m-test"), audit, config, log, approvals, onCall: (c) => observed.push(c) });
}, 120_000);
afterAll(async () => {
  await dispatcher?.drain();
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  ran.length = 0;
  observed.length = 0;
});

async function rowsSince(seq: number) {
  await audit.flush();
  return audit.list({ afterSeq: seq, limit: 100 });
}
async function lastSeq(): Promise<number> {
  await audit.flush();
  return (await audit.list({ newestFirst: true, limit: 1 }))[0]?.seq ?? 0;
}

describe("the dispatcher", () => {
  it("runs an allowed call with its caller's invocation and writes one row", async () => {
    const before = await lastSeq();
    const out = await dispatcher.execute({ key: "t_echo", params: { text: "hi" }, caller: operator, sessionId: "s-1" });
    expect(out.result?.success).toBe(true);
    expect(out.result?.output).toEqual({ echoed: "hi" });
    expect(ran[0].invocation).toEqual({ caller: operator, sessionId: "s-1", mode: undefined, playbook: undefined });
    const rows = await rowsSince(before);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ seq: out.auditSeq, toolName: "t_echo", decision: "allow", error: "", callerUserId: "olga", sessionId: "s-1" });
    expect(observed).toHaveLength(1);
  });

  it("writes one row for each refusal, before and at the gate, and throws it as AuditedError", async () => {
    const before = await lastSeq();
    const refusals = [
      { key: "no_such_skill", params: {}, caller: operator },
      { key: "t_echo", params: {}, caller: operator },
      { key: "t_echo", paramsJson: "{not json", caller: operator },
      { key: "t_echo", params: { text: "x" }, caller: operator, mode: "NOPE" as never },
      { key: "t_write", params: { what: "x" }, caller: { userId: "vera", role: "viewer" } },
      { key: "t_echo", params: { text: "x" }, caller: operator, playbook: "not_loaded" },
    ];
    const seqs: number[] = [];
    for (const input of refusals) {
      const err = await dispatcher.execute(input).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, JSON.stringify(input)).toBeInstanceOf(AuditedError);
      seqs.push((err as AuditedError).auditSeq);
    }
    const rows = await rowsSince(before);
    expect(rows.map((r) => r.seq)).toEqual(seqs);
    expect(rows.every((r) => r.error !== "")).toBe(true);
    expect(rows[4].decision).toBe("deny");
    expect(ran).toHaveLength(0);
  });

  it("parks a mutating call, and runs it once approved with the params it was requested with", async () => {
    const before = await lastSeq();
    const parked = await dispatcher.execute({ key: "t_write", params: { what: "config" }, caller: operator, sessionId: "s-2" });
    expect(parked.result).toBeUndefined();
    expect(parked.approval?.state).toBe("pending");
    expect(ran).toHaveLength(0);
    const { row, quorum } = await approvals.vote(parked.approval!.id, "alice", "ok");
    expect(quorum).toBe(true);
    await dispatcher.runApproved(row);
    expect(ran).toEqual([{ key: "t_write", params: { what: "config" }, invocation: undefined }]);
    const rows = await rowsSince(before);
    expect(rows.map((r) => r.decision)).toEqual(["ask", "allow"]);
    expect(rows[1]).toMatchObject({ approvalId: parked.approval!.id, approvedBy: "alice", error: "" });
    const final = (await approvals.list({})).find((a) => a.id === parked.approval!.id)!;
    expect(final.state).toBe("executed");
    expect(final.executionAuditSeq).toBe(rows[1].seq);
  });

  it("holds one slot per running call of a user (skills.max_calls_per_user = 1), and none for a fan-out's call", async () => {
    const first = dispatcher.execute({ key: "t_echo", params: { text: "hold" }, caller: operator });
    await expect.poll(() => release !== undefined).toBe(true);
    const second = await dispatcher.execute({ key: "t_echo", params: { text: "b" }, caller: operator }).catch((e: unknown) => e);
    expect((second as AuditedError).code).toBe("resource_exhausted");
    // The fan-out itself holds the user's slot; its calls take none.
    const shared = dispatcher.shareWork();
    const part = await dispatcher.fanOutCall({ key: "t_echo", params: { text: "c" }, caller: operator }, shared);
    expect(part.result?.success).toBe(true);
    release!();
    release = undefined;
    expect((await first).result?.success).toBe(true);
  });

  it("refuses a fan-out's call that needs approval instead of parking it, and parses the shared params once", async () => {
    const before = await lastSeq();
    const shared = dispatcher.shareWork();
    const err = await dispatcher.fanOutCall({ key: "t_write", params: { what: "x" }, caller: operator }, shared).catch((e: unknown) => e);
    expect((err as AuditedError).code).toBe("permission_denied");
    expect((err as AuditedError).message).toMatch(/needs approval; a fan-out runs only calls that need none/);
    expect((await approvals.list({ state: "pending" })).some((a) => a.skillKey === "t_write" && (a.params as { what?: string }).what === "x")).toBe(false);
    const rows = await rowsSince(before);
    expect(rows).toHaveLength(1);
    expect(rows[0].decisionReason).toMatch(/^fan_out_needs_approval:/);

    const echo = dispatcher.shareWork();
    await dispatcher.fanOutCall({ key: "t_echo", paramsJson: '{"text":"one"}', caller: operator }, echo);
    const parsed = echo.parsed;
    expect(parsed?.raw).toEqual({ text: "one" });
    // The second call of the same fan-out reuses the first's parse (its own text is not read again).
    await dispatcher.fanOutCall({ key: "t_echo", paramsJson: '{"text":"two"}', caller: operator }, echo);
    expect(echo.parsed).toBe(parsed);
    expect(ran.map((r) => (r.params as { text: string }).text)).toEqual(["one", "one"]);
  });
});
