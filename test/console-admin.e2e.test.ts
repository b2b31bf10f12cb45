/**
 * Issue 28 in a real browser: the admin's console. /admin/users adds users, changes their role,
 * reach and state, issues a token shown once (which then works) and revokes it (which then is
 * refused); /edges enrols an edge whose token, with the command shown, starts a real compiled
 * edge that comes online on its own page; labels edited there change what a selector matches;
 * a skill runs from that page and its audit row links to the audit log; revocation closes it.
 * A non-admin sees none of the admin controls, and the manager refuses those calls anyway.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { IdentityService, Role } from "../proto/gen/ongrid/v1/identity_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { spawnEdge, startEdge, stopChild, waitFor, type TestEdge } from "./support/edge.ts";
import { describeInBrowser, launchBrowser, openConsole, screenshot } from "./support/browser.ts";
import { bearer, makeUser } from "./support/auth.ts";
import type { ChildProcess } from "node:child_process";

let m: TestManager;
let browser: Browser;
let edgeOne: TestEdge;
let webEdge: { child: ChildProcess; output: () => string } | undefined;
const tokens: Record<string, string> = {};

/** Generous waits for what arrives by polling; nothing asserts how fast. */
const LIVE = { timeout: 20_000 };

function rpc(token: string): { identity: Client<typeof IdentityService>; edges: Client<typeof EdgeService> } {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { identity: createClient(IdentityService, t), edges: createClient(EdgeService, t) };
}

/** The Connect code a call fails with (or "ok"). */
async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (err) {
    return err instanceof ConnectError ? Code[err.code] : String(err);
  }
}

beforeAll(async () => {
  m = await bootManager();
  edgeOne = await startEdge(m, "edge-one", { labels: { env: "test" } });
  tokens.olga = await makeUser(m, "olga", "operator");
  tokens.alice = await makeUser(m, "alice", "approver");
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (webEdge) await stopChild(webEdge.child);
  await edgeOne?.stop();
  await m?.stop();
});

const text = async (page: Page, testId: string) => (await page.getByTestId(testId).first().textContent()) ?? "";

/** Opens the console; a locator that never appears fails by name instead of running into the test's timeout. */
async function open(token: string): Promise<Page> {
  const page = await openConsole(browser, m.url, token);
  page.setDefaultTimeout(30_000);
  return page;
}

async function openUsers(page: Page): Promise<void> {
  await page.getByRole("link", { name: "Users", exact: true }).click();
  await page.getByRole("heading", { name: "Users", level: 1 }).waitFor();
}

describeInBrowser("console: users, tokens and edges for admins", () => {
  it("adds a user, shows the manager's refusals with their field, changes role and reach, and keeps the admin from demoting themself", async () => {
    const page = await open(m.adminToken);
    await openUsers(page);
    await page.locator('tr[data-user="admin"]').waitFor();

    const add = page.getByRole("form", { name: "Add a user" });
    await add.getByLabel("New user").fill("carol");
    await add.getByLabel("Role").selectOption("operator");
    await add.getByLabel("Reach (label selector)").fill("env=test");
    await add.getByRole("button", { name: "Add user" }).click();
    const carol = page.locator('tr[data-user="carol"]');
    await carol.waitFor();
    expect(await carol.getByTestId("user-role").textContent()).toBe("operator");
    expect(await carol.getByTestId("user-reach").textContent()).toBe("env=test");
    expect(await carol.getByTestId("user-state").textContent()).toBe("active");
    expect(await m.identity.getUser("carol")).toMatchObject({ role: "operator", reach: "env=test" });
    // Adding took the page to the new user.
    await page.getByRole("heading", { name: "User carol" }).waitFor();
    expect(page.url()).toMatch(/\/admin\/users\/carol$/);

    // The manager's refusals, with the field and the rule.
    await add.getByLabel("New user").fill("dave");
    await add.getByLabel("Reach (label selector)").fill("env=test,=oops");
    await add.getByRole("button", { name: "Add user" }).click();
    await expect.poll(() => add.getByRole("alert").textContent(), LIVE).toMatch(/^The manager refused the user: InvalidArgument: reach: clause "=oops" is not key=value/);
    expect(await m.identity.getUser("dave")).toBeUndefined();
    await add.getByLabel("New user").fill("carol");
    await add.getByLabel("Reach (label selector)").fill("");
    await add.getByRole("button", { name: "Add user" }).click();
    await expect.poll(() => add.getByRole("alert").textContent(), LIVE).toMatch(/AlreadyExists: user "carol" already exists/);

    // Change carol's role and reach.
    const detail = page.getByTestId("user-detail");
    await detail.getByLabel("Role").selectOption("approver");
    await detail.getByLabel("Reach (label selector)").fill("env=prod");
    await detail.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => carol.getByTestId("user-role").textContent(), LIVE).toBe("approver");
    expect(await carol.getByTestId("user-reach").textContent()).toBe("env=prod");
    expect(await m.identity.getUser("carol")).toMatchObject({ role: "approver", reach: "env=prod" });
    await detail.getByLabel("Reach (label selector)").fill("team=a,!");
    await detail.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => detail.getByRole("alert").textContent(), LIVE).toMatch(/^The manager refused the change: InvalidArgument: reach: clause "!"/);

    // The admin's own row: role and state cannot be changed here (the manager refuses it too).
    await page.getByRole("link", { name: "admin", exact: true }).click();
    await page.getByRole("heading", { name: "User admin" }).waitFor();
    expect(await detail.getByLabel("Role").isDisabled()).toBe(true);
    expect(await detail.getByLabel("Disabled").isDisabled()).toBe(true);
    expect(await detail.textContent()).toMatch(/You cannot demote or disable yourself \(separation of duties\)/);
    expect(await codeOf(rpc(m.adminToken).identity.updateUser({ id: "admin", disabled: true }))).toBe("FailedPrecondition");
    await page.context().close();
  });

  it("issues a token shown once that works, revokes it after a confirmation so it is refused, and disabling a user stops their tokens", async () => {
    if (!(await m.identity.getUser("erin"))) await m.identity.createUser("erin", "viewer", "");
    const page = await open(m.adminToken);
    await openUsers(page);
    await page.getByRole("link", { name: "erin", exact: true }).click();
    await page.getByRole("heading", { name: "User erin" }).waitFor();
    expect(await page.getByText("No tokens.").count()).toBe(1);

    await page.getByLabel("Description").fill("laptop");
    await page.getByLabel("Lifetime").selectOption({ label: "30 days" });
    await page.getByRole("button", { name: "Create token" }).click();
    const once = page.getByTestId("shown-once");
    await once.waitFor();
    expect(await once.textContent()).toMatch(/Copy it now: you will not see it again\./);
    const token = await page.getByTestId("secret").inputValue();
    expect(token).toMatch(/^ogu_[0-9a-f]{12}_/);
    const id = token.split("_")[1];
    const row = page.locator(`tr[data-token="${id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain("laptop");
    expect(await row.getByTestId("token-state").textContent()).toMatch(/^active/);
    await screenshot(page, "users");

    // The token works for an RPC, as erin.
    expect((await rpc(token).identity.whoAmI({})).user).toMatchObject({ id: "erin", role: Role.VIEWER });
    expect((await rpc(token).edges.listEdges({})).edges.map((e) => e.id)).toContain("edge-one");

    // Shown once: hidden on request, and gone after a reload.
    await once.getByRole("button", { name: /hide it/ }).click();
    expect(await page.getByTestId("shown-once").count()).toBe(0);
    expect(await page.content()).not.toContain(token);
    await page.reload();
    await row.waitFor();
    expect(await page.content()).not.toContain(token);

    // Revoke asks first; Cancel keeps the token working.
    await row.getByRole("button", { name: "Revoke" }).click();
    const ask = row.getByRole("group", { name: "Confirm: Revoke" });
    expect(await ask.textContent()).toMatch(new RegExp(`Revoke ${id}\\? It stops working from the next call`));
    await ask.getByRole("button", { name: "Cancel" }).click();
    expect(await row.getByTestId("token-state").textContent()).toMatch(/^active/);
    expect(await codeOf(rpc(token).identity.whoAmI({}))).toBe("ok");
    await row.getByRole("button", { name: "Revoke" }).click();
    await row.getByRole("button", { name: "Revoke it" }).click();
    await expect.poll(() => row.getByTestId("token-state").textContent(), LIVE).toBe("revoked");
    expect(await codeOf(rpc(token).identity.whoAmI({}))).toBe("Unauthenticated");
    expect(await codeOf(rpc(token).edges.listEdges({}))).toBe("Unauthenticated");

    // A second token; disabling erin stops it.
    await page.getByRole("button", { name: "Create token" }).click();
    await page.getByTestId("shown-once").waitFor();
    const second = await page.getByTestId("secret").inputValue();
    expect(second).not.toBe(token);
    expect(await codeOf(rpc(second).identity.whoAmI({}))).toBe("ok");
    const detail = page.getByTestId("user-detail");
    await detail.getByLabel("Disabled").check();
    await detail.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => page.locator('tr[data-user="erin"]').getByTestId("user-state").textContent(), LIVE).toBe("disabled");
    expect(await text(page, "user-saved")).toMatch(/tokens stop working from the next call/);
    expect(await codeOf(rpc(second).identity.whoAmI({}))).toBe("Unauthenticated");
    // A disabled user gets no new token: the button says why, and the manager refuses anyway.
    expect(await page.getByRole("button", { name: "Create token" }).isDisabled()).toBe(true);
    expect(await codeOf(rpc(m.adminToken).identity.createToken({ userId: "erin" }))).toBe("FailedPrecondition");
    await page.context().close();
  });

  it("enrols an edge in the browser; the command shown starts a real edge that comes online on its page; labels, a run, its audit row and revocation", async () => {
    const page = await open(m.adminToken);
    await page.getByRole("link", { name: "Edges", exact: true }).click();
    await page.getByRole("heading", { name: "Edges", level: 1 }).waitFor();
    await page.getByLabel("New edge id").fill("edge-web");
    await page.getByLabel("Labels", { exact: true }).fill("env=test, role=web");
    await page.getByRole("button", { name: "Enrol", exact: true }).click();
    const once = page.getByTestId("shown-once");
    await once.waitFor();
    expect(await once.textContent()).toMatch(/you will not see it again/);
    const token = await page.getByTestId("secret").inputValue();
    expect(token).toMatch(/^ogt_/);
    const command = await text(page, "edge-command");
    expect(command).toBe(`ongrid-edge --manager ${m.url} --id edge-web --token ${token}`);
    await page.locator('tr[data-edge="edge-web"]').waitFor();
    expect(await page.locator('tr[data-edge="edge-web"]').getByTestId("edge-state").textContent()).toBe("offline");
    await screenshot(page, "edges-enrol");

    // An existing id is a rotation, and the form says so before anything is sent.
    await page.getByLabel("New edge id").fill("edge-one");
    expect(await page.getByRole("button", { name: "Rotate its token" }).count()).toBe(1);
    expect(await page.locator("#enrol-help").textContent()).toMatch(/already enrolled: this issues a new token/);
    await page.getByLabel("New edge id").fill("");

    // The edge's own page, offline until the agent starts with the command shown.
    await page.getByRole("link", { name: "edge-web", exact: true }).click();
    await page.getByRole("heading", { name: "Edge edge-web" }).waitFor();
    expect(await text(page, "edge-state")).toBe("offline");
    const [, ...args] = command.split(" ");
    webEdge = spawnEdge([...args, "--label", "rack=r7"]);
    await expect.poll(() => text(page, "edge-state"), LIVE).toBe("online");
    expect(await text(page, "edge-version")).not.toBe("—");
    expect(await text(page, "edge-labels")).toBe("env=testrole=web");
    expect(await text(page, "edge-reported")).toContain("rack=r7");
    expect(await page.getByTestId("edge-facts").textContent()).toMatch(/not used for reach or selectors/);

    // Labels edited here are what selectors match; what the edge reports is not.
    const admin = rpc(m.adminToken).edges;
    const matching = async (selector: string) => (await admin.listEdges({ selector })).edges.map((e) => e.id);
    expect(await matching("role=web")).toEqual(["edge-web"]);
    expect(await matching("rack=r7")).toEqual([]);
    await page.getByLabel(/^Labels \(reach/).fill("env=test, role=db");
    await page.getByRole("button", { name: "Save labels" }).click();
    await expect.poll(() => text(page, "edge-admin-note"), LIVE).toBe("Saved labels: env=test, role=db.");
    await expect.poll(() => text(page, "edge-labels"), LIVE).toBe("env=testrole=db");
    expect(await matching("role=db")).toEqual(["edge-web"]);
    expect(await matching("role=web")).toEqual([]);
    // Labels changed elsewhere (the CLI, another admin) reach the open page's field.
    await admin.setEdgeLabels({ id: "edge-web", labels: { env: "test", role: "db", tier: "1" } });
    await expect.poll(() => page.getByLabel(/^Labels \(reach/).inputValue(), LIVE).toBe("env=test, role=db, tier=1");

    // Run a skill on this edge from its page; the call appears among its recent calls.
    await page.locator('button[data-skill="host_load"]').click();
    await page.getByRole("heading", { name: /host_load/ }).waitFor();
    expect(await page.getByLabel("Edge", { exact: true }).inputValue()).toBe("edge-web");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.getByTestId("result").textContent(), LIVE).toMatch(/Succeeded/);
    const call = page.getByTestId("recent-call").filter({ hasText: "host_load" }).first();
    await call.waitFor(LIVE);
    expect(await call.textContent()).toMatch(/adminallow\s*ok/);
    const seq = await call.getAttribute("data-seq");
    await screenshot(page, "edge");

    // Its row links to the audit page narrowed to that call.
    await call.getByRole("link").click();
    await page.getByRole("heading", { name: "Audit", level: 1 }).waitFor();
    expect(page.url()).toMatch(/\/admin\/audit\?edge=edge-web&tool=host_load&since=.*&until=/);
    await expect.poll(() => page.getByTestId("audit-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-seq"))), LIVE).toEqual([seq]);
    await page.goBack();

    await page.getByRole("heading", { name: "Edge edge-web" }).waitFor();

    // A bad label is refused by the manager with the field and the rule; a malformed pair never leaves the page.
    await page.getByLabel(/^Labels \(reach/).fill("env=test, role=no spaces");
    await page.getByRole("button", { name: "Save labels" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toMatch(/^The manager refused: InvalidArgument: labels: label role: value "no spaces" must match/);
    await page.getByLabel(/^Labels \(reach/).fill("env");
    await page.getByRole("button", { name: "Save labels" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toBe('labels: "env" is not key=value');
    expect(await matching("role=db")).toEqual(["edge-web"]);

    // Revoke, after a confirmation: the tunnel closes and the page shows it.
    await page.getByRole("button", { name: "Revoke edge" }).click();
    await page.getByRole("button", { name: "Revoke it" }).click();
    await expect.poll(() => text(page, "edge-admin-note"), LIVE).toBe("Revoked; its tunnel was closed.");
    await expect.poll(() => text(page, "edge-state"), LIVE).toBe("offline revoked");
    expect(await waitFor(() => !m.hub.session("edge-web"), 5000)).toBe(true);
    expect((await admin.getEdge({ id: "edge-web" })).edge).toMatchObject({ online: false, revoked: true });
    expect(await page.getByRole("button", { name: "Enrol again (new token)" }).count()).toBe(1);
    await page.context().close();
  }, 180_000);

  it("fits a narrow window: the users page with a new token and an edge's page scroll only down", async () => {
    const page = await openConsole(browser, m.url, m.adminToken, { width: 390, height: 800 });
    page.setDefaultTimeout(30_000);
    const width = () => page.evaluate<{ scrollWidth: number; clientWidth: number }>("({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })");
    await page.goto(`${m.url}/admin/users/alice`);
    await page.getByRole("heading", { name: "User alice" }).waitFor();
    await page.getByRole("button", { name: "Create token" }).click();
    await page.getByTestId("shown-once").waitFor();
    const users = await width();
    expect(users.scrollWidth).toBeLessThanOrEqual(users.clientWidth);
    await page.goto(`${m.url}/edges/edge-one`);
    await expect.poll(() => text(page, "edge-state"), LIVE).toBe("online");
    await page.locator('button[data-skill="host_load"]').click();
    await page.getByRole("heading", { name: /host_load/ }).waitFor();
    const edge = await width();
    expect(edge.scrollWidth).toBeLessThanOrEqual(edge.clientWidth);
    await page.context().close();
  });

  it("shows a non-admin no admin controls, and the manager refuses those calls anyway", async () => {
    const olga = await open(tokens.olga);
    expect(await olga.getByRole("link", { name: "Users", exact: true }).count()).toBe(0);
    await olga.goto(`${m.url}/admin/users`);
    await olga.getByTestId("whoami").waitFor();
    expect(await olga.getByRole("form", { name: "Add a user" }).count()).toBe(0);
    expect(await olga.locator("table.users").count()).toBe(0);

    await olga.getByRole("link", { name: "Edges", exact: true }).click();
    await olga.locator('tr[data-edge="edge-one"]').waitFor();
    expect(await olga.getByRole("form", { name: "Enrol an edge" }).count()).toBe(0);
    await olga.getByRole("link", { name: "edge-one", exact: true }).click();
    await olga.getByRole("heading", { name: "Edge edge-one" }).waitFor();
    await expect.poll(() => text(olga, "edge-state"), LIVE).toBe("online");
    expect(await olga.getByRole("heading", { name: "Manage" }).count()).toBe(0);
    expect(await olga.getByRole("button", { name: /Revoke|Save labels|Rotate token/ }).count()).toBe(0);
    expect(await olga.getByText(/The audit log is for approvers and admins; your role \(operator\) cannot read it\./).count()).toBe(1);
    // The run form is there: an operator may run skills (the gate decides each call).
    expect(await olga.locator('button[data-skill="host_load"]').count()).toBe(1);

    const r = rpc(tokens.olga);
    expect(await codeOf(r.edges.enrollEdge({ id: "edge-sneaky" }))).toBe("PermissionDenied");
    expect(await codeOf(r.edges.setEdgeLabels({ id: "edge-one", labels: { env: "prod" } }))).toBe("PermissionDenied");
    expect(await codeOf(r.edges.revokeEdge({ id: "edge-one" }))).toBe("PermissionDenied");
    expect(await codeOf(r.identity.listUsers({}))).toBe("PermissionDenied");
    expect(await codeOf(r.identity.createToken({ userId: "olga" }))).toBe("PermissionDenied");
    expect(await codeOf(r.identity.revokeToken({ id: "000000000000" }))).toBe("PermissionDenied");
    expect((await rpc(m.adminToken).edges.getEdge({ id: "edge-one" })).edge).toMatchObject({ online: true, revoked: false, labels: { env: "test" } });
    await olga.context().close();

    // An approver reads the edge's recent calls, still without admin controls.
    const alice = await open(tokens.alice);
    await alice.goto(`${m.url}/edges/edge-one`);
    await alice.getByRole("heading", { name: "Recent calls" }).waitFor();
    await expect.poll(() => alice.getByText(/newest audit rows that targeted this edge/).count(), LIVE).toBe(1);
    expect(await alice.getByRole("heading", { name: "Manage" }).count()).toBe(0);
    await alice.context().close();
  });
});
