/** Subprocess packs end to end (E1–E2): a real manager with manager-scope packs, the compiled edge with host-scope packs, rescans on change, SIGHUP and `ongrid packs rescan`. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { SkillScope } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { ROOT, runOngrid, startAndWaitFor, stopGroup } from "./support/cli.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { writePack } from "./support/packs.ts";

let work: string;
let managerPacks: string;
let m: TestManager;
let skills: ReturnType<typeof createClient<typeof SkillService>>;
const edges: TestEdge[] = [];
/** An ordinary caller (role operator): runs and lists the skills in this file. */
let opToken: string;
/** The environment of a CLI run against `m` as the admin (RescanPacks needs role admin). */
const asAdmin = () => ({ ONGRID_TOKEN: m.adminToken });

function output(res: { result?: { output?: unknown } }): any {
  return res.result?.output ? toJson(ValueSchema, res.result.output as never) : null;
}

async function keysOf(scope: SkillScope, edgeId = ""): Promise<string[]> {
  return (await skills.listSkills({ scope, edgeId })).skills.map((s) => s.key);
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "ongrid-packs-e2e-"));
  managerPacks = join(work, "manager-packs");
  mkdirSync(managerPacks);
  writePack(managerPacks, "greet", "pack_greet");
  m = await bootManager({ "packs.dirs": managerPacks, "packs.watch": false });
  opToken = await makeUser(m, "oper", "operator");
  skills = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(opToken)] }));
});
afterAll(async () => {
  await Promise.all(edges.map((e) => e.stop()));
  await m?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("manager-scope packs", () => {
  it("are listed with scope manager and run through ExecuteSkill, audited", async () => {
    expect(await keysOf(SkillScope.MANAGER)).toContain("pack_greet");
    const res = await skills.executeSkill({ key: "pack_greet", input: { case: "paramsJson", value: '{"word":"hello"}' } });
    expect(res.result?.success).toBe(true);
    expect(output(res)).toMatchObject({ marker: "greet", params: { word: "hello" }, key: "pack_greet" });
    await m.audit.flush();
    const [row] = await m.audit.list({ afterSeq: Number(res.auditSeq) - 1, limit: 1 });
    expect(row).toMatchObject({ toolName: "pack_greet", decision: "allow" });
  });

  it("bad params are refused by the manifest's schema before the pack runs", async () => {
    const err = await skills.executeSkill({ key: "pack_greet", input: { case: "paramsJson", value: '{"word":"Not Lower"}' } }).catch((e) => e);
    expect(String(err.message)).toMatch(/param "word": must match pattern/);
  });

  it("`ongrid packs rescan` adds, changes and removes packs; problems are printed and fail the command", async () => {
    writePack(managerPacks, "second", "pack_second");
    // RescanPacks needs role admin: an operator's token is refused, naming the role, and nothing is loaded
    const refused = await runOngrid(["packs", "rescan", "--manager", m.url, "--json"], { ONGRID_TOKEN: opToken });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/permission_denied: ongrid\.v1\.SkillService\/RescanPacks needs role admin or above; "oper" is operator/);
    expect(await keysOf(SkillScope.MANAGER)).not.toContain("pack_second");
    const added = await runOngrid(["packs", "rescan", "--manager", m.url, "--json"], asAdmin());
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ added: ["pack_second"], changed: [], removed: [] });
    expect(await keysOf(SkillScope.MANAGER)).toContain("pack_second");

    writePack(managerPacks, "second", "pack_second", { description: "A changed description; use it to check rescans." });
    const changed = JSON.parse((await runOngrid(["packs", "rescan", "--manager", m.url, "--json"], asAdmin())).stdout);
    expect(changed).toMatchObject({ added: [], changed: ["pack_second"] });
    expect((await skills.getSkill({ key: "pack_second" })).skill?.description).toMatch(/changed description/);

    rmSync(join(managerPacks, "second"), { recursive: true });
    mkdirSync(join(managerPacks, "broken"));
    writeFileSync(join(managerPacks, "broken", "skill.json"), '{"key": "pack_broken", "class": "risky"}');
    const removed = await runOngrid(["packs", "rescan", "--manager", m.url, "--json"], asAdmin());
    expect(removed.code).toBe(1);
    const r = JSON.parse(removed.stdout);
    expect(r.removed).toEqual(["pack_second"]);
    expect(r.loaded).toEqual(["pack_greet"]);
    expect(r.problems.join("\n")).toMatch(/broken\/skill\.json: class: must be one of "safe", "mutating", "dangerous" \(rule: enum\)/);
    expect(r.problems.join("\n")).toMatch(/broken\/skill\.json: executable: is required \(rule: required\)/);
    rmSync(join(managerPacks, "broken"), { recursive: true });
    expect(await keysOf(SkillScope.MANAGER)).not.toContain("pack_second");
  });

  it("a manager watching its pack directory picks up a new pack and a removal by itself", async () => {
    const dir = join(work, "watched-packs");
    mkdirSync(dir);
    const watched = await bootManager({ "packs.dirs": dir });
    try {
      writePack(dir, "late", "pack_late");
      expect(await waitFor(() => watched.registry.has("pack_late"), 10_000)).toBe(true);
      rmSync(join(dir, "late"), { recursive: true });
      expect(await waitFor(() => !watched.registry.has("pack_late"), 10_000)).toBe(true);
    } finally {
      await watched.stop();
    }
  });

  it("a manager started from the CLI rescans on SIGHUP", async () => {
    const dir = join(work, "sighup-packs");
    mkdirSync(dir);
    // The token is the bootstrap admin's, printed once on the first start, on the line after the notice.
    const { child, match } = await startAndWaitFor(
      process.execPath,
      [join(ROOT, "bin", "ongrid.mjs"), "manager", "--port", "0", "--data", join(work, "sighup-data")],
      /listening on (http:\/\/\S+)[^]*?first start: created user "admin"[^\n]*\n(ogu_[0-9a-f]{12}_[A-Za-z0-9_-]{43})\n/,
      { env: { ONGRID_PACK_DIRS: dir, ONGRID_PACK_WATCH: "false", ONGRID_LOG_LEVEL: "warn", DATABASE_URL: "" } },
    );
    try {
      const client = createClient(SkillService, createConnectTransport({ baseUrl: match[1]!, httpVersion: "1.1", interceptors: [bearer(match[2]!)] }));
      const has = async () => (await client.listSkills({})).skills.some((s) => s.key === "pack_hup");
      writePack(dir, "hup", "pack_hup");
      await new Promise((r) => setTimeout(r, 500));
      expect(await has()).toBe(false); // not watching: nothing happens until the signal
      process.kill(child.pid!, "SIGHUP");
      expect(await waitFor(has, 10_000)).toBe(true);
    } finally {
      await stopGroup(child);
    }
  });
});

describe("host-scope packs on the compiled edge", () => {
  it("a pack dropped into the edge's directory is listed with scope host, runs, and disappears when removed — without a reconnect", async () => {
    const dir = join(work, "edge-packs");
    mkdirSync(dir);
    writePack(dir, "first", "pack_first");
    const edge = await startEdge(m, "pack-edge-1", { args: ["--pack-dir", dir] });
    edges.push(edge);
    const hostKeys = () => keysOf(SkillScope.HOST, "pack-edge-1");
    expect(await hostKeys()).toContain("pack_first");

    writePack(dir, "dropped", "pack_dropped");
    expect(await waitFor(async () => (await hostKeys()).includes("pack_dropped"), 10_000)).toBe(true);
    const listed = (await skills.listSkills({ scope: SkillScope.HOST })).skills.find((s) => s.key === "pack_dropped");
    expect(listed?.edgeIds).toEqual(["pack-edge-1"]);
    const res = await skills.executeSkill({ key: "pack_dropped", edgeId: "pack-edge-1", input: { case: "paramsJson", value: '{"word":"fleet"}' } });
    expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
    expect(output(res)).toMatchObject({ marker: "dropped", params: { word: "fleet" }, key: "pack_dropped", cwd: join(dir, "dropped") });
    expect(res.result?.edgeId).toBe("pack-edge-1");

    rmSync(join(dir, "dropped"), { recursive: true });
    expect(await waitFor(async () => !(await hostKeys()).includes("pack_dropped"), 10_000)).toBe(true);
    const gone = await skills.executeSkill({ key: "pack_dropped", edgeId: "pack-edge-1", input: { case: "paramsJson", value: '{"word":"fleet"}' } }).catch((e) => e);
    expect(String(gone.message)).toMatch(/unknown skill "pack_dropped"|does not offer skill "pack_dropped"/);
    // One tunnel all along: the inventory frame replaced the skills in place.
    expect(edge.output().match(/connected to the manager/g)).toHaveLength(1);
  });

  it("with --no-watch-packs the edge rescans on SIGHUP only", async () => {
    const dir = join(work, "edge-packs-hup");
    mkdirSync(dir);
    const edge = await startEdge(m, "pack-edge-2", { args: ["--pack-dir", dir, "--no-watch-packs"] });
    edges.push(edge);
    writePack(dir, "hup", "pack_edge_hup");
    const has = async () => (await keysOf(SkillScope.HOST, "pack-edge-2")).includes("pack_edge_hup");
    await new Promise((r) => setTimeout(r, 600));
    expect(await has()).toBe(false);
    edge.child.kill("SIGHUP");
    expect(await waitFor(has, 10_000)).toBe(true);
    expect(edge.child.exitCode).toBeNull();
  });

  it("an edge refuses a broken pack, keeps the good ones, and logs the file, field and rule", async () => {
    const dir = join(work, "edge-packs-bad");
    mkdirSync(dir);
    writePack(dir, "good", "pack_good");
    mkdirSync(join(dir, "bad"));
    writeFileSync(join(dir, "bad", "skill.json"), JSON.stringify({ key: "pack_bad", name: "x", description: "y", class: "safe", executable: "../good/run.sh" }));
    const edge = await startEdge(m, "pack-edge-3", { args: ["--pack-dir", dir] });
    edges.push(edge);
    expect(await keysOf(SkillScope.HOST, "pack-edge-3")).toContain("pack_good");
    expect(await keysOf(SkillScope.HOST, "pack-edge-3")).not.toContain("pack_bad");
    // pino writes JSON: the quotes in the message are escaped there.
    expect(edge.output()).toMatch(/bad\/skill\.json: executable: \\"\.\.\/good\/run\.sh\\" resolves to .*outside the pack directory .*\(rule: inside_pack\)/);
  });
});
