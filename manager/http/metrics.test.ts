/**
 * GET /metrics on a real manager (and a real compiled edge): the token it wants, that every line
 * of the page is valid Prometheus text format 0.0.4, and that the series move with what the
 * manager does — calls by skill, decision and outcome, errors, latency, edges, approvals, audit
 * rows. Label values are escaped, and caller-chosen keys cannot mint new series.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { Gauge } from "prom-client";
import { bootManager, type TestManager } from "../../test/support/manager.ts";
import { makeUser } from "../../test/support/auth.ts";
import { requiredUnderCi } from "../../test/support/ci.ts";
import { startEdge, waitFor, type TestEdge } from "../../test/support/edge.ts";
import { cacheFlushSkill } from "../../test/support/skills.ts";
import { createManagerMetrics, errorCodeOf, UNKNOWN_SKILL } from "../observability/metrics.ts";
import type { Caller } from "../identity/caller.ts";
import type { Database } from "../db/client.ts";
import { approvals as approvalsTable } from "../db/schema/index.ts";

/** Prometheus's own linter of a page: $ONGRID_PROMTOOL or Debian's /usr/bin/promtool (package prometheus). */
const PROMTOOL = process.env.ONGRID_PROMTOOL || "/usr/bin/promtool";

/** One sample of a parsed page. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABEL_VALUE = '"(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*=${LABEL_VALUE}`;
const SAMPLE_LINE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (NaN|[+-]Inf|[-+]?\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?)(?: -?\\d+)?$`);
const HELP_LINE = new RegExp(`^# HELP (${NAME}) ((?:[^\\\\\\n]|\\\\[\\\\n])*)$`);
const TYPE_LINE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const SUFFIXES: Record<string, string[]> = { histogram: ["_bucket", "_sum", "_count"], summary: ["_sum", "_count", ""], counter: [""], gauge: [""], untyped: [""] };

const unescape = (v: string) => v.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c));

/** Parses a text-format page strictly: every line must be a HELP, a TYPE or a sample of a declared family; throws on the first bad line. */
function parseExposition(text: string): Sample[] {
  expect(text.endsWith("\n")).toBe(true);
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  text.split("\n").slice(0, -1).forEach((line, i) => {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === "") return;
    if (line.startsWith("# HELP ")) {
      if (!HELP_LINE.test(line)) throw new Error(`bad HELP, ${where}`);
      return;
    }
    if (line.startsWith("# TYPE ")) {
      const m = TYPE_LINE.exec(line);
      if (!m) throw new Error(`bad TYPE, ${where}`);
      if (types.has(m[1]!)) throw new Error(`TYPE repeated, ${where}`);
      types.set(m[1]!, m[2]!);
      return;
    }
    if (line.startsWith("#")) return;
    const m = SAMPLE_LINE.exec(line);
    if (!m) throw new Error(`bad sample, ${where}`);
    const name = m[1]!;
    const family = [...types.entries()].find(([f, t]) => SUFFIXES[t]!.some((s) => name === f + s));
    if (!family) throw new Error(`sample of an undeclared family, ${where}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(new RegExp(`([a-zA-Z_][a-zA-Z0-9_]*)=(${LABEL_VALUE})`, "g"))) {
      if (k! in labels) throw new Error(`label ${k} repeated, ${where}`);
      labels[k!] = unescape(v!.slice(1, -1));
    }
    const raw = m[3]!;
    samples.push({ name, labels, value: raw === "NaN" ? Number.NaN : raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : Number(raw) });
  });
  return samples;
}

/** The value of the one sample with this name and these labels (others ignored), or undefined. */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${hits.length} samples`);
  return hits[0]?.value;
}

let m: TestManager;
let edge: TestEdge | undefined;
let viewerToken: string;

async function scrape(token = viewerToken): Promise<Sample[]> {
  const res = await fetch(`${m.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return parseExposition(await res.text());
}

const admin: Caller = { userId: "admin", role: "admin" };
const call = (key: string, params: unknown, caller: Caller = admin, edgeId?: string) => m.dispatcher.execute({ key, params, caller, edgeId }).catch((e: Error) => e);

beforeAll(async () => {
  m = await bootManager();
  m.registry.register(cacheFlushSkill());
  viewerToken = await makeUser(m, "scraper", "viewer");
  edge = await startEdge(m, "edge-metrics");
}, 60_000);
afterAll(async () => {
  await edge?.stop();
  await m?.stop();
});

describe("GET /metrics", () => {
  it("wants an API token: refusals answer 401 and are audited, like a refused RPC", async () => {
    for (const authorization of [undefined, "Bearer nonsense", `Bearer ogu_000000000000_${"a".repeat(43)}`]) {
      const res = await fetch(`${m.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="ongrid"');
      expect(await res.json()).toMatchObject({ code: "unauthenticated" });
    }
    await m.audit.flush();
    const [row] = await m.audit.list({ newestFirst: true, limit: 1 });
    expect(row).toMatchObject({ toolName: "/metrics", decision: "deny", error: expect.stringMatching(/^unauthenticated: unknown API token/) });
    expect((await fetch(`${m.url}/metrics`, { method: "POST", headers: { authorization: `Bearer ${viewerToken}` } })).status).toBe(405);
    const head = await fetch(`${m.url}/metrics`, { method: "HEAD", headers: { authorization: `Bearer ${viewerToken}` } });
    expect(head.status).toBe(200);
  });

  it("counts API token lookups by source (a query, or reused from server.token_cache), as the identity store does", async () => {
    for (let i = 0; i < 3; i++) {
      const s = await scrape();
      const c = m.identity.tokenLookups();
      expect(value(s, "ongrid_api_token_lookups_total", { source: "database" })).toBe(c.database);
      expect(value(s, "ongrid_api_token_lookups_total", { source: "reused" })).toBe(c.reused);
      expect(c.database + c.reused).toBeGreaterThanOrEqual(i + 1); // each scrape authenticated once at least
    }
  });

  it("serves a page where every line is valid text format, with the manager's series and the process basics", async () => {
    const s = await scrape();
    expect(value(s, "ongrid_edges_connected")).toBe(1);
    expect(value(s, "ongrid_approvals_pending")).toBe(0);
    expect(value(s, "ongrid_database_up")).toBe(1);
    expect(value(s, "ongrid_skills_registered")).toBe(m.registry.size);
    expect(value(s, "ongrid_manager_info", { version: "0.1.0" })).toBe(1);
    expect(value(s, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(value(s, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(value(s, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
  });

  it("counts calls by skill, decision and outcome, errors by code, latency, approvals and audit rows", async () => {
    const before = await scrape();
    const calls = (labels: Record<string, string>, s: Sample[]) => value(s, "ongrid_skill_calls_total", labels) ?? 0;

    for (let i = 0; i < 2; i++) expect(await call("analyze_output", { text: "ERROR one\nok two" })).toHaveProperty("result.success", true);
    expect(await call("analyze_output", { max_chars: 1 })).toBeInstanceOf(Error); // invalid params: refused before the gate
    expect(await call("cache_flush", {}, { userId: "scraper", role: "viewer" })).toBeInstanceOf(Error); // a viewer: denied
    expect(await call("cache_flush", {}, { userId: "olga", role: "operator" })).toHaveProperty("approval.state", "pending"); // parked
    expect(await call("no_such_skill", {})).toBeInstanceOf(Error);
    expect(await call("host_load", {}, admin, "edge-metrics")).toHaveProperty("result.success", true); // an edge's skill

    const after = await scrape();
    const delta = (labels: Record<string, string>) => calls(labels, after) - calls(labels, before);
    expect(delta({ skill: "analyze_output", decision: "allow", outcome: "success" })).toBe(2);
    expect(delta({ skill: "analyze_output", decision: "none", outcome: "error" })).toBe(1);
    expect(delta({ skill: "cache_flush", decision: "deny", outcome: "denied" })).toBe(1);
    expect(delta({ skill: "cache_flush", decision: "ask", outcome: "pending_approval" })).toBe(1);
    expect(delta({ skill: UNKNOWN_SKILL, decision: "none", outcome: "error" })).toBe(1);
    expect(delta({ skill: "host_load", decision: "allow", outcome: "success" })).toBe(1);
    expect(after.some((s) => s.labels.skill === "no_such_skill")).toBe(false);

    expect(value(after, "ongrid_skill_call_errors_total", { skill: "analyze_output", code: "invalid_argument" })).toBe(1);
    expect(value(after, "ongrid_skill_call_errors_total", { skill: "cache_flush", code: "permission_denied" })).toBe(1);
    expect(value(after, "ongrid_skill_call_errors_total", { skill: UNKNOWN_SKILL, code: "not_found" })).toBe(1);

    // Only calls that ran are timed; the histogram is consistent (+Inf bucket = count).
    expect(value(after, "ongrid_skill_call_duration_seconds_count", { skill: "analyze_output" })).toBe(2);
    expect(value(after, "ongrid_skill_call_duration_seconds_bucket", { skill: "analyze_output", le: "+Inf" })).toBe(2);
    expect(value(after, "ongrid_skill_call_duration_seconds_count", { skill: "cache_flush" })).toBeUndefined();
    expect(value(after, "ongrid_skill_call_duration_seconds_sum", { skill: "host_load" })).toBeGreaterThan(0);

    expect(value(after, "ongrid_approvals_pending")).toBe(1);
    await m.audit.flush();
    const [last] = await m.audit.list({ newestFirst: true, limit: 1 });
    expect(value(after, "ongrid_audit_rows")).toBe(last!.seq);
  });

  // After the test above, so that every family has samples (calls, errors, latency buckets).
  it.skipIf(!existsSync(PROMTOOL))("passes `promtool check metrics` (Debian's prometheus package), process and Node.js basics included", async () => {
    const res = await fetch(`${m.url}/metrics`, { headers: { authorization: `Bearer ${viewerToken}` } });
    const page = await res.text();
    expect(page).toMatch(/^ongrid_skill_calls_total\{/m);
    expect(page).toMatch(/^# TYPE nodejs_active_handles gauge$/m);
    const out = spawnSync(PROMTOOL, ["check", "metrics"], { input: page, encoding: "utf8" });
    expect({ status: out.status, problems: `${out.stdout}${out.stderr}` }).toEqual({ status: 0, problems: "" });
  });
  requiredUnderCi("promtool check metrics on /metrics", () => (existsSync(PROMTOOL) ? undefined : `no promtool at ${PROMTOOL} (Debian's prometheus package; or set ONGRID_PROMTOOL)`));
});

describe("manager metrics", () => {
  const fake = (knows: (key: string) => boolean) =>
    createManagerMetrics({ knows, connectedEdges: () => 0, managerSkills: () => 0, database: {} as Database, version: 'v"1\\\n', log: pino({ level: "silent" }) });

  it("escapes quotes, backslashes and newlines in label values", async () => {
    const metrics = fake(() => true);
    const key = 'we"ird\\key\nx';
    metrics.observeCall({ key, edgeId: "", decision: "allow", error: "", result: { success: true, output: null, duration_ms: 1, truncated: false, edge_id: "" }, durationMs: 1 });
    const text = await metrics.registry.getSingleMetricAsString("ongrid_skill_calls_total");
    expect(text).toContain('skill="we\\"ird\\\\key\\nx"');
    const samples = parseExposition(`${text}\n${await metrics.registry.getSingleMetricAsString("ongrid_manager_info")}\n`);
    expect(value(samples, "ongrid_skill_calls_total", { skill: key })).toBe(1);
    expect(value(samples, "ongrid_manager_info", { version: 'v"1\\\n' })).toBe(1);
  });

  it("writes NaN as the format spells it (prom-client alone writes Nan)", async () => {
    const metrics = fake(() => true);
    new Gauge({ name: "test_not_a_number", help: "NaN on purpose.", registers: [metrics.registry] }).set(Number.NaN);
    expect(await metrics.registry.getSingleMetricAsString("test_not_a_number")).toMatch(/^test_not_a_number Nan$/m);
    const samples = parseExposition(await metrics.render());
    expect(value(samples, "test_not_a_number")).toBeNaN();
  });

  it("a database that cannot answer leaves ongrid_approvals_pending and ongrid_audit_rows out of the scrape (not 0), and ongrid_database_up says 0", async () => {
    let failing = true;
    const rows: Record<string, number> = { pending: 4, seq: 812 };
    // Enough of drizzle's select() for the two reads: select(...).from(table)[.where(...)] is awaited.
    const database = {
      db: {
        select() {
          if (failing) throw new Error("connection refused");
          return {
            from(table: unknown) {
              const value = table === approvalsTable ? rows.pending : rows.seq;
              const answer = Promise.resolve([{ n: value }]);
              return Object.assign(answer, { where: () => answer });
            },
          };
        },
      },
    };
    const m = createManagerMetrics({ knows: () => true, connectedEdges: () => 2, managerSkills: () => 30, database: database as never, version: "t", log: pino({ level: "silent" }) });
    let page = await m.render();
    // prom-client's Gauge.reset() on an unlabelled gauge re-creates it at 0: "ongrid_approvals_pending 0" read as "nothing pending".
    expect(page).not.toMatch(/^ongrid_approvals_pending \d/m);
    expect(page).not.toMatch(/^ongrid_audit_rows \d/m);
    let samples = parseExposition(page);
    expect(value(samples, "ongrid_database_up")).toBe(0);
    expect(value(samples, "ongrid_edges_connected")).toBe(2);

    failing = false;
    samples = parseExposition(await m.render());
    expect(value(samples, "ongrid_database_up")).toBe(1);
    expect(value(samples, "ongrid_approvals_pending")).toBe(4);
    expect(value(samples, "ongrid_audit_rows")).toBe(812);

    // Failing again: the last values are not repeated either.
    failing = true;
    page = await m.render();
    expect(page).not.toMatch(/^ongrid_approvals_pending /m);
    expect(page).not.toMatch(/^ongrid_audit_rows /m);
    expect(value(parseExposition(page), "ongrid_database_up")).toBe(0);
  });

  it("keeps caller-chosen keys and odd error codes out of the labels", async () => {
    const metrics = fake(() => false);
    metrics.observeCall({ key: "anything_at_all", edgeId: "", decision: "", error: "not_found: unknown skill", result: null, durationMs: 0 });
    const samples = parseExposition(`${await metrics.registry.getSingleMetricAsString("ongrid_skill_calls_total")}\n`);
    expect(samples.map((s) => s.labels)).toEqual([{ skill: UNKNOWN_SKILL, decision: "none", outcome: "error" }]);
    expect(errorCodeOf({ result: null, error: "Weird Code!: boom" })).toBe("other");
    expect(errorCodeOf({ result: { success: false, output: null, duration_ms: 0, truncated: false, edge_id: "", error: { code: "upstream_unavailable", message: "", hint: "" } }, error: "x: y" })).toBe("upstream_unavailable");
  });
});

describe("the skill label's check (hub.offered)", () => {
  it("follows which skills connected edges offer as edges come and go", async () => {
    expect(m.hub.offered("host_load")).toBe(true);
    expect(m.hub.offered("no_such_skill")).toBe(false);
    const second = await startEdge(m, "edge-metrics-2");
    expect(m.hub.connectedCount()).toBe(2);
    await second.stop();
    await waitFor(() => m.hub.connectedCount() === 1, 10_000);
    expect(m.hub.offered("host_load")).toBe(true); // the first edge still offers it
    await edge?.stop();
    edge = undefined;
    await waitFor(() => m.hub.connectedCount() === 0, 10_000);
    expect(m.hub.offered("host_load")).toBe(false);
    // A call of it now (refused: no edge offers it) counts under the unknown label, not under its key.
    const total = (samples: Sample[], skill: string) => samples.filter((x) => x.name === "ongrid_skill_calls_total" && x.labels.skill === skill).reduce((a, x) => a + x.value, 0);
    const before = await scrape();
    expect(await call("host_load", {}, admin, "edge-metrics")).toBeInstanceOf(Error);
    const after = await scrape();
    expect(total(after, UNKNOWN_SKILL) - total(before, UNKNOWN_SKILL)).toBe(1);
    expect(total(after, "host_load")).toBe(total(before, "host_load"));
  });
});
