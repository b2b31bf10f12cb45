/** `ongrid sop keygen|sign|verify` through the real CLI, as an operator would use it. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runOngrid } from "./support/cli.ts";

const SOP = `---
id: SOP-042
version: 3
title: Re-create the scratch filesystem on a loop device
skills: [exec]
params:
  exec:
    command: '^mkfs\\.ext4 /dev/loop[0-9]+$'
expires: 2099-06-30T00:00:00Z
---
# Steps
1. Unmount /scratch.
2. Run mkfs.
`;

let dir: string;
const f = (n: string) => join(dir, n);
// No config file or ambient trusted keys leak in from the environment running the tests.
const env = { ONGRID_CONFIG: "", ONGRID_SOP_TRUSTED_KEYS: "" };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-sop-cli-"));
  writeFileSync(f("sop-042.md"), SOP);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("ongrid sop", () => {
  let keyId: string;

  it("keygen writes a 0600 private key and a public key, and refuses to overwrite them", async () => {
    const r = await runOngrid(["sop", "keygen", f("ops"), "--bits", "2048"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(f("ops.key"));
    expect(r.stdout).toContain(f("ops.pub"));
    keyId = r.stdout.match(/key id:\s+([0-9a-f]{16})/)![1];
    expect(statSync(f("ops.key")).mode & 0o777).toBe(0o600);
    expect(readFileSync(f("ops.key"), "utf8")).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(readFileSync(f("ops.pub"), "utf8")).toMatch(/^-----BEGIN PUBLIC KEY-----/);

    const before = readFileSync(f("ops.key"), "utf8");
    const again = await runOngrid(["sop", "keygen", f("ops")], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`ongrid: sop keygen: ${f("ops.key")} already exists; refusing to overwrite it`);
    expect(readFileSync(f("ops.key"), "utf8")).toBe(before);

    const small = await runOngrid(["sop", "keygen", f("small"), "--bits", "1024"], env);
    expect(small.code).toBe(2);
    expect(small.stderr).toMatch(/--bits: must be an integer from 2048/);
    expect(existsSync(f("small.key"))).toBe(false);
  });

  it("sign writes FILE.signed.md and prints id, version, key id and hash", async () => {
    const r = await runOngrid(["sop", "sign", f("sop-042.md"), "--key", f("ops.key")], env);
    expect(r.code, r.stderr).toBe(0);
    const signed = readFileSync(f("sop-042.signed.md"), "utf8");
    expect(signed.startsWith(SOP)).toBe(true);
    expect(signed).toMatch(/-----BEGIN ONGRID SOP SIGNATURE-----\nkey-id: [0-9a-f]{16}\nalgorithm: RSA-PSS-SHA256\n/);
    const hash = createHash("sha256").update(signed).digest("hex");
    expect(r.stdout).toContain(`signed: ${f("sop-042.signed.md")}`);
    expect(r.stdout).toContain("SOP-042 v3");
    expect(r.stdout).toContain(`key id: ${keyId}`);
    expect(r.stdout).toContain(`hash: ${hash}`);
  });

  it("verify accepts the signed SOP with --trusted-key and with approvals.sop_trusted_keys", async () => {
    const signed = readFileSync(f("sop-042.signed.md"), "utf8");
    const hash = createHash("sha256").update(signed).digest("hex");
    const ok = `ok: SOP-042 v3 (hash ${hash}) signed by ${keyId}, expires 2099-06-30T00:00:00.000Z`;

    const r = await runOngrid(["sop", "verify", f("sop-042.signed.md"), "--trusted-key", f("ops.pub")], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(ok);

    const full = await runOngrid(["sop", "verify", f("sop-042.signed.md"), "--trusted-key", f("ops.pub"), "--skill", "exec", "--params", '{"command":"mkfs.ext4 /dev/loop3"}'], env);
    expect(full.code, full.stderr).toBe(0);
    expect(full.stdout).toContain(ok);

    expect((await runOngrid(["sop", "keygen", f("second"), "--bits", "2048"], env)).code).toBe(0);
    writeFileSync(f("manager.yaml"), `approvals:\n  sop_trusted_keys: ${f("second.pub")}:${f("ops.pub")}\n`);
    const viaConfig = await runOngrid(["sop", "verify", f("sop-042.signed.md"), "--config", f("manager.yaml")], env);
    expect(viaConfig.code, viaConfig.stderr).toBe(0);
    expect(viaConfig.stdout).toContain(ok);

    const viaEnv = await runOngrid(["sop", "verify", f("sop-042.signed.md")], { ...env, ONGRID_SOP_TRUSTED_KEYS: f("ops.pub") });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(viaEnv.stdout).toContain(ok);

    const noKeys = await runOngrid(["sop", "verify", f("sop-042.signed.md")], env);
    expect(noKeys.code).toBe(1);
    expect(noKeys.stderr).toContain("ongrid: no SOP signing keys are trusted (approvals.sop_trusted_keys is empty)");
  });

  it("verify refuses a tampered copy (exit 1, naming the signature)", async () => {
    const signed = readFileSync(f("sop-042.signed.md"), "utf8");
    writeFileSync(f("tampered.md"), signed.replace("/dev/loop[0-9]+", "/dev/[a-z0-9]+"));
    const r = await runOngrid(["sop", "verify", f("tampered.md"), "--trusted-key", f("ops.pub")], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`ongrid: SOP "SOP-042" v3: signature does not verify against any trusted key (tampered, or signed by an untrusted key ${keyId})`);
    expect(r.stdout).toBe("");
  });

  it("verify refuses another skill and a param outside the SOP (exit 1)", async () => {
    const other = await runOngrid(["sop", "verify", f("sop-042.signed.md"), "--trusted-key", f("ops.pub"), "--skill", "restart_service"], env);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('ongrid: SOP "SOP-042" v3 does not cover skill "restart_service" (covers: exec)');

    const param = await runOngrid(["sop", "verify", f("sop-042.signed.md"), "--trusted-key", f("ops.pub"), "--skill", "exec", "--params", '{"command":"mkfs.ext4 /dev/sda"}'], env);
    expect(param.code).toBe(1);
    expect(param.stderr).toContain('does not allow exec param "command" = "mkfs.ext4 /dev/sda" (rule: pattern ^mkfs\\.ext4 /dev/loop[0-9]+$)');
  });

  it("verify exits 2 for an unsigned document and bad flags", async () => {
    const unsigned = await runOngrid(["sop", "verify", f("sop-042.md"), "--trusted-key", f("ops.pub")], env);
    expect(unsigned.code).toBe(2);
    expect(unsigned.stderr).toContain("ongrid: sop: not signed (no ONGRID SOP SIGNATURE block)");

    const badJson = await runOngrid(["sop", "verify", f("sop-042.signed.md"), "--trusted-key", f("ops.pub"), "--skill", "exec", "--params", "{nope"], env);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toMatch(/--params: not valid JSON/);
  });

  it("sign refuses a file that is already signed", async () => {
    const r = await runOngrid(["sop", "sign", f("sop-042.signed.md"), "--key", f("ops.key"), "--out", f("twice.md")], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("ongrid: sop: already signed (it has an ONGRID SOP SIGNATURE block)");
    expect(existsSync(f("twice.md"))).toBe(false);
  });
});
