/**
 * Issue 8, /admin/audit in a real browser: one manager, two compiled edges, users calling skills
 * over RPC, and an approver reading the log in headless Chromium — filters that live in the URL,
 * paging, the JSON Lines and CSV exports, the hash chain's state before and after a row is edited
 * behind the log's back, and an operator kept out.
 */
import net from "node:net";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { sql } from "drizzle-orm";
import { Code, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../proto/gen/ongrid/v1/audit_service_pb.ts";
import { ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { auditRowToJson } from "../manager/audit/export.ts";
import type { AuditFilter } from "../manager/audit/types.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, type TestEdge } from "./support/edge.ts";
import { describeInBrowser, launchBrowser, openConsole, screenshot } from "./support/browser.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { refusal } from "./support/rejection.ts";

let m: TestManager;
let edges: TestEdge[] = [];
let browser: Browser;
let banner: net.Server;
let bannerPort: number;

type Clients = { skills: Client<typeof SkillService>; audit: Client<typeof AuditService> };
const as: Record<string, Clients> = {};
const tokens: Record<string, string> = {};
/** How long a poll waits for the page: generous, since the machine may be busy (not a timing assertion). */
const POLL = { timeout: 15_000 };
/** The audit seq of each call the setup made, by name. */
const seq: Record<string, number> = {};

function clientsFor(token: string): Clients {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { skills: createClient(SkillService, t), audit: createClient(AuditService, t) };
}

async function call(name: string, who: string, key: string, edgeId: string, params: Record<string, unknown>, sessionId = "") {
  const res = await as[who].skills.executeSkill({ key, edgeId, sessionId, input: { case: "params", value: params as never } });
  seq[name] = Number(res.auditSeq);
  return res;
}

beforeAll(async () => {
  m = await bootManager();
  edges.push(await startEdge(m, "edge-a", { labels: { team: "a" } }));
  edges.push(await startEdge(m, "edge-b", { labels: { team: "b" } }));
  banner = net.createServer((s) => s.end("SSH-2.0-audit-test\r\n"));
  await new Promise<void>((r) => banner.listen(0, "127.0.0.1", r));
  bannerPort = (banner.address() as net.AddressInfo).port;
  for (const [id, role] of [
    ["olga", "operator"],
    ["paul", "operator"],
    ["alice", "approver"],
  ] as const) {
    tokens[id] = await makeUser(m, id, role);
    as[id] = clientsFor(tokens[id]);
  }
  const probe = { host: "127.0.0.1", port: bannerPort, read_banner: true };
  await call("olgaProbeA", "olga", "probe_tcp", "edge-a", probe, "inc-1");
  await call("olgaLoadB", "olga", "host_load", "edge-b", {}, "inc-1");
  await call("paulProbeA", "paul", "probe_tcp", "edge-a", probe, "inc-2");
  await call("paulProbeB", "paul", "probe_tcp", "edge-b", probe, "inc-3");
  await call("paulLoadA", "paul", "host_load", "edge-a", {});
  await call("olgaProbeB", "olga", "probe_tcp", "edge-b", probe, "inc-1");
  // a closed port: the call runs and fails
  await call("paulClosed", "paul", "probe_tcp", "edge-a", { host: "127.0.0.1", port: 1 });
  // mutating: parked for approval, decision "ask"
  const parked = await call("olgaRestart", "olga", "exec", "edge-a", { command: "systemctl restart nginx" });
  expect(parked.approval?.state).toBe(ApprovalState.PENDING);
  await m.audit.flush();
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all(edges.map((e) => e.stop()));
  banner?.close();
  await m?.stop();
});

/** The seqs the server lists for a filter, in the timeline's default order (newest first). */
async function expected(filter: AuditFilter): Promise<number[]> {
  await m.audit.flush();
  return (await m.audit.list({ ...filter, limit: 1000 })).map((r) => r.seq).reverse();
}

/** The seqs of the rows the timeline shows, once it has loaded. */
async function shown(page: Page): Promise<number[]> {
  const status = (await page.getByTestId("audit-count").textContent({ timeout: 5000 })) ?? "";
  if (status === "Loading…") return [-1];
  const s = await page.getByTestId("audit-row").evaluateAll((rows) => rows.map((r) => Number(r.getAttribute("data-seq"))));
  return s;
}

/** Logs `who` in at a console path (a fresh browser context: a new tab with a new login). */
function openAt(who: string, path: string): Promise<Page> {
  return openConsole(browser, `${m.url}${path}`, who === "admin" ? m.adminToken : tokens[who]);
}

function query(page: Page): Record<string, string> {
  return Object.fromEntries(new URL(page.url()).searchParams);
}

/** A minimal RFC 4180 reader: rows of fields, quotes and doubled quotes honoured. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i++;
    } else cell += c;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

describeInBrowser("console: audit log", () => {
  it("filters the timeline down to one call by tool, edge and user; the URL carries the filter and opens the same view in a fresh tab", async () => {
    const page = await openAt("alice", "");
    await page.getByRole("link", { name: "Audit" }).click();
    await page.getByRole("heading", { name: "Audit log" }).waitFor();
    // unfiltered: every call of the setup is on the timeline
    await expect.poll(() => shown(page), POLL).toEqual(await expected({}));
    expect(await shown(page)).toEqual(expect.arrayContaining(Object.values(seq)));

    await page.getByLabel("Tool", { exact: true }).fill("probe_tcp");
    await page.getByLabel("Edge", { exact: true }).fill("edge-b");
    await page.getByLabel("User", { exact: true }).fill("paul");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => shown(page), POLL).toEqual([seq.paulProbeB]);
    expect(query(page)).toEqual({ tool: "probe_tcp", edge: "edge-b", user: "paul" });
    const row = page.locator(`[data-testid="audit-row"][data-seq="${seq.paulProbeB}"]`);
    const text = (await row.textContent()) ?? "";
    expect(text).toContain("paul");
    expect(text).toContain("edge-b");
    expect(text).toContain("inc-3");
    expect(text).toMatch(/allow/);
    expect(text).toMatch(/success/);
    // the row hash, shortened, is the stored one
    const stored = (await m.audit.list({ afterSeq: seq.paulProbeB - 1, limit: 1 }))[0];
    expect(text).toContain(stored.rowHash.slice(0, 10));
    // args and result are there, collapsed
    await row.getByText(/args & result/).click();
    expect(await row.locator("pre").first().textContent()).toContain(String(bannerPort));
    expect(await row.locator("pre").nth(1).textContent()).toContain("SSH-2.0-audit-test");

    // the same address in a new tab (new login) shows the same single row and the same filter fields
    const link = page.url();
    const fresh = await openConsole(browser, link, tokens.alice);
    await expect.poll(() => shown(fresh), POLL).toEqual([seq.paulProbeB]);
    expect(await fresh.getByLabel("Tool", { exact: true }).inputValue()).toBe("probe_tcp");
    expect(await fresh.getByLabel("Edge", { exact: true }).inputValue()).toBe("edge-b");
    expect(await fresh.getByLabel("User", { exact: true }).inputValue()).toBe("paul");
    await fresh.context().close();

    // a session: exactly olga's three calls in inc-1
    await page.getByRole("button", { name: "Clear" }).click();
    await expect.poll(() => query(page), POLL).toEqual({});
    await page.getByLabel("Session", { exact: true }).fill("inc-1");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => shown(page), POLL).toEqual([seq.olgaProbeB, seq.olgaLoadB, seq.olgaProbeA]);
    expect(query(page)).toEqual({ session: "inc-1" });

    // a decision: the one parked call
    await page.getByRole("button", { name: "Clear" }).click();
    await page.getByLabel("Decision", { exact: true }).selectOption("ask");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => shown(page), POLL).toEqual([seq.olgaRestart]);
    expect(query(page)).toEqual({ decision: "ask" });
    expect(await page.getByTestId("audit-row").textContent()).toMatch(/parked/);

    // Back returns to the session view
    await page.goBack();
    await expect.poll(() => shown(page), POLL).toEqual(await expected({}));
    await page.goBack();
    await expect.poll(() => shown(page), POLL).toEqual([seq.olgaProbeB, seq.olgaLoadB, seq.olgaProbeA]);
    expect(await page.getByLabel("Session", { exact: true }).inputValue()).toBe("inc-1");
    // the nav's Audit link, from a filtered view, opens the unfiltered timeline (view and address agree)
    await page.getByRole("link", { name: "Audit", exact: true }).click();
    await expect.poll(() => query(page), POLL).toEqual({});
    await expect.poll(() => shown(page), POLL).toEqual(await expected({}));
    expect(await page.getByLabel("Session", { exact: true }).inputValue()).toBe("");
    await page.context().close();
  });

  it("applies a time range from the URL, shows it in the fields, and keeps it exactly when applied again", async () => {
    await m.audit.flush();
    const all = await m.audit.list({ limit: 1000 });
    const from = all.find((r) => r.seq === seq.paulProbeA)!.startedAt;
    const to = all.find((r) => r.seq === seq.olgaProbeB)!.startedAt;
    const want = await expected({ since: from, until: to });
    // the range keeps paulProbeA (since is inclusive) and drops olgaProbeB (until is exclusive) and what came before
    expect(want).toContain(seq.paulProbeA);
    expect(want).not.toContain(seq.olgaProbeB);
    expect(want).not.toContain(seq.olgaProbeA);
    const page = await openAt("alice", `/admin/audit?since=${from.toISOString()}&until=${to.toISOString()}`);
    await expect.poll(() => shown(page), POLL).toEqual(want);
    expect(await page.getByLabel("Since", { exact: true }).inputValue()).not.toBe("");
    expect(await page.getByLabel("Until (before)", { exact: true }).inputValue()).not.toBe("");
    // applying the untouched form changes nothing: the milliseconds survive the datetime-local fields
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => shown(page), POLL).toEqual(want);
    expect(query(page)).toEqual({ since: from.toISOString(), until: to.toISOString() });
    await page.context().close();
  });

  it("shows the chain intact through the head's seq, and the timeline; screenshot", async () => {
    const page = await openAt("alice", "/admin/audit");
    const report = await m.audit.verify();
    expect(report.ok).toBe(true);
    const status = page.getByTestId("chain-status");
    await expect.poll(() => status.textContent(), POLL).toMatch(new RegExp(`Chain intact through seq ${report.lastSeq}\\b`));
    expect(await status.getAttribute("role")).toBe("status");
    await expect.poll(() => shown(page), POLL).toEqual(await expected({}));
    await screenshot(page, "audit");
    await page.context().close();
  });

  it("exports exactly the filtered rows, every page of them, as JSON Lines in `ongrid audit export`'s form, and as CSV, under the console's CSP", async () => {
    const page = await openAt("alice", "/admin/audit?user=olga");
    const problems: string[] = [];
    page.on("console", (msg) => msg.type() === "error" && problems.push(msg.text()));
    await m.audit.flush();
    const rows = await m.audit.list({ userId: "olga", limit: 1000 });
    expect(rows.map((r) => r.seq)).toEqual([seq.olgaProbeA, seq.olgaLoadB, seq.olgaProbeB, seq.olgaRestart]);
    await expect.poll(() => shown(page), POLL).toEqual(rows.map((r) => r.seq).reverse());

    const [jsonl] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export JSON Lines" }).click()]);
    expect(jsonl.suggestedFilename()).toMatch(/^ongrid-audit-user-olga-\d{8}T\d{6}Z\.jsonl$/);
    const lines = readFileSync((await jsonl.path())!, "utf8").split("\n");
    expect(lines.pop()).toBe("");
    const objects = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objects.map((o) => o.seq)).toEqual(rows.map((r) => r.seq));
    // the same objects, keys in the same order, as the CLI's export writes
    expect(lines).toEqual(rows.map((r) => JSON.stringify(auditRowToJson(r))));
    await expect.poll(() => page.getByTestId("audit-exported").textContent(), POLL).toMatch(/Exported 4 rows/);

    const [csv] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export CSV" }).click()]);
    expect(csv.suggestedFilename()).toMatch(/\.csv$/);
    const table = parseCsv(readFileSync((await csv.path())!, "utf8"));
    expect(table[0]).toEqual(Object.keys(auditRowToJson(rows[0])));
    expect(table.slice(1).map((r) => Number(r[0]))).toEqual(rows.map((r) => r.seq));
    const tool = table[0].indexOf("tool_name");
    expect(table.slice(1).map((r) => r[tool])).toEqual(rows.map((r) => r.toolName));
    expect(problems.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    await page.context().close();
  });

  it("pages the timeline 100 rows at a time with Load more, saying how many are shown, and exports every page", async () => {
    // 130 refused calls of an unknown skill: each one is audited
    await Promise.all(
      Array.from({ length: 130 }, async () => {
        const err = await refusal(as.paul.skills.executeSkill({ key: "no_such_skill", input: { case: "params", value: {} } }));
        expect(err.code).toBe(Code.NotFound);
      }),
    );
    const want = await expected({ toolName: "no_such_skill" });
    expect(want).toHaveLength(130);
    const page = await openAt("alice", "/admin/audit?tool=no_such_skill");
    await expect.poll(() => shown(page), POLL).toEqual(want.slice(0, 100));
    expect(await page.getByTestId("audit-count").textContent()).toBe("Showing 100 matching rows, newest first; more follow.");
    await page.getByRole("button", { name: "Load 100 more" }).click();
    await expect.poll(() => shown(page), POLL).toEqual(want);
    expect(await page.getByTestId("audit-count").textContent()).toBe("Showing 130 matching rows, newest first — all that match.");
    expect(await page.getByRole("button", { name: "Load 100 more" }).count()).toBe(0);
    // the export is in seq order, as `ongrid audit export` writes it
    const [jsonl] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export JSON Lines" }).click()]);
    const lines = readFileSync((await jsonl.path())!, "utf8").trim().split("\n");
    expect(lines.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([...want].reverse());
    // oldest first, from the Order field, pages forwards
    await page.getByLabel("Order").selectOption("oldest");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => shown(page), POLL).toEqual([...want].reverse().slice(0, 100));
    expect(query(page)).toEqual({ tool: "no_such_skill", order: "oldest" });
    expect(await page.getByTestId("audit-count").textContent()).toBe("Showing 100 matching rows, oldest first; more follow.");
    await page.getByRole("button", { name: "Load 100 more" }).click();
    await expect.poll(() => shown(page), POLL).toEqual([...want].reverse());
    await page.context().close();
  });

  it("keeps an operator out: no Audit link, /admin/audit says it needs the approver role and shows no rows, and the service refuses the operator", async () => {
    const page = await openAt("olga", "");
    await page.getByTestId("whoami").waitFor();
    expect(await page.getByRole("link", { name: "Audit" }).count()).toBe(0);
    await page.goto(`${m.url}/admin/audit?user=paul`);
    await page.getByTestId("whoami").waitFor();
    await expect.poll(() => page.getByTestId("not-allowed").textContent(), POLL).toMatch(/needs the approver \(or admin\) role; you are logged in as operator/);
    expect(new URL(page.url()).pathname).toBe("/admin/audit");
    expect(await page.getByRole("heading", { name: "Audit log" }).count()).toBe(0);
    expect(await page.getByTestId("audit-row").count()).toBe(0);
    expect(await page.getByTestId("chain-status").count()).toBe(0);
    // hiding the page is not the protection: the manager refuses the operator's audit calls
    expect((await refusal(as.olga.audit.listToolCalls({}))).code).toBe(Code.PermissionDenied);
    expect((await refusal(as.olga.audit.verifyChain({}))).code).toBe(Code.PermissionDenied);
    await page.context().close();
  });

  it("after a row is edited in the database, Verify chain reports the chain broken at that seq and marks the row", async () => {
    // newest first, the victim is under the paging test's 130 rows: filter to its tool
    const page = await openAt("alice", "/admin/audit?tool=probe_tcp");
    const status = page.getByTestId("chain-status");
    await expect.poll(() => status.textContent(), POLL).toMatch(/Chain intact through seq \d+/);
    await expect.poll(() => shown(page), POLL).toContain(seq.paulProbeB);
    const victim = seq.paulProbeB;
    await m.database.db.execute(sql`update tool_calls set args_json = '{"host":"10.0.0.1","port":22}'::jsonb where seq = ${victim}`);
    // nothing changes until the user asks
    expect(await status.textContent()).toMatch(/Chain intact/);
    await page.getByRole("button", { name: "Verify chain" }).click();
    const alert = page.getByRole("alert").filter({ hasText: "Chain broken" });
    await expect.poll(() => alert.textContent(), POLL).toMatch(new RegExp(`Chain broken at seq ${victim}\\b`));
    expect(await alert.textContent()).toMatch(/row_hash|edited/);
    const row = page.locator(`[data-testid="audit-row"][data-seq="${victim}"]`);
    expect(await row.textContent()).toContain("chain broken here");
    expect(await page.getByText("chain broken here").count()).toBe(1);
    await page.context().close();
  });
});
