/** The real `ongrid` CLI and `npm start`, as an operator would use them. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase } from "../manager/db/client.ts";
import { runOngrid, runOngrid as runCli, startAndWaitFor, stopGroup } from "./support/cli.ts";
import { startFakeSearx, type FakeSearx } from "./support/searxng.ts";

let dir: string;
let searx: FakeSearx;
const env = () => ({ ONGRID_WEB_SEARCH_URL: searx.url, DATABASE_URL: "" });
/** What the manager prints on its first start: a notice, then the bootstrap admin's API token on a line of its own. */
const BOOTSTRAP_TOKEN = /first start: created user "admin"[^\n]*\n(ogu_[0-9a-f]{12}_[A-Za-z0-9_-]{43})\n/;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-cli-"));
  searx = await startFakeSearx();
});
afterAll(async () => {
  await searx?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("ongrid CLI", () => {
  it("prints help for every command", async () => {
    for (const args of [["--help"], ["manager", "--help"], ["skills", "run", "--help"], ["audit", "export", "--help"]]) {
      const r = await runOngrid(args);
      expect(r.code, args.join(" ")).toBe(0);
      expect(r.stdout).toMatch(/Usage: ongrid/);
    }
  });

  it("lists skills as a table and as JSON", async () => {
    const table = await runOngrid(["skills", "list", "--data", join(dir, "offline")]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^KEY\s+SCOPE\s+CLASS/m);
    // offline, the list is the manager's own registry, and stderr says so and how to see the edges' skills
    expect(table.stderr).toMatch(/^note: no running manager found, so this lists only the manager's own skills, not those of edges .*--manager URL/m);
    expect(table.stdout).toMatch(/web_search\s+manager\s+safe/);
    const json = await runOngrid(["skills", "list", "--json"]);
    const skills = JSON.parse(json.stdout) as Array<{ key: string }>;
    expect(skills.map((s) => s.key)).toContain("web_search");
  });

  it("runs a skill with typed --param values, audits it, verifies and exports the log", async () => {
    const data = join(dir, "run");
    const run = await runOngrid(["skills", "run", "web_search", "--param", "query=disk full on /var", "--param", "limit=2", "--session", "cli-1", "--json", "--data", data], env());
    expect(run.code, run.stderr).toBe(0);
    const envelope = JSON.parse(run.stdout);
    expect(envelope.success).toBe(true);
    expect(envelope.output.returned).toBe(2);

    const bad = await runOngrid(["skills", "run", "web_search", "--param", "limit=99", "--data", data], env());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/param "query": is required \(rule: required\)/);
    expect(bad.stderr).toMatch(/param "limit": must be <= 50 \(rule: maximum\)/);

    const list = await runOngrid(["audit", "list", "--json", "--data", data]);
    const rows = JSON.parse(list.stdout) as Array<{ seq: number; tool_name: string; session_id: string; error: string }>;
    expect(rows.map((r) => r.seq)).toEqual([1, 2]);
    expect(rows[0]).toMatchObject({ tool_name: "web_search", session_id: "cli-1", error: "" });
    expect(rows[1].error).toMatch(/^invalid_argument/);

    const filtered = await runOngrid(["audit", "list", "--json", "--session", "cli-1", "--data", data]);
    expect(JSON.parse(filtered.stdout)).toHaveLength(1);

    const verify = await runOngrid(["audit", "verify", "--data", data]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/intact: 2 rows/);

    const out = join(dir, "export.jsonl");
    const exp = await runOngrid(["audit", "export", "--out", out, "--data", data]);
    expect(exp.code, exp.stderr).toBe(0);
    expect(exp.stderr).toContain(`exported 2 rows to ${out}`);
    const lines = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.seq)).toEqual([1, 2]);
    expect(lines[0].row_hash).toMatch(/^[0-9a-f]{64}$/);

    // tamper with row 1 behind the log's back: verify must fail and name it
    const database = await openDatabase({ dataDir: data });
    await database.db.execute(sql`update tool_calls set caller_role = 'viewer' where seq = 1`);
    await database.close();
    const broken = await runOngrid(["audit", "verify", "--data", data]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/BROKEN at row 1/);
  });

  it("passes `skills lint` for every builtin, manager and edge, and every base tool", async () => {
    const r = await runOngrid(["skills", "lint"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // 2 manager builtins + 22 base tools + 12 edge builtins
    expect(r.stdout).toMatch(/^36 skills checked$/m);
    // a base tool's waived finding shows it was linted
    expect(r.stdout).toMatch(/fleet_host_files: manager skill takes param "path".*\(waived: path is read on the edges/);
    // exec breaks the key rule on purpose (the spec fixes its key): reported as a waived warning
    expect(r.stdout).toMatch(/exec: .*\(waived: the key is fixed by SPEC D5/);
    const json = await runOngrid(["skills", "lint", "--json"]);
    const findings = JSON.parse(json.stdout) as Array<{ severity: string }>;
    expect(findings.filter((f) => f.severity === "error")).toEqual([]);
  });

  it("refuses bad config at start, naming the key", async () => {
    const port = await runOngrid(["manager", "--data", join(dir, "x")], { ONGRID_PORT: "seventy" });
    expect(port.code).toBe(2);
    expect(port.stderr).toMatch(/server\.port: must be integer \(rule: type; set by ONGRID_PORT/);

    const file = join(dir, "bad.yaml");
    writeFileSync(file, "server:\n  prot: 80\nskills:\n  output_cap_bytes: 10\n");
    const cfg = await runOngrid(["manager", "--config", file]);
    expect(cfg.code).toBe(2);
    expect(cfg.stderr).toMatch(/server\.prot: is not a known key \(rule: additionalProperties; set by file .*bad\.yaml\)/);
    expect(cfg.stderr).toMatch(/skills\.output_cap_bytes: must be >= 256 \(rule: minimum; set by file/);

    const url = await runOngrid(["manager", "--data", join(dir, "y")], { DATABASE_URL: "mysql://x" });
    expect(url.code).toBe(2);
    expect(url.stderr).toMatch(/database_url: must match pattern/);
  });
});

describe("against a running manager", () => {
  it("uses --manager URL for run, list, verify and export, and is found without it from the data dir; SIGTERM stops it cleanly", async () => {
    const data = join(dir, "remote");
    const { child, match } = await startAndWaitFor(
      process.execPath,
      ["bin/ongrid.mjs", "manager", "--port", "0", "--data", data],
      new RegExp(`listening on (http://\\S+)[^]*?${BOOTSTRAP_TOKEN.source}`),
      { env: env() },
    );
    const url = match[1];
    // every --manager call below authenticates with the token the manager printed (ONGRID_TOKEN)
    const runOngrid = (args: string[]) => runCli(args, { ONGRID_TOKEN: match[2] });
    try {
      const run = await runOngrid(["skills", "run", "web_search", "--param", "query=remote call", "--param", "limit=1", "--json", "--manager", url]);
      expect(run.code, run.stderr).toBe(0);
      const envelope = JSON.parse(run.stdout);
      expect(envelope).toMatchObject({ success: true, truncated: false, edge_id: "", audit_seq: "1" });
      expect(typeof envelope.duration_ms).toBe("number");

      const bad = await runOngrid(["skills", "run", "web_search", "--param", "limit=0", "--manager", url]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/manager answered invalid_argument: .*param "limit": must be >= 1 \(rule: minimum\)/);

      const list = await runOngrid(["audit", "list", "--json", "--manager", url]);
      expect(JSON.parse(list.stdout).map((r: { seq: number }) => r.seq)).toEqual([1, 2]);
      const table = await runOngrid(["skills", "list", "--scope", "manager", "--manager", url]);
      expect(table.stdout).toMatch(/web_search\s+manager\s+safe/);
      const wrongScope = await runOngrid(["skills", "list", "--scope", "edge", "--manager", url]);
      expect(wrongScope.code).toBe(2);
      expect(wrongScope.stderr).toMatch(/--scope: must be one of host, manager/);

      const verify = await runOngrid(["audit", "verify", "--json", "--manager", url]);
      expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, rowsChecked: 2, lastSeq: 2 });
      const exp = await runOngrid(["audit", "export", "--manager", url]);
      expect(exp.stdout.trim().split("\n").map((l) => JSON.parse(l).seq)).toEqual([1, 2]);
      expect(exp.stderr).toMatch(/exported 2 rows\n?$/);
      const badOut = await runOngrid(["audit", "export", "--out", join(dir, "no/such/dir/x.jsonl"), "--manager", url]);
      expect(badOut.code).toBe(2);
      expect(badOut.stderr).toMatch(/--out: cannot write .*ENOENT/);

      // without a token the manager refuses the CLI (and audits the refusal: row 3)
      const anonymous = await runCli(["skills", "list", "--manager", url], { ONGRID_TOKEN: "", ONGRID_TOKEN_FILE: "" });
      expect(anonymous.code).toBe(1);
      expect(anonymous.stderr).toMatch(/manager answered unauthenticated: no API token/);

      // without --manager, the CLI finds the manager holding the data dir and asks it over RPC
      const found = await runCli(["audit", "list", "--json", "--data", data], { ...env(), ONGRID_TOKEN: match[2] });
      expect(found.code, found.stderr).toBe(0);
      expect(JSON.parse(found.stdout).map((r: { seq: number }) => r.seq)).toEqual([1, 2, 3]);
    } finally {
      child.kill("SIGTERM");
    }
    const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.once("exit", (c) => r(c))));
    expect(code).toBe(0);
    expect(existsSync(join(data, "ongrid.lock"))).toBe(false);
    const after = await runOngrid(["audit", "verify", "--data", data]);
    expect(after.stdout).toMatch(/intact: 3 rows checked/);
    const rows = JSON.parse((await runCli(["audit", "list", "--json", "--data", data])).stdout) as Array<{ seq: number; decision: string; decision_reason: string; caller_user_id: string }>;
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(rows[0]).toMatchObject({ decision: "allow", caller_user_id: "admin" });
    expect(rows[2]).toMatchObject({ decision: "deny", caller_user_id: "" });
    expect(rows[2].decision_reason).toMatch(/^unauthenticated: no API token/);
  });
});

describe("a manager holding the data directory", () => {
  it("the CLI finds it from --data and works through it with a token; without one, or for what cannot go over RPC, it says what to do", async () => {
    const data = join(dir, "held");
    const { child, match } = await startAndWaitFor(
      process.execPath,
      ["bin/ongrid.mjs", "manager", "--port", "0", "--data", data, "--local-edge", "--local-edge-packs", "skill-packs"],
      new RegExp(`listening on (http://\\S+)[^]*?${BOOTSTRAP_TOKEN.source}[^]*?local edge "(\\S+)" started`),
      { env: env() },
    );
    const [, url, token, edgeId] = match;
    try {
      // The lock file names the manager's URL, which is how the CLI finds it.
      expect(readFileSync(join(data, "ongrid.lock"), "utf8")).toContain(`\nurl ${url}\n`);

      // No --manager: the edge's skills come from the manager over RPC (the local edge registers them once its tunnel is up).
      let listed: Array<{ key: string; scope: string }> = [];
      for (let i = 0; i < 50 && !listed.some((s) => s.scope === "SKILL_SCOPE_HOST"); i++) {
        if (i) await new Promise((r) => setTimeout(r, 200));
        const r = await runCli(["skills", "list", "--json", "--data", data], { ...env(), ONGRID_TOKEN: token, ONGRID_MANAGER_URL: "" });
        expect(r.code, r.stderr).toBe(0);
        expect(r.stderr).not.toMatch(/note: no running manager/);
        listed = JSON.parse(r.stdout);
      }
      expect(listed.map((s) => s.key)).toEqual(expect.arrayContaining(["web_search", "host_load"]));
      const table = await runCli(["skills", "list", "--data", data], { ...env(), ONGRID_TOKEN: token, ONGRID_MANAGER_URL: "" });
      expect(table.stdout).toMatch(/host_load\s+host\s+safe/);

      // The token may come from a file too.
      const tokenFile = join(dir, "held-token");
      writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
      const byFile = await runCli(["edge", "list", "--data", data, "--token-file", tokenFile], { ...env(), ONGRID_TOKEN: "", ONGRID_MANAGER_URL: "" });
      expect(byFile.code, byFile.stderr).toBe(0);
      expect(byFile.stdout).toContain(edgeId);

      // Without a token: not the lock, but what is going on and how to pass one.
      const anonymous = await runCli(["skills", "list", "--data", data], { ...env(), ONGRID_TOKEN: "", ONGRID_TOKEN_FILE: "", ONGRID_MANAGER_URL: "" });
      expect(anonymous.code).toBe(1);
      expect(anonymous.stderr).toContain(`is held by the ongrid manager at ${url} (pid ${child.pid})`);
      expect(anonymous.stderr).toMatch(/hint: pass it in ONGRID_TOKEN, or in a file with --token-file FILE \(or ONGRID_TOKEN_FILE\)/);

      // What only works on the database itself (a second manager on it) says it cannot go through the running one.
      const second = await runCli(["manager", "--port", "0", "--data", data], env());
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`is held by the ongrid manager at ${url} (pid ${child.pid}`);
      expect(second.stderr).toMatch(/cannot be done through it: stop that manager first/);
    } finally {
      await stopGroup(child);
    }
    expect(existsSync(join(data, "ongrid.lock"))).toBe(false);
  });
});

describe("npm start", () => {
  it("starts the manager on embedded PGlite with a local edge, serves ListSkills with host skills, and the web console on the same port", async () => {
    const data = join(dir, "start");
    const { child, match, output } = await startAndWaitFor(
      "npm",
      ["start", "--", "--port", "0", "--data", data],
      new RegExp(`${BOOTSTRAP_TOKEN.source}[^]*?local edge "(\\S+)" started; try: .* --manager (http://\\S+)[^]*?web console: (http://\\S+) \\(log in`),
      { env: { DATABASE_URL: "" } },
    );
    const [, token, edgeId, url, consoleUrl] = match;
    try {
      // `npm start` built the console (prestart) and the manager serves it on its one port
      expect(consoleUrl).toBe(`${url}/`);
      const page = await fetch(consoleUrl);
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/<div id="root">/);
      // the printed token is what lets a caller in: without it the manager answers 401
      const anonymous = await fetch(`${url}/ongrid.v1.SkillService/ListSkills`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(anonymous.status).toBe(401);
      let body: { skills: Array<{ key: string; scope: string; edgeIds?: string[] }> } = { skills: [] };
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        const res = await fetch(`${url}/ongrid.v1.SkillService/ListSkills`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: "{}" });
        expect(res.status).toBe(200);
        body = (await res.json()) as typeof body;
        if (body.skills.some((s) => s.scope === "SKILL_SCOPE_HOST")) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(body.skills.map((s) => s.key)).toContain("web_search");
      const tcp = body.skills.find((s) => s.key === "probe_tcp");
      expect(tcp, output()).toMatchObject({ scope: "SKILL_SCOPE_HOST", edgeIds: [edgeId] });
    } finally {
      await stopGroup(child);
    }
  });
});
