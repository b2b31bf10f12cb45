/**
 * The exec allowlist file (issue 26 A, spec A6) end to end: a real manager and real compiled edges.
 * The file adds a command to what a viewer may run without approval, on a manager and an edge that
 * both load it; an edge without it refuses what the manager judged safe, saying why; a bad file stops
 * the manager and the edge naming the field; `ongrid skills classify` judges with it, offline.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { spawnEdge, startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { runOngrid } from "./support/cli.ts";

let m: TestManager;
let withFile: TestEdge;
let without: TestEdge;
let dir: string;
let allowFile: string;
let viewer: ReturnType<typeof createClient<typeof SkillService>>;

const ALLOW = `# test: sha256sum of log files is read-only
commands:
  sha256sum:
    flags: b
    operands: file
    max_operands: 8
`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-allow-"));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "app.log"), "one line\n");
  chmodSync(join(dir, "app.log"), 0o644);
  allowFile = join(dir, "exec-allow.yaml");
  writeFileSync(allowFile, ALLOW);
  m = await bootManager({ "skills.exec.read_roots": dir, "skills.exec.allow_file": allowFile });
  withFile = await startEdge(m, "allow-edge", { args: ["--exec-read-root", dir, "--exec-allow-file", allowFile] });
  without = await startEdge(m, "plain-edge", { args: ["--exec-read-root", dir] });
  viewer = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m, "vic", "viewer"))] }));
}, 120_000);
afterAll(async () => {
  await withFile?.stop();
  await without?.stop();
  await m?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const exec = (edgeId: string, command: string) => viewer.executeSkill({ key: "exec", edgeId, input: { case: "params", value: { command } as never } });

describe("an exec allowlist file", () => {
  it("lets a viewer run an added command, without a shell, on an edge that loads the same file", async () => {
    const res = await exec("allow-edge", `sha256sum ${dir}/app.log`);
    expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
    const out = toJson(ValueSchema, res.result!.output as never) as { stdout: string; risk: { class: string }; ran: { via: string } };
    expect(out.stdout).toContain(createHash("sha256").update("one line\n").digest("hex"));
    expect(out.risk.class).toBe("safe");
    expect(out.ran.via).toBe("argv");
  });

  it("keeps the added command's operands inside the read roots and its syntax plain", async () => {
    for (const command of ["sha256sum /etc/shadow", `sha256sum ${dir}/app.log > /tmp/x`, `sha256sum -c ${dir}/app.log`]) {
      const err = await exec("allow-edge", command).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, command).toBe(Code.PermissionDenied);
    }
  });

  it("is refused by an edge whose policy lacks it, with a hint that names the flags", async () => {
    const res = await exec("plain-edge", `sha256sum ${dir}/app.log`).catch((e: unknown) => ConnectError.from(e));
    const text = res instanceof ConnectError ? res.message : JSON.stringify(res.result?.error);
    expect(text).toMatch(/edge refused/);
    expect(text).toMatch(/--exec-allow-file/);
  });

  it("stops the manager at start when the file is refused, naming the key, the file and the field", async () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "commands:\n  sudo: {}\n  sort:\n    long: [output]\n");
    const err = await bootManager({ "skills.exec.allow_file": bad }).then(
      async (mm) => {
        await mm.stop();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(/skills\.exec\.allow_file: .*bad\.yaml/);
    expect(err?.message).toMatch(/commands\.sudo: /);
    expect(err?.message).toMatch(/commands\.sort\.long: sort --output/);
  });

  it("stops the edge at start when the file is refused, naming the flag and the field", async () => {
    const bad = join(dir, "bad-edge.yaml");
    writeFileSync(bad, "commands:\n  nginx:\n    operands: files\n");
    const { child, output } = spawnEdge(["--manager", m.url, "--token", "x", "--id", "bad-edge", "--exec-allow-file", bad]);
    expect(await waitFor(() => child.exitCode !== null, 15_000)).toBe(true);
    expect(child.exitCode).not.toBe(0);
    expect(output()).toMatch(/--exec-allow-file: .*bad-edge\.yaml: commands\.nginx\.operands: /);
  });

  it("is what `ongrid skills classify` judges with, offline", async () => {
    const batch = [{ command: `sha256sum ${dir}/app.log` }, { command: "sha256sum /etc/shadow" }, { command: `sha256sum ${dir}/app.log; rm -rf /` }].map((p) => JSON.stringify(p)).join("\n");
    const withIt = await runOngrid(["skills", "classify", "exec", "--batch", "-", "--read-root", dir, "--exec-allow-file", allowFile], {}, undefined, batch);
    expect(withIt.code, withIt.stderr).toBe(0);
    const answers = withIt.stdout.trim().split("\n").map((l) => JSON.parse(l) as { class: string; read_only: boolean });
    expect(answers.map((a) => a.class)).toEqual(["safe", "mutating", "dangerous"]);
    expect(answers[0].read_only).toBe(true);
    const plain = await runOngrid(["skills", "classify", "exec", "--batch", "-", "--read-root", dir], {}, undefined, batch);
    expect(plain.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { class: string }).class)).toEqual(["mutating", "mutating", "dangerous"]);
    const refused = await runOngrid(["skills", "classify", "exec", "-p", "command=true", "--exec-allow-file", join(dir, "nope.yaml")]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/--exec-allow-file: .*nope\.yaml: cannot read/);
  });
});
