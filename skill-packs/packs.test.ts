import { execFileSync } from "node:child_process";
import { accessSync, realpathSync, constants, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createPackSet } from "../skill/pack/loader.ts";
import { readManifest } from "../skill/pack/manifest.ts";
import { createRegistry } from "../skill/registry.ts";
import { SYSTEM_PATH } from "../skill/subprocess.ts";
import { loadPack, withEnv } from "./pack-kit.ts";

const ROOT = import.meta.dirname;
const PACKS = readdirSync(ROOT)
  .filter((n) => statSync(join(ROOT, n)).isDirectory() && existsSync(join(ROOT, n, "skill.json")))
  .sort();

/** Runs a pack's executable directly, as the runner does, and returns its one stdout document. */
function runDirect(pack: string, key: string, stdin: string): { status: number; doc: any } {
  try {
    const out = execFileSync(join(ROOT, pack, "pack.py"), [], { cwd: join(ROOT, pack), input: stdin, env: { PATH: SYSTEM_PATH, LANG: "C.UTF-8", ONGRID_SKILL_KEY: key }, stdio: ["pipe", "pipe", "pipe"], encoding: "utf8" });
    return { status: 0, doc: JSON.parse(out) };
  } catch (err) {
    const e = err as { status: number; stdout: string };
    return { status: e.status, doc: JSON.parse(e.stdout) };
  }
}

describe("shipped skill packs", () => {
  it("are the six packs of E3", () => {
    expect(PACKS).toEqual(["bpftool", "ethtool", "kube", "netns", "nft", "ovs"]);
  });

  it("load together from skill-packs/ as one configured directory: ten skills, no problems, no key clashes", () => {
    const registry = createRegistry({ log: pino({ level: "silent" }) });
    const report = createPackSet({ dirs: [ROOT], scope: "host", registry, log: pino({ level: "silent" }) }).rescan();
    expect(report.problems).toEqual([]);
    expect(report.loaded).toEqual([
      "bpftool_show",
      "ethtool_inspect",
      "kubernetes_action",
      "kubernetes_get",
      "netns_inspect",
      "netns_list",
      "nft_ruleset",
      "ovs_show",
      "pod_execute",
      "pod_logs",
    ]);
  });

  it("are refused by a manager: they are host skills", () => {
    for (const pack of PACKS) {
      const { skills, problems } = readManifest(join(ROOT, pack), "manager");
      expect(skills, pack).toEqual([]);
      expect(problems.every((p) => p.rule === "scope"), pack).toBe(true);
    }
  });

  it.each(PACKS)("%s: executable pack.py (python3 shebang), README naming every skill and class, the shared runtime linked from lib/", (pack) => {
    const dir = join(ROOT, pack);
    const exe = join(dir, "pack.py");
    accessSync(exe, constants.X_OK);
    expect(readFileSync(exe, "utf8").split("\n")[0]).toBe("#!/usr/bin/env python3");
    expect(realpathSync(join(dir, "ongrid_pack.py"))).toBe(realpathSync(join(ROOT, "lib", "ongrid_pack.py")));
    const readme = readFileSync(join(dir, "README.md"), "utf8");
    for (const spec of readManifest(dir, "host").skills) {
      expect(readme, `${pack} README names ${spec.key}`).toContain(`\`${spec.key}\``);
      expect(readme, `${pack} README gives the class of ${spec.key}`).toContain(spec.class);
      expect(spec.executable).toBe(exe);
      // Overrides of the tool path must not use the reserved ONGRID_ prefix: the runner drops those.
      for (const name of spec.env) expect(name.startsWith("ONGRID_"), `${spec.key} env ${name}`).toBe(false);
    }
  });

  it.each(PACKS)("%s: answers an unknown ONGRID_SKILL_KEY and non-JSON stdin with a structured error", (pack) => {
    const unknown = runDirect(pack, "no_such_skill", "{}");
    expect(unknown.status).toBe(1);
    expect(unknown.doc.error).toMatchObject({ code: "unknown_skill", hint: expect.stringContaining("the pack serves") });
    const [key] = readManifest(join(ROOT, pack), "host").skills.map((s) => s.key);
    const garbage = runDirect(pack, key, "not json");
    expect(garbage.doc).toEqual({ error: expect.objectContaining({ code: "invalid_argument" }) });
  });

  it("running a pack leaves no __pycache__ in its directory (the loader watches it)", async () => {
    const pack = loadPack(join(ROOT, "netns"));
    await withEnv({ IP_BIN: "/nonexistent/ip" }, () => pack.call("netns_list", {}));
    for (const p of PACKS) expect(existsSync(join(ROOT, p, "__pycache__")), p).toBe(false);
  });
});
