import { createHash } from "node:crypto";
import { expect, test } from "vitest";
import { describeBothBackends } from "../../test/support/pg.ts";
import { OngridError } from "../../skill/errors.ts";
import { canonicalJson, GENESIS_HASH, rowHash, rowTexts } from "./chain.ts";
import { exportJsonLines } from "./export.ts";
import { createAuditLog, listQuery } from "./log.ts";
import { PreparedJson } from "./record.ts";
import type { AuditRecord, AuditRow } from "./types.ts";

const T0 = Date.parse("2025-03-01T10:00:00.000Z");

function rec(over: Partial<AuditRecord> = {}): AuditRecord {
  return {
    sessionId: "s1",
    toolName: "disk_usage",
    args: { path: "/var", human: true },
    result: { success: true, output: "42%" },
    error: "",
    deviceId: "edge-a",
    startedAt: new Date(T0),
    finishedAt: new Date(T0 + 12),
    durationMs: 12,
    callerUserId: "u1",
    callerRole: "operator",
    decision: "allow",
    decisionReason: "safe skill",
    approvalId: "",
    sopHash: "",
    ...over,
  };
}

const seqs = (rows: AuditRow[]) => rows.map((r) => r.seq);

test("canonical JSON sorts keys recursively and writes dates with milliseconds", () => {
  expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null }, t: new Date(T0) })).toBe(
    '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1,"t":"2025-03-01T10:00:00.000Z"}',
  );
  expect(canonicalJson({ u: undefined, n: Number.NaN, arr: [undefined] })).toBe('{"arr":[null],"n":null}');
});

test("row hashes are sha256 of the previous hash and the row's canonical JSON, pinned so stored chains keep verifying", () => {
  const row = {
    seq: 7,
    sessionId: "s-1",
    toolName: "probe_tcp",
    args: { host: "127.0.0.1", port: 5432, opts: { b: [1, "two", null, { z: true, a: 1.5 }], a: 'é\u2028"q"' } },
    result: { success: true, output: "ok" },
    error: "",
    deviceId: "edge-a",
    startedAt: new Date("2026-01-02T03:04:05.006Z"),
    finishedAt: new Date("2026-01-02T03:04:05.106Z"),
    durationMs: 100,
    callerUserId: "alice",
    callerRole: null,
    decision: "allow",
    decisionReason: "safe",
    approvalId: "",
    sopHash: null,
  };
  const other = { ...row, args: null, result: "text", callerUserId: null };
  // Golden values computed by the first release's generic canonicalJson of the whole row.
  expect(rowHash(GENESIS_HASH, row)).toBe("51a200f92f8a72e809732da540da760171ee2c3b780c8af996a233ec491fdb8f");
  expect(rowHash("ab".repeat(32), other)).toBe("c9d96f0d79edac1ed6c010314b3b5c855d4125dca1ff286f27719206262dc1f8");
  for (const [prev, r] of [[GENESIS_HASH, row], ["ab".repeat(32), other]] as const) {
    expect(rowHash(prev, r)).toBe(createHash("sha256").update(`${prev}\n${canonicalJson(r)}`).digest("hex"));
  }
  // approvedBy (added with approvals) is hashed only when set: older rows keep their hashes.
  expect(rowHash(GENESIS_HASH, { ...row, approvedBy: "" })).toBe(rowHash(GENESIS_HASH, row));
  const approved = { ...row, approvedBy: "bob,carol" };
  expect(rowHash(GENESIS_HASH, approved)).toBe(createHash("sha256").update(`${GENESIS_HASH}\n${canonicalJson(approved)}`).digest("hex"));
  expect(rowHash(GENESIS_HASH, approved)).not.toBe(rowHash(GENESIS_HASH, { ...row, approvedBy: "bob" }));
  // onBehalfOf (added with the agent) likewise.
  expect(rowHash(GENESIS_HASH, { ...row, onBehalfOf: "" })).toBe(rowHash(GENESIS_HASH, row));
  const agentRow = { ...row, callerUserId: "0", callerRole: "system", onBehalfOf: "alice", approvedBy: "bob" };
  expect(rowHash(GENESIS_HASH, agentRow)).toBe(createHash("sha256").update(`${GENESIS_HASH}\n${canonicalJson(agentRow)}`).digest("hex"));
  expect(rowHash(GENESIS_HASH, agentRow)).not.toBe(rowHash(GENESIS_HASH, { ...agentRow, onBehalfOf: "mallory" }));
  // client (added with MCP) likewise: left out when empty, hashed in its sorted place when set.
  expect(rowHash(GENESIS_HASH, { ...agentRow, client: "" })).toBe(rowHash(GENESIS_HASH, agentRow));
  const mcpRow = { ...agentRow, client: "claude-code/2.1.0" };
  expect(rowHash(GENESIS_HASH, mcpRow)).toBe(createHash("sha256").update(`${GENESIS_HASH}\n${canonicalJson(mcpRow)}`).digest("hex"));
  expect(rowHash(GENESIS_HASH, mcpRow)).not.toBe(rowHash(GENESIS_HASH, { ...mcpRow, client: "cursor/1.0" }));
});

test("a row's texts made alike another row's (a batch's rows share fields) are the texts made afresh", () => {
  // Every field drawn from values that collide often: equal, different, null, undefined, "".
  const pick = <T,>(i: number, values: T[]): T => values[i % values.length]!;
  const row = (i: number) => ({
    sessionId: pick(i, ["s1", "s2", ""]),
    toolName: pick(i >> 1, ["exec", "probe"]),
    args: null,
    result: null,
    error: pick(i >> 2, ["", "unavailable: x"]),
    deviceId: pick(i, ["e1", "e2", "e3", "e4"]),
    startedAt: new Date(T0 + pick(i >> 3, [0, 1])),
    finishedAt: new Date(T0 + pick(i, [5, 6, 7])),
    durationMs: pick(i, [5, 6, 7, 8, 9]),
    callerUserId: pick(i >> 1, ["u1", null, "u2", ""]),
    callerRole: pick(i >> 2, ["operator", null, ""]),
    decision: pick(i >> 3, ["allow", "deny", null, ""]),
    decisionReason: pick(i, ["safe: x", "", null]),
    approvalId: pick(i >> 1, ["", "a-1", null]),
    sopHash: pick(i >> 2, ["", null, "h"]),
    approvedBy: pick(i, ["", "bob", null, undefined]),
    onBehalfOf: pick(i >> 1, ["", "alice", null, undefined]),
    client: pick(i >> 2, ["", "mcp/1", undefined, null]),
  });
  let compared = 0;
  for (let i = 0; i < 60; i++) {
    for (let j = 0; j < 60; j++) {
      const like = { row: row(j), texts: rowTexts(row(j)) };
      expect(rowTexts(row(i), like), `${i} like ${j}`).toEqual(rowTexts(row(i)));
      compared++;
    }
  }
  expect(compared).toBe(3600);
});

describeBothBackends("audit log", (backend) => {
  test("append assigns seq and hashes; list filters by time, tool, edge, user, session, decision and pages", async () => {
    const audit = createAuditLog(await backend.open());
    const at = (min: number) => ({ startedAt: new Date(T0 + min * 60_000), finishedAt: new Date(T0 + min * 60_000 + 5) });
    const first = await audit.append(rec({ ...at(0) }));
    expect(first).toMatchObject({ seq: 1, prevHash: GENESIS_HASH, toolName: "disk_usage" });
    expect(first.rowHash).toMatch(/^[0-9a-f]{64}$/);
    await audit.append(rec({ ...at(1), toolName: "service_restart", decision: "ask", callerUserId: "u2" }));
    await audit.append(rec({ ...at(2), deviceId: "edge-b", sessionId: "s2" }));
    await audit.append(rec({ ...at(3), toolName: "service_restart", decision: "deny", deviceId: "edge-b" }));
    const last = await audit.append(rec({ ...at(4), callerUserId: "0", callerRole: "system", sessionId: "s2" }));
    expect(last.seq).toBe(5);

    const all = await audit.list();
    expect(seqs(all)).toEqual([1, 2, 3, 4, 5]);
    expect(all[4]).toEqual(last);
    expect(all[1]!.prevHash).toBe(all[0]!.rowHash);
    expect(seqs(await audit.list({ toolName: "service_restart" }))).toEqual([2, 4]);
    expect(seqs(await audit.list({ edgeId: "edge-b" }))).toEqual([3, 4]);
    expect(seqs(await audit.list({ userId: "u2" }))).toEqual([2]);
    expect(seqs(await audit.list({ userId: "0" }))).toEqual([5]);
    expect(seqs(await audit.list({ sessionId: "s2" }))).toEqual([3, 5]);
    expect(seqs(await audit.list({ decision: "deny" }))).toEqual([4]);
    expect(seqs(await audit.list({ since: at(1).startedAt, until: at(3).startedAt }))).toEqual([2, 3]);
    expect(seqs(await audit.list({ since: at(3).startedAt }))).toEqual([4, 5]);
    expect(seqs(await audit.list({ toolName: "service_restart", edgeId: "edge-b" }))).toEqual([4]);
    expect(seqs(await audit.list({ afterSeq: 2, limit: 2 }))).toEqual([3, 4]);
    expect(seqs(await audit.list({ afterSeq: 4, limit: 2 }))).toEqual([5]);
    // newest first, paged backwards with beforeSeq; filters still apply
    expect(seqs(await audit.list({ newestFirst: true, limit: 2 }))).toEqual([5, 4]);
    expect(seqs(await audit.list({ newestFirst: true, beforeSeq: 4, limit: 2 }))).toEqual([3, 2]);
    expect(seqs(await audit.list({ newestFirst: true, beforeSeq: 2, limit: 2 }))).toEqual([1]);
    expect(seqs(await audit.list({ newestFirst: true, sessionId: "s2" }))).toEqual([5, 3]);
    await expect(audit.list({ limit: -1 })).rejects.toThrow(/limit must be an integer/);
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 5, firstBrokenSeq: 0, lastSeq: 5, lastRowHash: last.rowHash });
  });

  test("the user filter (the caller, or the user the agent acted for) is served by indexes, not a scan of the table", async () => {
    const store = await backend.fresh();
    const database = await store.open();
    // 20,000 rows of fifty other users (written directly: the chain does not matter to the planner),
    // then one row of the user's own and one the agent made on their behalf.
    const cols = "seq, tool_name, started_at, finished_at, caller_user_id, caller_role, on_behalf_of, prev_hash, row_hash";
    await store.query(`insert into tool_calls (${cols}) select g, 'probe_http', now(), now(), 'user-' || (g % 50), 'operator', '', '', '' from generate_series(1, 20000) g`);
    await store.query(`insert into tool_calls (${cols}) values (20001, 'exec', now(), now(), 'rare', 'operator', '', '', ''), (20002, 'exec', now(), now(), '0', 'system', 'rare', '', '')`);
    await store.query("analyze tool_calls");
    expect(seqs(await createAuditLog(database).list({ userId: "rare", newestFirst: true }))).toEqual([20002, 20001]);
    const q = listQuery(database, { userId: "rare", newestFirst: true }).toSQL();
    const plan = (await store.query<Record<string, string>>(`explain ${q.sql}`, q.params)).map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).not.toMatch(/Seq Scan/);
    expect(plan).toMatch(/tool_calls_caller_user_id_idx/);
    expect(plan).toMatch(/tool_calls_on_behalf_of_idx/);
  });

  test("limit defaults to 100, refuses more than 1000; verify and export page through every row", async () => {
    const audit = createAuditLog(await backend.open());
    await Promise.all(Array.from({ length: 1005 }, (_, i) => audit.append(rec({ sessionId: `s${i}` }))));
    expect(await audit.list()).toHaveLength(100);
    expect(await audit.list({ limit: 1000 })).toHaveLength(1000);
    await expect(audit.list({ limit: 5000 })).rejects.toThrow(/limit must be an integer from 1 to 1000/);
    const report = await audit.verify(); // crosses a verify page boundary
    expect(report).toMatchObject({ ok: true, rowsChecked: 1005 });
    const exported: number[] = [];
    expect(await exportJsonLines(audit, {}, (l) => void exported.push(JSON.parse(l).seq))).toBe(1005); // crosses an export page
    expect(exported).toEqual(Array.from({ length: 1005 }, (_, i) => i + 1));
  });

  test("a row read back from jsonb (keys reordered) hashes the same", async () => {
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    const args = { zeta: 1, alpha: { y: [3, 2, { b: "x", a: 0.1 + 0.2 }], x: null }, "ключ": "значение ✓", emoji: "🚀", big: 1e21 };
    const written = await audit.append(rec({ args, result: { success: false, error: { message: "m", code: "c" } } }));
    const [readBack] = await audit.list();
    expect(readBack!.args).toEqual(args);
    expect(rowHash(readBack!.prevHash, readBack!)).toBe(written.rowHash);
    const [raw] = await store.query<{ t: string; keys: string }>(
      "select jsonb_typeof(args_json) as t, (select string_agg(k, ',') from jsonb_object_keys(args_json) k) as keys from tool_calls",
    );
    expect(raw!.t).toBe("object"); // stored as a JSON object, not a double-encoded string
    expect(raw!.keys).not.toBe(Object.keys(args).join(",")); // jsonb really did reorder the keys
    expect((await audit.verify()).ok).toBe(true);
  });

  test("values PostgreSQL would refuse (NUL, lone surrogates, bigint, fractional ms) are normalised, not lost", async () => {
    const audit = createAuditLog(await backend.open());
    const row = await audit.append(rec({ args: { s: "a\u0000b", lone: "x\uD800y", n: 10n, when: new Date(T0), "k\u0000": 1 }, error: "bad\u0000", durationMs: 12.6 }));
    expect(row.args).toEqual({ s: "a\uFFFDb", lone: "x\uFFFDy", n: "10", when: "2025-03-01T10:00:00.000Z", "k\uFFFD": 1 });
    // An invalid Date inside args becomes null, as JSON.stringify makes it; the rest of the value is kept.
    const dated = await audit.append(rec({ args: { never: new Date("nope"), ok: [1n, "x"] } }));
    expect(dated.args).toEqual({ never: null, ok: ["1", "x"] });
    expect(row.durationMs).toBe(13);
    expect((await audit.list({ limit: 10 })).find((r) => r.seq === row.seq)).toEqual(row);
    expect((await audit.verify()).ok).toBe(true);
    await expect(audit.append(rec({ startedAt: new Date("nope") }))).rejects.toThrow(/startedAt is not a valid date/);
  });

  test("text and JSON with tabs, newlines, carriage returns, backslashes, \\N and \\. come back unchanged; null args are stored as NULL", async () => {
    // PGlite's writer sends COPY text, where these are the characters with a meaning of their own.
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    const nasty = "a\tb\nc\rd\\e \\N \\.\n\\.\n";
    const row = await audit.append(
      rec({ sessionId: nasty, toolName: `t${nasty}`, deviceId: nasty, error: nasty, decisionReason: nasty, callerUserId: nasty, args: { [nasty]: nasty, list: [nasty, "\\"] }, result: { output: nasty } }),
    );
    expect(row).toMatchObject({ sessionId: nasty, toolName: `t${nasty}`, deviceId: nasty, error: nasty, decisionReason: nasty, callerUserId: nasty });
    const bare = await audit.append(rec({ args: null, result: null }));
    const back = await audit.list({ limit: 10 });
    expect(back).toEqual([row, bare]);
    const [raw] = await store.query<{ args_null: boolean; result_null: boolean }>("select args_json is null as args_null, result_json is null as result_null from tool_calls where seq = 2");
    expect(raw).toEqual({ args_null: true, result_null: true });
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 2 });
  });

  test("200 concurrent appends get seq 1..200 with an intact chain", async () => {
    const audit = createAuditLog(await backend.open());
    const rows = await Promise.all(Array.from({ length: 200 }, (_, i) => audit.append(rec({ sessionId: `c${i}` }))));
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1)); // append order kept
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.prevHash).toBe(rows[i - 1]!.rowHash);
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 200 });
  });

  test("flush waits for appends nobody awaited", async () => {
    const audit = createAuditLog(await backend.open());
    for (let i = 0; i < 30; i++) void audit.append(rec());
    await audit.flush();
    expect(await audit.list({ limit: 1000 })).toHaveLength(30);
  });

  /** Two audit logs on one database (two connections on PostgreSQL; PGlite is single-connection, so they share it) appending `perRound` rows each per round: one linear chain of every row. */
  async function twoWriters(rounds: number, perRound: number): Promise<void> {
    const store = await backend.fresh();
    const one = await store.open();
    const two = backend.kind === "postgres" ? await store.open() : one;
    const a = createAuditLog(one);
    const b = createAuditLog(two);
    const appends = [];
    for (let round = 0; round < rounds; round++) {
      appends.push(...Array.from({ length: perRound }, () => a.append(rec({ sessionId: "a" }))));
      appends.push(...Array.from({ length: perRound }, () => b.append(rec({ sessionId: "b" }))));
      await new Promise((r) => setImmediate(r));
    }
    const rows = await Promise.all(appends);
    const total = 2 * rounds * perRound;
    expect(rows.map((r) => r.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(await a.verify()).toMatchObject({ ok: true, rowsChecked: total });
  }

  test("two writers appending concurrently keep one linear chain (a batch beaten to its seq numbers is chained again)", async () => {
    await twoWriters(10, 10);
  });

  test("2,600 concurrent appends go out in several batches with an intact chain", async () => {
    const audit = createAuditLog(await backend.open());
    const rows = await Promise.all(Array.from({ length: 2600 }, (_, i) => audit.append(rec({ sessionId: `p${i}` }))));
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 2600 }, (_, i) => i + 1));
    for (let i = 1; i < rows.length; i++) expect(rows[i]!.prevHash).toBe(rows[i - 1]!.rowHash);
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 2600 });
  });

  test("two writers appending 2,100 rows each, in full batches, keep one linear chain", async () => {
    await twoWriters(3, 700);
  });

  async function tamperable(n: number) {
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    for (let i = 1; i <= n; i++) await audit.append(rec({ args: { i } }));
    return { store, audit };
  }

  test("editing a row's args_json makes verify name that row", async () => {
    const { store, audit } = await tamperable(5);
    await store.query(`update tool_calls set args_json = '{"i": 3, "cmd": "rm -rf /"}' where seq = 3`);
    const report = await audit.verify();
    expect(report).toMatchObject({ ok: false, firstBrokenSeq: 3 });
    expect(report.reason).toMatch(/row 3's content does not match its row_hash.*edited/);
  });

  test("deleting a middle row makes verify name the next row", async () => {
    const { store, audit } = await tamperable(5);
    await store.query("delete from tool_calls where seq = 3");
    const report = await audit.verify();
    expect(report).toMatchObject({ ok: false, firstBrokenSeq: 4 });
    expect(report.reason).toMatch(/row 4 follows row 2: row 3 is missing \(deleted\)/);
  });

  test("deleting the last row while the writer runs leaves a gap the next row exposes", async () => {
    const { store, audit } = await tamperable(3);
    await store.query("delete from tool_calls where seq = 3");
    // The writer chains onto the head it wrote, not onto whatever the table holds now.
    expect((await audit.append(rec())).seq).toBe(4);
    expect(await audit.verify()).toMatchObject({ ok: false, firstBrokenSeq: 4, reason: expect.stringMatching(/row 3 is missing/) });
  });

  test("deleting the first row is reported", async () => {
    const { store, audit } = await tamperable(3);
    await store.query("delete from tool_calls where seq = 1");
    expect(await audit.verify()).toMatchObject({ ok: false, firstBrokenSeq: 2, reason: expect.stringMatching(/row 1 is missing/) });
  });

  test("changing a row_hash is caught at that row", async () => {
    const { store, audit } = await tamperable(4);
    await store.query(`update tool_calls set row_hash = '${"f".repeat(64)}' where seq = 2`);
    expect(await audit.verify()).toMatchObject({ ok: false, firstBrokenSeq: 2, reason: expect.stringMatching(/row_hash/) });
  });

  test("a row rewritten with a recomputed row_hash breaks the link to the following row", async () => {
    const { store, audit } = await tamperable(4);
    const [row2] = await audit.list({ afterSeq: 1, limit: 1 });
    const forged = rowHash(row2!.prevHash, { ...row2!, args: { i: 2, forged: true } });
    await store.query(`update tool_calls set args_json = '{"i": 2, "forged": true}', row_hash = '${forged}' where seq = 2`);
    const report = await audit.verify();
    expect(report).toMatchObject({ ok: false, firstBrokenSeq: 3 });
    expect(report.reason).toMatch(/row 3's prev_hash does not match the row_hash of row 2/);
  });

  test("secrets are redacted before they are stored", async () => {
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    const token = "Bearer sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    const row = await audit.append(
      rec({
        args: { url: "https://api.example.com", headers: { Authorization: token }, cmd: `curl -H 'Authorization: ${token}' https://x` },
        result: { success: false, output: `sent Authorization: ${token}` },
        error: `upstream_unavailable: request with Authorization: ${token} was refused`,
      }),
    );
    const secret = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    expect(JSON.stringify(row)).not.toContain(secret);
    const [raw] = await store.query<{ a: string; r: string; e: string }>(
      "select args_json::text as a, result_json::text as r, error as e from tool_calls",
    );
    expect(raw!.a).not.toContain(secret);
    expect(raw!.r).not.toContain(secret);
    expect(raw!.e).not.toContain(secret);
    expect(raw!.a).toContain("https://api.example.com"); // the rest of the args survive
    expect((await audit.verify()).ok).toBe(true);
  });

  test("prepared values — one args value shared by many rows (a fan-out), an edge's redacted result — are redacted, cleaned, stored and verified like any other", async () => {
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    const token = "Bearer sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
    const args = PreparedJson.of({ headers: { Authorization: token }, path: "/var" });
    const rows = await Promise.all(
      ["a", "b", "c"].map((edge) =>
        audit.append(rec({ deviceId: edge, args, result: PreparedJson.ofRedacted({ success: true, output: `edge ${edge}\u0000 ok`, edge_id: edge }) })),
      ),
    );
    expect(rows.map((r) => r.deviceId)).toEqual(["a", "b", "c"]);
    const raw = await store.query<{ a: string; r: string }>("select args_json::text as a, result_json::text as r from tool_calls order by seq");
    expect(raw).toHaveLength(3);
    for (const [i, edge] of ["a", "b", "c"].entries()) {
      expect(raw[i]!.a).not.toContain("sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"); // PreparedJson.of redacts
      expect(raw[i]!.a).toContain("/var");
      expect(JSON.parse(raw[i]!.r)).toEqual({ success: true, output: `edge ${edge}\uFFFD ok`, edge_id: edge }); // NUL cleaned
    }
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 3 });
    const [readBack] = await audit.list();
    expect(rowHash(readBack!.prevHash, readBack!)).toBe(rows[0]!.rowHash);
  });

  test("export writes one JSON object per line in seq order", async () => {
    const audit = createAuditLog(await backend.open());
    for (let i = 0; i < 7; i++) await audit.append(rec({ toolName: i % 2 ? "odd_tool" : "even_tool", args: { i } }));
    const lines: string[] = [];
    const count = await exportJsonLines(audit, { toolName: "even_tool" }, (line) => {
      lines.push(line);
    });
    expect(count).toBe(4);
    for (const line of lines) expect(line).not.toContain("\n");
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.map((p) => p.seq)).toEqual([1, 3, 5, 7]);
    expect(parsed[1]).toMatchObject({ tool_name: "even_tool", args_json: { i: 2 }, started_at: "2025-03-01T10:00:00.000Z" });
    expect(parsed[1]!.row_hash).toMatch(/^[0-9a-f]{64}$/);
    const [row2] = await audit.list({ afterSeq: 1, limit: 1 });
    expect(parsed[1]!.prev_hash).toBe(row2!.rowHash); // seq 3 links to the (unexported) seq 2
  });

  test("a batch that cannot be written rejects its appends clearly and the writer carries on", async () => {
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    await audit.append(rec());
    await store.query("alter table tool_calls rename to tool_calls_away");
    const failing = await Promise.allSettled([audit.append(rec()), audit.append(rec())]);
    for (const f of failing) {
      expect(f.status).toBe("rejected");
      const err = (f as PromiseRejectedResult).reason as OngridError;
      expect(err).toBeInstanceOf(OngridError);
      expect(err.message).toMatch(/^audit log: could not store 2 tool call rows: .*tool_calls/);
    }
    await store.query("alter table tool_calls_away rename to tool_calls");
    expect((await audit.append(rec())).seq).toBe(2);
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 2 });
  });

  test("a row the database refuses as data fails alone: the rows batched with it are written one by one and chained", async () => {
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    await audit.append(rec());
    // A column narrower than one row's value: that row is refused with 22001 (string data right truncation).
    await store.query("alter table tool_calls alter column device_id type varchar(12)");
    const settled = await Promise.allSettled(["edge-1", "edge-2", "edge-with-a-long-name", "edge-4", "edge-5"].map((deviceId) => audit.append(rec({ deviceId }))));
    expect(settled.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((settled[2] as PromiseRejectedResult).reason.message).toMatch(/^audit log: could not store the tool call row: .*too long/);
    const rows = await audit.list({ limit: 10 });
    expect(rows.map((r) => [r.seq, r.deviceId])).toEqual([[1, "edge-a"], [2, "edge-1"], [3, "edge-2"], [4, "edge-4"], [5, "edge-5"]]);
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 5 });
  });

  test("appendMany: one promise for many rows, each row's outcome in order; a row refused as data, or that cannot be normalised, fails alone", async () => {
    const store = await backend.fresh();
    const audit = createAuditLog(await store.open());
    await audit.append(rec());
    await store.query("alter table tool_calls alter column device_id type varchar(12)");
    const out = await audit.appendMany([
      rec({ deviceId: "m-1", result: PreparedJson.ofRedacted({ success: true, output: "ok", edge_id: "m" }) }),
      rec({ deviceId: "m-with-a-long-name" }),
      rec({ deviceId: "m-3", startedAt: new Date(Number.NaN) }),
      rec({ deviceId: "m-4" }),
    ]);
    expect(out.map((r) => (r instanceof Error ? r.message.split(":")[0] : [r.seq, r.deviceId]))).toEqual([[2, "m-1"], "audit log", "audit record startedAt is not a valid date", [3, "m-4"]]);
    expect((out[1] as Error).message).toMatch(/could not store the tool call row: .*too long/);
    expect(await audit.appendMany([])).toEqual([]);
    const rows = await audit.list({ limit: 10 });
    expect(rows.map((r) => r.deviceId)).toEqual(["edge-a", "m-1", "m-4"]);
    expect(rows[1]!.result).toEqual({ edge_id: "m", output: "ok", success: true });
    expect(await audit.verify()).toMatchObject({ ok: true, rowsChecked: 3 });
  });

  test("reopening the store keeps the rows and the chain", async () => {
    const store = await backend.fresh();
    const first = await store.open();
    const audit = createAuditLog(first);
    for (let i = 0; i < 10; i++) void audit.append(rec({ args: { i } }));
    await audit.flush();
    await first.close();
    const again = createAuditLog(await store.open());
    expect(seqs(await again.list())).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect((await again.append(rec())).seq).toBe(11);
    expect(await again.verify()).toMatchObject({ ok: true, rowsChecked: 11 });
  });
});
