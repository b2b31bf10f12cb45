/**
 * Issue 8 in a real browser: the console's /edges and /approvals pages against a started manager
 * with real compiled edges, driven in headless Chromium. Edges appear and go offline without a
 * reload; a mutating call requested in /skills is approved by another person in /approvals and
 * runs once; a dangerous call with a signed SOP shows its progress, SOP and voters; a denial
 * shows its reason.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { generateKeyPairSync } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { signSop } from "../manager/calls/sop.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, type TestEdge } from "./support/edge.ts";
import { describeInBrowser, launchBrowser, openConsole, screenshot } from "./support/browser.ts";
import { bearer, makeUser } from "./support/auth.ts";

let m: TestManager;
let edgeOne: TestEdge;
let edgeTwo: TestEdge | undefined;
let browser: Browser;
let dir: string;
let sopKey: string;
const tokens: Record<string, string> = {};

/** Generous waits for things that arrive by polling or streaming; nothing asserts how fast. */
const LIVE = { timeout: 20_000 };

function rpc(token: string): { skills: Client<typeof SkillService>; approvals: Client<typeof ApprovalService> } {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { skills: createClient(SkillService, t), approvals: createClient(ApprovalService, t) };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-console-fleet-"));
  const pair = generateKeyPairSync("rsa", { modulusLength: 2048, publicKeyEncoding: { type: "spki", format: "pem" }, privateKeyEncoding: { type: "pkcs8", format: "pem" } });
  writeFileSync(join(dir, "sop.pub"), pair.publicKey);
  sopKey = pair.privateKey;
  m = await bootManager({ "approvals.sop_trusted_keys": join(dir, "sop.pub"), "approvals.ttl": "10m" });
  edgeOne = await startEdge(m, "edge-one", { labels: { env: "test", team: "a" } });
  tokens.olga = await makeUser(m, "olga", "operator");
  tokens.alice = await makeUser(m, "alice", "approver");
  tokens.bob = await makeUser(m, "bob", "approver");
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await edgeTwo?.stop();
  await edgeOne?.stop();
  await m?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const row = (page: Page, id: string) => page.locator(`tr[data-edge="${id}"]`);
const text = async (page: Page, testId: string) => (await page.getByTestId(testId).textContent()) ?? "";

async function openEdges(page: Page): Promise<void> {
  await page.getByRole("link", { name: "Edges" }).click();
  await page.getByRole("heading", { name: "Edges", level: 1 }).waitFor();
}

/** Opens /approvals from the navigation and selects one request in the "All" view. */
async function openApproval(page: Page, id: string): Promise<void> {
  await page.getByRole("link", { name: "Approvals" }).click();
  await page.getByRole("heading", { name: "Approvals", level: 1 }).waitFor();
  await page.getByRole("radio", { name: /^All/ }).check();
  await page.locator(`[data-approval="${id}"]`).click();
  await page.getByRole("heading", { name: new RegExp(id) }).waitFor();
}

/** Exec rows of the audit log that ran (allowed) for one approval request. */
async function runsOf(approvalId: string) {
  await m.audit.flush();
  return (await m.audit.list({ toolName: "exec", limit: 1000 })).filter((r) => r.approvalId === approvalId && r.decision === "allow");
}

describeInBrowser("console: edges and approvals", () => {
  it("says /approvals is live on a fresh load, before any request changes (Watch sends its headers at once)", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await page.goto(`${m.url}/approvals`);
    await page.getByRole("heading", { name: "Approvals", level: 1 }).waitFor();
    expect(await m.approvals.list({ state: "pending" })).toEqual([]);
    await expect.poll(() => text(page, "live"), LIVE).toMatch(/^Live: changes appear as they happen\./);
    await page.context().close();
  });

  it("lists an online edge with its labels, shows a newly started edge without a reload, and turns it offline when it stops", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await openEdges(page);
    const one = row(page, "edge-one");
    await one.waitFor();
    expect(await one.getByTestId("edge-state").textContent()).toBe("online");
    expect(await one.getByTestId("edge-labels").textContent()).toBe("env=testteam=a");
    expect(await one.textContent()).toMatch(/\d+ skills/);
    // The skill list expands from its count.
    await one.getByText(/\d+ skills/).click();
    await expect.poll(() => one.locator("ul.edge-skills li").count()).toBeGreaterThan(3);
    expect(await one.locator("ul.edge-skills").textContent()).toContain("exec");
    expect(await row(page, "edge-two").count()).toBe(0);

    edgeTwo = await startEdge(m, "edge-two", { labels: { env: "test", team: "b" } });
    const two = row(page, "edge-two");
    await expect.poll(() => two.count(), LIVE).toBe(1);
    await expect.poll(() => two.getAttribute("data-online"), LIVE).toBe("true");
    expect(await two.getByTestId("edge-labels").textContent()).toBe("env=testteam=b");
    await expect.poll(() => text(page, "edge-count"), LIVE).toBe("2 edges, 2 online");
    expect(await text(page, "refreshed")).toMatch(/^Refreshed .*; updates every 2 s\.$/);
    await screenshot(page, "edges");

    await edgeTwo.stop();
    edgeTwo = undefined;
    await expect.poll(() => two.getAttribute("data-online"), LIVE).toBe("false");
    expect(await two.getByTestId("edge-state").textContent()).toBe("offline");
    await expect.poll(() => text(page, "edge-count"), LIVE).toBe("2 edges, 1 online");
    // The open skill list of the first edge survived the refreshes.
    expect(await one.locator("details").getAttribute("open")).not.toBeNull();
    await page.context().close();
  });

  it("filters edges by a label selector and by online state, and shows the manager's refusal of a malformed selector", async () => {
    await m.edges.enroll("edge-never"); // enrolled, never connected: offline, no labels
    const page = await openConsole(browser, m.url, m.adminToken);
    await openEdges(page);
    await row(page, "edge-never").waitFor();
    expect(await row(page, "edge-never").getByTestId("edge-state").textContent()).toBe("offline");

    const selector = page.getByLabel("Label selector");
    await selector.fill("team=a");
    await selector.press("Enter");
    await expect.poll(() => page.locator("tr[data-edge]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-edge"))), LIVE).toEqual(["edge-one"]);
    expect(await text(page, "edge-count")).toBe("1 edge match, 1 online");

    await selector.fill("team=a,=oops");
    await page.getByRole("button", { name: "Apply" }).click();
    const alert = page.getByRole("alert");
    await expect.poll(() => alert.textContent(), LIVE).toMatch(/The manager refused the selector: InvalidArgument: selector: clause "=oops" is not key=value/);
    expect(await selector.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator("tr[data-edge]").count()).toBe(0);

    await page.getByRole("button", { name: "Clear" }).click();
    await expect.poll(() => page.locator("tr[data-edge]").count(), LIVE).toBeGreaterThanOrEqual(2);
    expect(await page.getByRole("alert").count()).toBe(0);
    await page.getByLabel("Online only").check();
    await expect.poll(() => page.locator("tr[data-edge]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-edge"))), LIVE).toEqual(["edge-one"]);
    await page.getByLabel("Online only").uncheck();
    await expect.poll(() => row(page, "edge-never").count(), LIVE).toBe(1);
    await page.context().close();
  });

  it("parks an operator's mutating exec from /skills; the operator cannot approve it; an approver must give a reason, approves, and it runs once with its result shown", async () => {
    const target = join(dir, "approved.txt");
    const command = `echo ran >> ${target}`;

    // The operator requests it through the generated exec form.
    const olga = await openConsole(browser, m.url, tokens.olga);
    await olga.getByRole("link", { name: "Skills" }).click();
    await olga.getByLabel("Filter").fill("exec");
    await olga.locator('[data-skill="exec"]').click();
    await olga.getByRole("heading", { name: /exec/ }).waitFor();
    await olga.getByLabel("Edge", { exact: true }).selectOption("edge-one");
    await olga.locator("#param_command").fill(command);
    await olga.getByRole("button", { name: "Run", exact: true }).click();
    const parked = olga.getByTestId("parked");
    await parked.waitFor();
    expect(await parked.textContent()).toMatch(/Waiting for approval/);
    const id = (await parked.locator("code").first().textContent()) ?? "";
    expect(id).toMatch(/^apr_/);
    expect(existsSync(target)).toBe(false);

    // The operator sees their own request in /approvals, pending, and cannot approve it.
    await olga.getByRole("link", { name: "Open approvals" }).click();
    await olga.locator(`[data-approval="${id}"]`).click();
    await olga.getByRole("heading", { name: new RegExp(id) }).waitFor();
    expect(await olga.getByTestId("approval-state").textContent()).toBe("pending");
    expect(await olga.getByRole("button", { name: "Approve", exact: true }).isDisabled()).toBe(true);
    expect(await text(olga, "decision-why")).toMatch(/You requested this call, and your role \(operator\) cannot approve/);
    await olga.getByLabel("Reason (required)").fill("please");
    expect(await olga.getByRole("button", { name: "Approve", exact: true }).isDisabled()).toBe(true); // a reason does not change that

    // The approver, in another browser context.
    const alice = await openConsole(browser, m.url, tokens.alice);
    await alice.getByRole("link", { name: "Approvals" }).click();
    const item = alice.locator(`[data-approval="${id}"]`);
    await item.waitFor(); // in the default "Pending" view
    expect(await item.textContent()).toContain(command);
    await item.click();
    const detail = alice.getByTestId("approval");
    await detail.waitFor();
    expect(JSON.parse(await text(alice, "params"))).toMatchObject({ command });
    expect(await text(alice, "requester")).toBe("olga (operator)");
    expect(await text(alice, "progress")).toMatch(/^0 of 1 approval$/);
    const approve = alice.getByRole("button", { name: "Approve", exact: true });
    expect(await approve.isDisabled()).toBe(true);
    expect(await text(alice, "decision-why")).toMatch(/Give a reason first/);
    await alice.getByLabel("Reason (required)").fill("append is fine on the test host");
    expect(await approve.isEnabled()).toBe(true);
    expect(existsSync(target)).toBe(false);
    await approve.click();

    await expect.poll(() => detail.getAttribute("data-state"), LIVE).toBe("executed");
    const result = detail.getByTestId("result");
    expect(await result.textContent()).toMatch(/Succeeded/);
    expect(await result.textContent()).toContain("edge-one");
    expect(await result.getByTestId("exit-code").textContent()).toBe("Exit code 0");
    expect(await text(alice, "votes")).toMatch(/alice.*append is fine on the test host/);
    await alice.getByRole("radio", { name: /^All/ }).check();
    await screenshot(alice, "approvals");

    // It ran, exactly once.
    expect(readFileSync(target, "utf8")).toBe("ran\n");
    expect(await runsOf(id)).toHaveLength(1);

    // The requester's open page followed it to the end without a reload.
    await expect.poll(() => olga.getByTestId("approval").getAttribute("data-state"), LIVE).toBe("executed");
    expect(await olga.getByTestId("result").textContent()).toMatch(/Succeeded/);
    expect(await olga.getByRole("button", { name: "Approve", exact: true }).count()).toBe(0);
    await olga.context().close();
    await alice.context().close();
  });

  it("shows a dangerous call's signed SOP and its progress from 0 of 2 to 1 of 2 with the approver's name", async () => {
    const disk = join(dir, "disk.img");
    const command = `mkfs.ext4 -F -q ${disk}`;
    const sop = signSop(
      [
        "---",
        "id: SOP-42",
        "version: 3",
        "title: Re-create the scratch filesystem image",
        "skills: [exec]",
        "params:",
        "  exec:",
        `    command: '^mkfs\\.ext4 -F -q ${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/disk\\.img$'`,
        `expires: ${new Date(Date.now() + 86_400_000).toISOString()}`,
        "---",
        "# Steps",
        "1. Make sure nothing uses the image.",
        "",
      ].join("\n"),
      sopKey,
    );
    const res = await rpc(tokens.olga).skills.executeSkill({ key: "exec", edgeId: "edge-one", input: { case: "params", value: { command } as never }, sop });
    const a = res.approval!;
    expect(a.state).toBe(ApprovalState.PENDING);

    const page = await openConsole(browser, m.url, tokens.alice);
    await openApproval(page, a.id);
    expect(await text(page, "progress")).toMatch(/^0 of 2 approvals/);
    expect(await page.getByTestId("approval").getByText("dangerous", { exact: true }).count()).toBe(1);
    const sopBox = page.getByTestId("sop");
    expect(await sopBox.textContent()).toContain("SOP-42");
    expect(await sopBox.textContent()).toContain(a.sopHash);
    expect(a.sopHash).toMatch(/^[0-9a-f]{64}$/);

    await page.getByLabel("Reason (required)").fill("SOP-42 step 1 checked");
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    await expect.poll(() => text(page, "progress"), LIVE).toMatch(/^1 of 2 approvals/);
    expect(await text(page, "votes")).toMatch(/alice.*SOP-42 step 1 checked/);
    expect(await text(page, "decision-note")).toMatch(/Approval recorded: 1 of 2 approvals/);
    expect(await page.getByTestId("approval").getAttribute("data-state")).toBe("pending");
    // The same approver cannot count twice.
    expect(await page.getByRole("button", { name: "Approve", exact: true }).isDisabled()).toBe(true);
    expect(await text(page, "decision-why")).toMatch(/You already approved it; it needs 1 more/);

    // Another approver's page shows the same progress and who voted.
    const bob = await openConsole(browser, m.url, tokens.bob);
    await openApproval(bob, a.id);
    expect(await text(bob, "progress")).toMatch(/^1 of 2 approvals/);
    expect(await text(bob, "votes")).toContain("alice");
    expect((await rpc(tokens.bob).approvals.getApproval({ id: a.id })).approval!.state).toBe(ApprovalState.PENDING);
    await bob.context().close();
    await page.context().close();
  });

  it("denies a request with a reason, shows it denied with that reason among the decided ones, and nothing runs", async () => {
    const target = join(dir, "denied.txt");
    const command = `echo no >> ${target}`;
    const a = (await rpc(tokens.olga).skills.executeSkill({ key: "exec", edgeId: "edge-one", input: { case: "params", value: { command } as never } })).approval!;
    const page = await openConsole(browser, m.url, tokens.bob);
    await page.getByRole("link", { name: "Approvals" }).click();
    await page.locator(`[data-approval="${a.id}"]`).click();
    const detail = page.getByTestId("approval");
    await detail.waitFor();
    const deny = page.getByRole("button", { name: "Deny", exact: true });
    expect(await deny.isDisabled()).toBe(true);
    await page.getByLabel("Reason (required)").fill("not during the freeze");
    await deny.click();
    await expect.poll(() => detail.getAttribute("data-state"), LIVE).toBe("denied");
    expect(await detail.getByTestId("outcome").textContent()).toMatch(/Denied by bob: not during the freeze\. Nothing ran\./);
    expect(await page.getByTestId("deny-reason").textContent()).toBe("not during the freeze");
    expect(await page.getByRole("button", { name: "Approve", exact: true }).count()).toBe(0);

    // Gone from the pending view, listed among the decided ones.
    await expect.poll(() => page.locator(`[data-approval="${a.id}"]`).count(), LIVE).toBe(0);
    await page.getByRole("radio", { name: /^Decided/ }).check();
    const item = page.locator(`[data-approval="${a.id}"]`);
    await item.waitFor();
    expect(await item.textContent()).toContain("denied");

    expect((await rpc(tokens.olga).approvals.getApproval({ id: a.id })).approval).toMatchObject({ state: ApprovalState.DENIED, deniedBy: "bob", reason: "not during the freeze" });
    expect(existsSync(target)).toBe(false);
    expect(await runsOf(a.id)).toHaveLength(0);
    await page.context().close();
  });

  it("shows an approved command that exits non-zero as failed: the error and hint, the exit code, stdout and stderr as text", async () => {
    const command = "echo out; echo err >&2; exit 3";
    const a = (await rpc(tokens.olga).skills.executeSkill({ key: "exec", edgeId: "edge-one", input: { case: "params", value: { command } as never } })).approval!;
    expect(a.state).toBe(ApprovalState.PENDING);
    const page = await openConsole(browser, m.url, tokens.alice);
    await openApproval(page, a.id);
    await page.getByLabel("Reason (required)").fill("try it");
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    const detail = page.getByTestId("approval");
    await expect.poll(() => detail.getAttribute("data-state"), LIVE).toBe("executed");
    expect(await detail.getByTestId("outcome").textContent()).toMatch(/Executed after 1 of 1 approval: the call ran and failed\./);
    const result = detail.getByTestId("result");
    expect(await result.getAttribute("data-success")).toBe("false");
    expect(await result.locator(".result-head strong").textContent()).toBe("Failed");
    expect(await result.locator(".result-error").textContent()).toMatch(/exit_status the command exited with status 3: err/);
    expect(await result.locator(".hint").textContent()).toMatch(/^Hint: /);
    expect(await result.getByTestId("exit-code").textContent()).toBe("Exit code 3");
    expect(await result.getByTestId("stdout").textContent()).toBe("out\n");
    expect(await result.getByTestId("stderr").textContent()).toBe("err\n");
    expect(await result.textContent()).not.toMatch(/\bnull\b|\\n/);
    expect(await runsOf(a.id)).toHaveLength(1);
    await page.context().close();
  });
});
