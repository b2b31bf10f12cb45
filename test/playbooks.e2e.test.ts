/** Playbooks and the router through a real manager: PlaybookService, read_skill, layer 0 by playbook name, Route with a scripted model, the CLI. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { sql } from "drizzle-orm";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { PlaybookService, RoutePath } from "../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { cacheFlushSkill } from "./support/skills.ts";
import { BODY_SECTIONS } from "../manager/playbooks/parse.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { startScriptedModel, type ScriptedModel } from "./support/openai-server.ts";
import { runOngrid } from "./support/cli.ts";
import { lastAuditRow } from "./support/audit.ts";
import { refusal } from "./support/rejection.ts";

const BODY = BODY_SECTIONS.map((s) => `## ${s}\ntext\n`).join("");
let m: TestManager;
let model: ScriptedModel;
let ext: string;
let ran = 0;

function writePlaybook(name: string, fm: string): void {
  mkdirSync(join(ext, name), { recursive: true });
  writeFileSync(join(ext, name, "SKILL.md"), `---\nname: ${name}\ndescription: test playbook ${name}\n${fm}\n---\n${BODY}`);
}

const clients = (token: string) => {
  const transport = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { playbooks: createClient(PlaybookService, transport), skills: createClient(SkillService, transport) };
};


const lastRow = () => lastAuditRow(m);

beforeAll(async () => {
  ext = mkdtempSync(join(tmpdir(), "ongrid-ext-pb-"));
  writePlaybook("cache_triage", "allowed_tools: [host_load]\ntriggers: [cache miss storm]");
  writePlaybook("cache_fix", "allowed_tools: [cache_flush]\nrisk_level: medium");
  model = await startScriptedModel();
  m = await bootManager({
    "playbooks.dirs": ext,
    "playbooks.watch": false,
    "model.base_url": model.url,
    "model.model": "router-test",
    "model.timeout": "2s",
    "model.max_retries": 0,
  });
  // A mutating manager skill, to show layer 0 by playbook name.
  m.registry.register(cacheFlushSkill(() => {
      ran++;
    }));
}, 60_000);
afterAll(async () => {
  await m?.stop();
  await model?.close();
  rmSync(ext, { recursive: true, force: true });
});

describe("PlaybookService", () => {
  it("lists built-in and external playbooks, reads one with its body, and answers NOT_FOUND for an unknown name", async () => {
    const viewer = clients(await makeUser(m, "vera", "viewer"));
    const list = await viewer.playbooks.listPlaybooks({});
    expect(list.playbooks.map((p) => p.name)).toEqual(["cache_fix", "cache_triage", "container_diagnosis", "generic_oncall", "host_resource_diagnosis", "network_diagnosis", "service_diagnosis"]);
    expect(list.playbooks.every((p) => p.body === "")).toBe(true);
    expect(list.playbooks.find((p) => p.name === "cache_triage")!.source).toBe("external");
    const net = (await viewer.playbooks.getPlaybook({ name: "network_diagnosis" })).playbook!;
    expect(net.body).toContain("## Recommended tool order");
    expect(net.fallbackSteps.map((s) => s.tool)).toContain("probe_dns");
    const err = await refusal(viewer.playbooks.getPlaybook({ name: "nope" }));
    expect(err.code).toBe(Code.NotFound);
  });

  it("reloads for an admin only; a bad file is reported with its path and the rest reload", async () => {
    const viewer = clients(await makeUser(m, "vik", "viewer"));
    expect((await refusal(viewer.playbooks.reload({}))).code).toBe(Code.PermissionDenied);
    const admin = clients(m.adminToken);
    writePlaybook("disk_extra", "triggers: [raid degraded]");
    mkdirSync(join(ext, "broken"), { recursive: true });
    writeFileSync(join(ext, "broken", "SKILL.md"), "---\nname: broken\n---\n");
    const r = await admin.playbooks.reload({});
    expect(r.added).toEqual(["disk_extra"]);
    expect(r.loaded).toContain("disk_extra");
    const bad = r.problems.filter((p) => p.file === join(ext, "broken", "SKILL.md"));
    expect(bad.map((p) => `${p.field}|${p.rule}|${p.severity}`).sort()).toEqual(["body|required|error", "description|required|error"]);
    rmSync(join(ext, "broken"), { recursive: true });
    rmSync(join(ext, "disk_extra"), { recursive: true });
    expect((await admin.playbooks.reload({})).removed).toEqual(["disk_extra"]);
  });
});

describe("read_skill and layer 0", () => {
  it("read_skill returns the full body, and a structured error for an unknown name", async () => {
    const op = clients(await makeUser(m, "otto", "operator"));
    const ok = await op.skills.executeSkill({ key: "read_skill", input: { case: "params", value: { skill_name: "service_diagnosis" } as never } });
    expect(ok.result?.success).toBe(true);
    const out = toJson(ValueSchema, ok.result!.output as never) as { body: string; allowed_tools: string[] };
    expect(out.body).toContain("## Stop conditions");
    expect(out.allowed_tools).toContain("read_journal");
    const miss = await op.skills.executeSkill({ key: "read_skill", input: { case: "params", value: { skill_name: "redis_diagnosis" } as never } });
    expect(miss.result?.success).toBe(false);
    expect(miss.result?.error).toMatchObject({ code: "unknown_playbook", message: 'no playbook named "redis_diagnosis"' });
    expect(miss.result?.error?.hint).toContain("generic_oncall");
    const meta = (await op.skills.getSkill({ key: "read_skill" })).skill!;
    expect(meta.category).toBe("guidance");
  });

  it("a playbook's allowed_tools decide non-safe calls; safe tools are exempt; an unknown playbook is refused and audited", async () => {
    const op = clients(await makeUser(m, "olaf", "operator"));
    const call = (playbook: string, key = "cache_flush") => op.skills.executeSkill({ key, playbook, input: { case: "params", value: (key === "read_skill" ? { skill_name: "generic_oncall" } : {}) as never } });
    let err = await refusal(call("cache_triage"));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toContain("playbook_whitelist");
    expect((await lastRow()).decisionReason).toMatch(/^playbook_whitelist: "cache_flush" is mutating and not in the playbook's allowed_tools \(host_load\)/);
    // Listed: layer 0 lets it through to the normal rule (a mutating call waits for an approver).
    const parked = await call("cache_fix");
    expect(parked.approval?.key).toBe("cache_flush");
    expect((await lastRow()).decisionReason).toMatch(/^approval_required: /);
    // A safe tool is not held by the whitelist.
    expect((await call("cache_fix", "read_skill")).result?.success).toBe(true);
    err = await refusal(call("no_such_playbook"));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain('playbook: "no_such_playbook" is not a loaded playbook (rule: known)');
    const row = await lastRow();
    expect(row.toolName).toBe("cache_flush");
    expect(row.error).toContain("not a loaded playbook");
    expect(ran).toBe(0);
  });
});

describe("Route", () => {
  it("takes the model's pick, stores the decision, and falls back to rules when the model fails", async () => {
    const op = clients(await makeUser(m, "rita", "operator"));
    model.push({ json: { is_oncall: true, skill_name: "service_diagnosis", confidence: 0.8, reason: "a unit restarts" } });
    const picked = (await op.playbooks.route({ text: "nginx keeps restarting on web-2" })).decision!;
    expect(picked).toMatchObject({ isOncall: true, skillName: "service_diagnosis", path: RoutePath.MODEL, model: "router-test", userId: "rita" });
    expect(picked.usage!.promptTokens).toBeGreaterThan(0);
    const sent = model.requests.at(-1)!.body;
    expect(JSON.stringify(sent.messages)).toContain("cache_triage"); // external playbooks are on the menu

    model.push({ status: 500, error: { message: "boom" } });
    const fallback = (await op.playbooks.route({ text: "[FIRING] disk full on db-3 /var" })).decision!;
    expect(fallback).toMatchObject({ path: RoutePath.RULES, fallbackCause: "http_error", skillName: "host_resource_diagnosis" });

    const before = model.requests.length;
    const refused = (await op.playbooks.route({ text: "推荐一部好看的动漫" })).decision!;
    expect(refused).toMatchObject({ isOncall: false, path: RoutePath.OUT_OF_SCOPE, skillName: "" });
    expect(model.requests.length).toBe(before);

    const rows = (await m.database.db.execute(sql`select id, path, skill_name, fallback_cause, user_id from route_decisions order by created_at`)) as unknown as { rows?: unknown[] };
    const stored = (rows.rows ?? rows) as Array<Record<string, string>>;
    expect(stored.map((r) => [r.id, r.path, r.skill_name, r.fallback_cause, r.user_id])).toEqual([
      [picked.id, "model", "service_diagnosis", "", "rita"],
      [fallback.id, "rules", "host_resource_diagnosis", "http_error", "rita"],
      [refused.id, "out_of_scope", "", "", "rita"],
    ]);
  });

  it("refuses empty and oversized text naming the field", async () => {
    const op = clients(await makeUser(m, "ron", "operator"));
    let err = await refusal(op.playbooks.route({ text: "  " }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain("text: must not be empty (rule: required)");
    err = await refusal(op.playbooks.route({ text: "x".repeat(8001) }));
    expect(err.rawMessage).toContain("text: must be at most 8000 characters, got 8001 (rule: maxLength)");
  });
});

describe("CLI", () => {
  it("`ongrid route` answers from a running manager, and from rules without any model configured", async () => {
    model.push({ json: { is_oncall: true, skill_name: "network_diagnosis", confidence: 0.7, reason: "dns" } });
    const remote = await runOngrid(["route", "--json", "--manager", m.url, "api.internal SERVFAIL"], { ONGRID_TOKEN: m.adminToken });
    expect(remote.code, remote.stderr).toBe(0);
    expect(JSON.parse(remote.stdout)).toMatchObject({ skill_name: "network_diagnosis", path: "model", model: "router-test" });

    const data = mkdtempSync(join(tmpdir(), "ongrid-route-cli-"));
    try {
      const env = { ONGRID_DATA_DIR: data, ONGRID_MODEL_BASE_URL: "", ONGRID_MODEL: "" };
      const local = await runOngrid(["route", "redis", "连接超时", "on", "cache-1"], env);
      expect(local.code, local.stderr).toBe(0);
      expect(local.stdout).toMatch(/^network_diagnosis {2}\(confidence 0\.\d\d\)/);
      expect(local.stdout).toContain("path: rules (not_configured)");
      const off = await runOngrid(["route", "--json", "tell me a joke about cats"], env);
      expect(off.code).toBe(3);
      expect(JSON.parse(off.stdout)).toMatchObject({ is_oncall: false, path: "out_of_scope" });
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });

  it("`ongrid playbooks check` names file, field and rule and exits 1; `list` and `show` work without a manager", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-pb-check-"));
    try {
      mkdirSync(join(dir, "bad"));
      writeFileSync(join(dir, "bad", "SKILL.md"), `---\nname: bad\ndescription: d\nrisk_level: extreme\n---\n${BODY}`);
      const r = await runOngrid(["playbooks", "check", dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`error: ${join(dir, "bad", "SKILL.md")}: risk_level: must be one of`);
      expect(r.stderr).toContain("(rule: enum)");
      expect(r.stdout).toContain("ok: generic_oncall");
      const list = await runOngrid(["playbooks", "list"]);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/^generic_oncall +low +builtin/m);
      const show = await runOngrid(["playbooks", "show", "host_resource_diagnosis"]);
      expect(show.stdout).toContain("## Report format");
      expect(show.stdout).toMatch(/^fallback 1: host_load/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the manager refuses to start without generic_oncall, saying why", async () => {
    const data = mkdtempSync(join(tmpdir(), "ongrid-nogeneric-"));
    try {
      const r = await runOngrid(["manager", "--port", "0"], { ONGRID_DATA_DIR: data, ONGRID_PLAYBOOKS_DISABLED: "generic_oncall" });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('ongrid: no playbook "generic_oncall" is loaded (disabled (playbooks.disabled))');
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});

describe("hot reload on file change", () => {
  it("a manager with playbooks.watch picks up an added, changed and removed SKILL.md without a reload call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-pb-watch-"));
    const w = await bootManager({ "playbooks.dirs": dir, "playbooks.watch": true });
    const until = async (check: () => boolean) => {
      for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 100));
      return check();
    };
    try {
      const write = (description: string) => {
        mkdirSync(join(dir, "watched"), { recursive: true });
        writeFileSync(join(dir, "watched", "SKILL.md"), `---\nname: watched\ndescription: ${description}\n---\n${BODY}`);
      };
      write("first");
      expect(await until(() => w.playbooks.get("watched")?.description === "first")).toBe(true);
      write("second");
      expect(await until(() => w.playbooks.get("watched")?.description === "second")).toBe(true);
      rmSync(join(dir, "watched"), { recursive: true });
      expect(await until(() => w.playbooks.get("watched") === undefined)).toBe(true);
    } finally {
      await w.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
