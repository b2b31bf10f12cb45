/** `ongrid users`, `ongrid tokens` and `ongrid approvals` as operators use them, against a real manager and edge. */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOngrid } from "./support/cli.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { makeUser } from "./support/auth.ts";

let m: TestManager;
let edge: TestEdge;
let dir: string;
const lastLine = (s: string) => s.trim().split("\n").pop()!.trim();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-identity-cli-"));
  m = await bootManager();
  edge = await startEdge(m, "cli-edge");
}, 60_000);
afterAll(async () => {
  await edge?.stop();
  await m?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("users, tokens and approvals from the command line", () => {
  it("creates users and tokens, refuses what a role may not do, approves a parked call, revokes a token", async () => {
    const asAdmin = { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: m.adminToken };
    let r = await runOngrid(["users", "add", "alice", "--role", "approver"], asAdmin);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/alice\s+approver/);
    expect(r.stderr).toContain("next: ongrid tokens create --user alice");
    r = await runOngrid(["users", "add", "olga", "--role", "operator"], asAdmin);
    expect(r.code, r.stderr).toBe(0);
    r = await runOngrid(["users", "add", "Bad Name", "--role", "operator"], asAdmin);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/id: "Bad Name" is not a valid user id/);
    r = await runOngrid(["users", "add", "x", "--role", "root"], asAdmin);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--role: "root" is not a role/);

    r = await runOngrid(["tokens", "create", "--user", "alice", "--ttl", "1h", "--description", "laptop"], asAdmin);
    expect(r.code, r.stderr).toBe(0);
    const alice = lastLine(r.stdout);
    expect(alice).toMatch(/^ogu_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    const aliceId = alice.slice(4, 16);
    r = await runOngrid(["tokens", "create", "--user", "olga"], asAdmin);
    const olga = lastLine(r.stdout);

    r = await runOngrid(["users", "add", "mallory", "--role", "admin"], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: alice });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/permission_denied: .*needs role admin or above; "alice" is approver/);
    r = await runOngrid(["skills", "list"], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: "" });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/unauthenticated: no API token/);

    const target = join(dir, "approved-from-cli");
    r = await runOngrid(["skills", "run", "exec", "--edge", "cli-edge", "--param", `command=touch ${target}`], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: olga });
    expect(r.code, r.stderr).toBe(0);
    const id = lastLine(r.stdout);
    expect(id).toMatch(/^apr_[0-9a-f]{16}$/);
    expect(r.stderr).toMatch(/approval required: apr_.*needs 1 approver other than you/);
    expect(existsSync(target)).toBe(false);

    r = await runOngrid(["approvals", "list", "--state", "pending"], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: alice });
    expect(r.stdout).toContain(id);
    r = await runOngrid(["approvals", "approve", id], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: olga });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/needs role approver/);
    r = await runOngrid(["approvals", "approve", id, "--comment", "fine"], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: alice });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/approvals: 1 of 1 \(alice\)/);
    expect(await waitFor(() => existsSync(target), 15_000)).toBe(true);

    r = await runOngrid(["tokens", "list", "--user", "alice", "--json"], asAdmin);
    const listed = JSON.parse(r.stdout) as Array<{ id: string; description: string }>;
    expect(listed.map((t) => t.id)).toContain(aliceId);
    expect(r.stdout).not.toContain(alice); // never the token itself
    r = await runOngrid(["tokens", "revoke", aliceId], asAdmin);
    expect(r.code, r.stderr).toBe(0);
    r = await runOngrid(["approvals", "list"], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: alice });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/unauthenticated: API token [0-9a-f]{12} was revoked/);
  }, 120_000);

  it("the approval demo works by default, and a command that fails after approval shows as failed with its output as text", async () => {
    const oscar = { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: await makeUser(m, "oscar", "operator") };
    const carol = { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: await makeUser(m, "carol", "approver") };
    // restart_service (mutating) in the default NORMAL mode goes to an approver; it is not refused.
    let r = await runOngrid(["skills", "run", "restart_service", "--edge", "cli-edge", "--param", "unit=ongrid-test-none.service"], oscar);
    expect(r.code, r.stderr).toBe(0);
    expect(lastLine(r.stdout)).toMatch(/^apr_[0-9a-f]{16}$/);
    expect(r.stderr).toMatch(/approval required: apr_/);
    expect(r.stderr).not.toContain("guardrail_high_risk");

    // A mutating command line that prints on both streams and exits 2, approved, then read back.
    r = await runOngrid(["skills", "run", "exec", "--edge", "cli-edge", "--param", "command=echo partial-out; echo second-line; ls /nonexistent-ongrid-dir"], oscar);
    expect(r.code, r.stderr).toBe(0);
    const id = lastLine(r.stdout);
    r = await runOngrid(["approvals", "approve", id], carol);
    expect(r.code, r.stderr).toBe(0);
    let got = "";
    expect(
      await waitFor(async () => {
        got = (await runOngrid(["approvals", "get", id], carol)).stdout;
        return got.includes("result:");
      }, 20_000),
    ).toBe(true);
    expect(got).toMatch(/result: FAILED: exec on cli-edge: exit_status: the command exited with status 2/);
    expect(got).toMatch(/hint: /);
    expect(got).toContain("exit_code: 2");
    // stdout and stderr as text blocks, not escaped JSON strings; no null anywhere.
    expect(got).toMatch(/── stdout ──\n\s+partial-out\n\s+second-line\n/);
    expect(got).toMatch(/── stderr ──\n\s+ls: .*nonexistent-ongrid-dir/);
    expect(got).not.toContain("\\n");
    expect(got).not.toMatch(/\bnull\b/);
    // The audit row says it failed.
    r = await runOngrid(["audit", "list", "--tool", "exec", "--json"], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: m.adminToken });
    const rows = JSON.parse(r.stdout) as Array<{ error: string; approval_id?: string }>;
    expect(rows.some((row) => row.error.startsWith("exit_status: the command exited with status 2"))).toBe(true);
    // The table: the request's "ask" row says it was parked (not "ok"), the run's row says why it failed.
    r = await runOngrid(["audit", "list", "--tool", "exec"], { ONGRID_MANAGER_URL: m.url, ONGRID_TOKEN: m.adminToken });
    expect(r.stdout).toMatch(new RegExp(`\\bask\\s+\\d+\\s+parked for approval ${id}`));
    expect(r.stdout).toMatch(/\ballow\s+\d+\s+exit_status: the command exited with status 2/);
    expect(r.stdout).not.toMatch(/\bask\s+\d+\s+ok\b/);
  }, 120_000);

  it("manages users and tokens directly on a database without a manager", async () => {
    const data = join(dir, "data");
    let r = await runOngrid(["users", "add", "bob", "--role", "viewer", "--data", data], { DATABASE_URL: "" });
    expect(r.code, r.stderr).toBe(0);
    r = await runOngrid(["tokens", "create", "--user", "bob", "--data", data], { DATABASE_URL: "" });
    expect(r.code, r.stderr).toBe(0);
    expect(lastLine(r.stdout)).toMatch(/^ogu_/);
    r = await runOngrid(["tokens", "create", "--user", "nobody", "--data", data], { DATABASE_URL: "" });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/unknown user "nobody"/);
    r = await runOngrid(["users", "list", "--json", "--data", data], { DATABASE_URL: "" });
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ id: "bob", role: "viewer", disabled: false })]);
  }, 60_000);
});
