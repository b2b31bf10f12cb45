/**
 * Issue 8 in a real browser: the console served by a started manager, a compiled edge behind it,
 * driven in headless Chromium. Login, the generated skill form (a run and a refused value), and
 * the console's security headers.
 */
import http from "node:http";
import net from "node:net";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, type TestEdge } from "./support/edge.ts";
import { describeInBrowser, launchBrowser, openConsole, screenshot } from "./support/browser.ts";
import { makeUser } from "./support/auth.ts";

let m: TestManager;
let edge: TestEdge;
let browser: Browser;
let banner: net.Server;
let bannerPort: number;
let packDir: string;

/** Generous waits for what arrives over the network (the machine may be busy); nothing asserts how fast. */
const LIVE = { timeout: 20_000 };

/** A manager pack whose raw JSON schema has an array of objects holding an array, and a nested object; it echoes its params. */
function writeEchoPack(): string {
  const dir = mkdtempSync(join(tmpdir(), "ongrid-console-pack-"));
  const rawSchema = {
    type: "object",
    additionalProperties: false,
    required: ["targets"],
    properties: {
      targets: {
        type: "array",
        description: "Hosts to check.",
        minItems: 1,
        items: {
          type: "object",
          additionalProperties: false,
          required: ["host"],
          properties: { host: { type: "string", minLength: 1, description: "Host name." }, ports: { type: "array", items: { type: "integer", minimum: 1, maximum: 65535 }, description: "Ports." } },
        },
      },
      options: { type: "object", description: "Tuning.", properties: { retries: { type: "integer", minimum: 0, maximum: 5, default: 1, description: "Retries." }, mode: { type: "string", enum: ["fast", "thorough"], default: "fast", description: "How hard to look." } } },
    },
  };
  writeFileSync(
    join(dir, "skill.json"),
    JSON.stringify({
      skills: [
        {
          key: "echo_targets",
          name: "Echo targets",
          description: "Returns the targets it was given. Use to check how a form with nested params is sent.",
          class: "safe",
          scope: "manager",
          category: "test",
          raw_schema: rawSchema,
          executable: "echo.py",
        },
      ],
    }),
  );
  writeFileSync(join(dir, "echo.py"), "#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps({'output': json.load(sys.stdin)}))\n");
  chmodSync(join(dir, "echo.py"), 0o755);
  return dir;
}

beforeAll(async () => {
  packDir = writeEchoPack();
  m = await bootManager({ "packs.dirs": packDir });
  edge = await startEdge(m, "edge-console", { labels: { env: "test" } });
  banner = net.createServer((s) => s.end("SSH-2.0-console-test\r\n"));
  await new Promise<void>((r) => banner.listen(0, "127.0.0.1", r));
  bannerPort = (banner.address() as net.AddressInfo).port;
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await edge?.stop();
  banner?.close();
  await m?.stop();
  rmSync(packDir, { recursive: true, force: true });
});

async function auditCount(): Promise<number> {
  await m.audit.flush();
  return (await m.audit.list({ toolName: "probe_tcp", limit: 1000 })).length;
}

async function openProbeTcp(page: Page): Promise<void> {
  await page.getByRole("link", { name: "Skills" }).click();
  await page.getByLabel("Filter").fill("probe_tcp");
  await page.locator('[data-skill="probe_tcp"]').click();
  await page.getByRole("heading", { name: /probe_tcp/ }).waitFor();
}

describeInBrowser("web console", () => {
  it("serves the console with a strict Content-Security-Policy on its one port, and answers unknown API paths as before", async () => {
    const res = await fetch(`${m.url}/skills`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const html = await res.text();
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeTruthy();
    const js = await fetch(`${m.url}${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    expect((await fetch(`${m.url}/no/such/thing`)).status).toBe(404);
    // paths sent as they are (fetch would normalise them): refused, and the manager keeps serving
    const rawStatus = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(m.url);
        http.request({ host: u.hostname, port: u.port, path }, (r) => (r.resume(), resolve(r.statusCode!))).on("error", reject).end();
      });
    expect(await rawStatus("//")).toBe(404);
    expect(await rawStatus("/%")).toBe(400);
    expect(await rawStatus("/skills/%E0%A4%A")).toBe(400);
    expect(await rawStatus("/assets/..%2f..%2fpackage.json")).toBe(404);
    expect((await fetch(`${m.url}/healthz`)).status).toBe(200);
  });

  it("refuses a wrong token at login with a readable message, and logs in with a right one", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const cspErrors: string[] = [];
    page.on("console", (msg) => msg.type() === "error" && cspErrors.push(msg.text()));
    const notFound: string[] = [];
    page.on("response", (r) => r.status() === 404 && notFound.push(r.url()));
    await page.goto(m.url);
    await screenshot(page, "login");
    await page.getByLabel("API token").fill("ogt_not_a_real_token");
    await page.getByRole("button", { name: "Log in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toMatch(/Unauthenticated/i);
    await page.getByLabel("API token").fill(m.adminToken);
    await page.getByRole("button", { name: "Log in" }).click();
    await expect.poll(() => page.getByTestId("whoami").textContent(), LIVE).toMatch(/admin\s*admin/);
    // landed on /skills, and nothing the page did broke the CSP
    await expect.poll(() => new URL(page.url()).pathname, LIVE).toBe("/skills");
    expect(cspErrors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    // the favicon: linked from the page, served as SVG under the CSP, and nothing the browser asked for was missing
    const icon = await page.locator('link[rel="icon"]').getAttribute("href");
    expect(icon).toMatch(/^\/assets\/favicon-[\w-]+\.svg$/);
    const res = await fetch(`${m.url}${icon}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/svg+xml");
    expect(await res.text()).toMatch(/^<svg /);
    expect(notFound).toEqual([]);
    await context.close();
  });

  it("keeps the token when the manager cannot be reached at login, and logs in on Try again", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(m.url);
    // the manager restarting, say: the WhoAmI call fails at the network level, not with a refusal
    await page.route("**/ongrid.v1.IdentityService/WhoAmI", (route) => route.abort("connectionrefused"));
    await page.getByLabel("API token").fill(m.adminToken);
    await page.getByRole("button", { name: "Log in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toMatch(/Cannot check the token with the manager/);
    expect(await page.getByLabel("API token").count()).toBe(0);
    await page.unroute("**/ongrid.v1.IdentityService/WhoAmI");
    await page.getByRole("button", { name: "Try again" }).click();
    await expect.poll(() => page.getByTestId("whoami").textContent(), LIVE).toMatch(/admin/);
    await context.close();
  });

  it("runs probe_tcp on an edge from its generated form and shows the result envelope", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await openProbeTcp(page);
    // the form is generated from the param schema: both fields, required, with their descriptions
    await expect.poll(() => page.locator("#param_host").count(), LIVE).toBe(1);
    await expect.poll(() => page.locator("#param_port").getAttribute("type"), LIVE).toBe("number");
    await page.getByLabel("Edge", { exact: true }).selectOption("edge-console");
    const before = await auditCount();
    await page.locator("#param_host").fill("127.0.0.1");
    await page.locator("#param_port").fill(String(bannerPort));
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const result = page.getByTestId("result");
    await result.waitFor();
    await expect.poll(() => result.textContent(), LIVE).toMatch(/Succeeded/);
    expect(await result.textContent()).toContain("edge-console");
    expect(await result.textContent()).toContain("SSH-2.0-console-test");
    expect(await auditCount()).toBe(before + 1);
    // the audit row's number links to the timeline, filtered to this caller, skill and edge
    const link = page.getByRole("link", { name: /^Audit row #\d+$/ });
    const seq = Number((await link.textContent())!.replace(/\D/g, ""));
    await m.audit.flush();
    const [row] = await m.audit.list({ afterSeq: seq - 1, limit: 1 });
    expect(row).toMatchObject({ seq, toolName: "probe_tcp", deviceId: "edge-console", callerUserId: "admin" });
    await link.click();
    await expect.poll(() => new URL(page.url()).searchParams.toString(), LIVE).toBe("tool=probe_tcp&user=admin&edge=edge-console");
    await expect.poll(() => page.getByTestId("audit-row").first().getAttribute("data-seq"), LIVE).toBe(String(seq));
    await page.context().close();
  });

  it("shows a failed run's error code, message and hint", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await openProbeTcp(page);
    await page.getByLabel("Edge", { exact: true }).selectOption("edge-console");
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await page.locator("#param_host").fill("127.0.0.1");
    await page.locator("#param_port").fill(String(port));
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const result = page.getByTestId("result");
    await expect.poll(() => result.textContent(), LIVE).toMatch(/Failed/);
    expect(await result.locator(".result-error code").textContent()).toBe("connection_refused");
    expect(await result.locator(".result-error").textContent()).toContain(`127.0.0.1:${port}`);
    expect(await result.locator(".hint").textContent()).toMatch(/^Hint: \S/);
    await page.context().close();
  });

  it("refuses an out-of-range port in the form, naming the field, and sends nothing", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await openProbeTcp(page);
    const before = await auditCount();
    await page.locator("#param_host").fill("127.0.0.1");
    await page.locator("#param_port").fill("70000");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const fieldError = page.locator("#param_port__error");
    await fieldError.waitFor();
    expect(await fieldError.textContent()).toMatch(/must be <= 65535/);
    await expect.poll(() => page.locator(".panel.errors").textContent(), LIVE).toMatch(/port/);
    expect(await page.getByTestId("result").count()).toBe(0);
    expect(await auditCount()).toBe(before);
    await screenshot(page, "skills-invalid");
    await page.context().close();
  });

  it("fans probe_http out to edges by label and shows each edge's result as it arrives, then the summary", async () => {
    const web1 = await startEdge(m, "edge-web-1", { labels: { fleet: "web" } });
    const web2 = await startEdge(m, "edge-web-2", { labels: { fleet: "web" } });
    // The second request is held until the test has seen the first result in the page.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let seen = 0;
    const server = http.createServer(async (req, res) => {
      if (++seen === 2) await held;
      res.end("ok");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const page = await openConsole(browser, m.url, m.adminToken);
      await page.getByLabel("Filter").fill("probe_http");
      await page.locator('[data-skill="probe_http"]').click();
      await page.getByRole("radio", { name: /Edges by label/ }).check();
      await page.getByLabel("Label selector").fill("fleet=web");
      await page.locator("#param_url").fill(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}/health`);
      await page.getByRole("button", { name: "Run on matching edges" }).click();
      const table = page.getByTestId("fanout");
      await expect.poll(() => table.locator("tbody tr").count(), { timeout: 15_000 }).toBe(1);
      expect(await table.getByRole("status").textContent()).toMatch(/1 edge answered so far/);
      await screenshot(page, "skills-fanout");
      release();
      await expect.poll(() => table.getByRole("status").textContent(), LIVE).toMatch(/2 edges: 2 succeeded, 0 failed/);
      expect(await table.locator("tbody tr").count()).toBe(2);
      expect((await table.locator("tbody tr").allTextContents()).map((t) => t.slice(0, 10)).sort()).toEqual(["edge-web-1", "edge-web-2"]);
      await page.context().close();
    } finally {
      release();
      server.close();
      await web1.stop();
      await web2.stop();
    }
  });

  it("lists the skills as a compact table grouped by category: many on one screen, the description on demand, a click opens the form", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    const table = page.getByTestId("skill-table");
    await table.locator('tr[data-row="probe_tcp"]').waitFor();
    // rows wholly inside the 1280×800 window: a screen shows many skills, not two or three
    const inView = await table.locator("tr[data-row]").evaluateAll((rows, height) => rows.filter((r) => r.getBoundingClientRect().top >= 0 && r.getBoundingClientRect().bottom <= height).length, page.viewportSize()!.height);
    expect(inView).toBeGreaterThanOrEqual(12);
    // one group per category, each headed by its name and count
    const categories = await table.locator("tbody").evaluateAll((groups) => groups.map((g) => g.getAttribute("data-category")));
    expect(new Set(categories).size).toBe(categories.length);
    expect(categories).toEqual(expect.arrayContaining(["network", "shell", "test"]));
    const network = table.locator('tbody[data-category="network"]');
    expect(await network.locator('[data-skill="probe_tcp"]').count()).toBe(1);
    expect(await network.locator("tr.skill-group").textContent()).toMatch(new RegExp(`^network \\(${await network.locator("tr[data-row]").count()}\\)$`));
    // a row: key, class, scope, a one-line summary
    const row = table.locator('tr[data-row="probe_tcp"]');
    expect((await row.boundingBox())!.height).toBeLessThan(40);
    expect(await row.locator("td").nth(1).textContent()).toBe("safe");
    expect(await row.locator("td").nth(2).textContent()).toBe("edge");
    const summary = (await row.locator("td.skill-summary").textContent()) ?? "";
    expect(summary.length).toBeGreaterThan(10);
    // the full description on demand, in a row of its own
    expect(await table.getByTestId("skill-detail").count()).toBe(0);
    const disclose = row.getByRole("button", { name: "Description of probe_tcp" });
    expect(await disclose.getAttribute("aria-expanded")).toBe("false");
    await disclose.click();
    expect(await disclose.getAttribute("aria-expanded")).toBe("true");
    const detail = table.getByTestId("skill-detail");
    const full = (await detail.textContent()) ?? "";
    expect(full).toContain(summary);
    expect(full.length).toBeGreaterThan(summary.length);
    await disclose.click();
    expect(await table.getByTestId("skill-detail").count()).toBe(0);
    // choosing a skill opens its run form
    await row.locator('[data-skill="probe_tcp"]').click();
    await page.getByRole("heading", { name: /probe_tcp/ }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/skills/probe_tcp");
    expect(await page.locator("#param_host").count()).toBe(1);
    await page.getByLabel("Edge", { exact: true }).selectOption("edge-console");
    await page.locator("#param_host").fill("127.0.0.1");
    await page.locator("#param_port").fill(String(bannerPort));
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.getByTestId("result").textContent(), LIVE).toMatch(/Succeeded/);
    await page.evaluate("window.scrollTo(0, 0); document.querySelector('.skill-table-wrap').scrollTop = 0");
    await screenshot(page, "skills");
    await page.context().close();
  });

  it("shows a command that exits non-zero as Failed: code, message, hint, the exit code, and stdout and stderr as text; the audit log shows it the same way", async () => {
    const token = await makeUser(m, "otto", "operator");
    const page = await openConsole(browser, m.url, token);
    await page.getByLabel("Filter").fill("exec");
    await page.locator('[data-skill="exec"]').click();
    await page.getByRole("heading", { name: /exec/ }).waitFor();
    await page.getByLabel("Edge", { exact: true }).selectOption("edge-console");
    // a safe, allowlisted command (it runs without approval) that exits 2
    await page.locator("#param_command").fill("grep -E '(' /etc/hostname");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const result = page.getByTestId("result");
    await expect.poll(() => result.getAttribute("data-success"), LIVE).toBe("false");
    expect(await result.locator(".result-head strong").textContent()).toBe("Failed");
    expect(await result.locator(".result-error code").textContent()).toBe("exit_status");
    expect(await result.locator(".result-error").textContent()).toMatch(/the command exited with status 2/);
    expect(await result.locator(".hint").textContent()).toMatch(/^Hint: Read stderr and stdout/);
    expect(await result.getByTestId("exit-code").textContent()).toBe("Exit code 2");
    const stderr = result.getByTestId("stderr");
    expect(await stderr.evaluate((e) => e.tagName)).toBe("PRE");
    expect(await stderr.textContent()).toMatch(/^grep: Unmatched \( or \\\(\n$/);
    expect(await result.getByTestId("stdout").textContent()).toMatch(/\(empty\)/);
    const text = (await result.textContent()) ?? "";
    expect(text).not.toMatch(/null|\\n|"stderr":/);
    await screenshot(page, "skills-failed");
    await page.context().close();

    // the audit row of that call: an error, and the same readable output in its detail
    const admin = await openConsole(browser, m.url, m.adminToken);
    await admin.goto(`${m.url}/admin/audit?tool=exec&user=otto`);
    const auditRow = admin.getByTestId("audit-row").first();
    await auditRow.waitFor();
    expect(await auditRow.locator(".audit-outcome").textContent()).toMatch(/error\s*exit_status/);
    await auditRow.locator("summary").first().click();
    const audited = auditRow.getByTestId("command-output");
    expect(await audited.getByTestId("exit-code").textContent()).toBe("Exit code 2");
    expect(await audited.getByTestId("stderr").evaluate((e) => e.tagName)).toBe("PRE");
    expect(await audited.getByTestId("stderr").textContent()).toMatch(/^grep: Unmatched/);
    expect(await auditRow.textContent()).not.toMatch(/\bnull\b/);
    await admin.context().close();
  });

  it("offers the permission mode to an operator and sends it: read-only refuses a mutating command, bypass is refused when the manager does not allow it, the default parks it", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await page.getByLabel("Filter").fill("exec");
    await page.locator('[data-skill="exec"]').click();
    await page.getByRole("heading", { name: /exec/ }).waitFor();
    await page.getByLabel("Edge", { exact: true }).selectOption("edge-console");
    const mode = page.getByLabel("Permission mode");
    expect(await mode.locator("option:checked").textContent()).toMatch(/^Manager default/);
    expect(await mode.locator("option").allTextContents()).toEqual([expect.stringMatching(/^Manager default/), expect.stringMatching(/^Read only/), expect.stringMatching(/^Normal/), expect.stringMatching(/^Ask destructive/), expect.stringMatching(/^Bypass.*gate\.allow_bypass/)]);
    const target = join(packDir, "mode.txt");
    await page.locator("#param_command").fill(`touch ${target}`);
    await mode.selectOption({ label: "Read only: safe calls only" });
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toMatch(/Refused: PermissionDenied: denied \(mode_read_only\): READ_ONLY mode runs safe skills only; "exec" is mutating/);
    await mode.selectOption({ index: 4 });
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toMatch(/Refused: PermissionDenied: denied \(bypass_disabled\): BYPASS mode is not enabled on this manager \(gate\.allow_bypass\)/);
    await mode.selectOption({ index: 0 });
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await page.getByTestId("parked").waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    await m.audit.flush();
    const rows = (await m.audit.list({ toolName: "exec", limit: 1000 })).filter((r) => JSON.stringify(r.args).includes("mode.txt"));
    expect(rows.map((r) => r.decision).sort()).toEqual(["ask", "deny", "deny"]);
    await page.context().close();
  });

  it("fans out to all edges in reach after a confirmation naming the skill and the count, and says plainly when no edge matched", async () => {
    const second = await startEdge(m, "edge-all-2", { labels: { env: "other" } });
    try {
      const page = await openConsole(browser, m.url, m.adminToken);
      await openProbeTcp(page);
      await page.locator("#param_host").fill("127.0.0.1");
      await page.locator("#param_port").fill(String(bannerPort));
      await page.getByRole("radio", { name: "All edges in reach" }).check();
      const before = await auditCount();
      await page.getByRole("button", { name: "Run on all edges…" }).click();
      const confirm = page.getByTestId("confirm");
      await confirm.waitFor();
      expect(await confirm.textContent()).toMatch(/^Run probe_tcp on 2 edges in your reach: (edge-console, edge-all-2|edge-all-2, edge-console)\?/);
      // cancelled: nothing ran
      await confirm.getByRole("button", { name: "Cancel" }).click();
      expect(await page.getByTestId("confirm").count()).toBe(0);
      expect(await auditCount()).toBe(before);
      await page.getByRole("button", { name: "Run on all edges…" }).click();
      await page.getByTestId("confirm").getByRole("button", { name: "Run on 2 edges" }).click();
      const table = page.getByTestId("fanout");
      await expect.poll(() => table.getByRole("status").textContent(), LIVE).toMatch(/^2 edges: 2 succeeded, 0 failed in \d+ ms$/);
      expect((await table.locator("tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-edge")))).sort()).toEqual(["edge-all-2", "edge-console"]);
      expect(await auditCount()).toBe(before + 2);

      // a selector no edge matches: said plainly, no empty table
      await page.getByRole("radio", { name: /Edges by label/ }).check();
      await page.getByLabel("Label selector").fill("env=nowhere");
      await page.getByRole("button", { name: "Run on matching edges" }).click();
      await expect.poll(() => table.getByRole("status").textContent(), LIVE).toBe('No edge matched the selector "env=nowhere". Nothing ran.');
      expect(await table.locator("table").count()).toBe(0);
      // one edge: "1 edge", and a failed command's row shows its stderr as text
      await page.getByLabel("Label selector").fill("env=other");
      await page.getByRole("button", { name: "Run on matching edges" }).click();
      await expect.poll(() => table.getByRole("status").textContent(), LIVE).toMatch(/^1 edge: 1 succeeded, 0 failed in \d+ ms$/);
      await page.context().close();

      // "all" counts the edges when asked: once the only edge in this user's reach is gone, none is left, and it says so before anything runs
      const near = await makeUser(m, "nell", "operator", { reach: "env=other" });
      const far = await openConsole(browser, m.url, near);
      await openProbeTcp(far);
      await far.locator("#param_host").fill("127.0.0.1");
      await far.locator("#param_port").fill(String(bannerPort));
      await far.getByRole("radio", { name: "All edges in reach" }).check();
      await far.getByRole("button", { name: "Run on all edges…" }).click();
      await expect.poll(() => far.getByTestId("confirm").textContent(), LIVE).toMatch(/^Run probe_tcp on 1 edge in your reach: edge-all-2\?/);
      await far.getByTestId("confirm").getByRole("button", { name: "Cancel" }).click();
      await second.stop();
      await far.getByRole("button", { name: "Run on all edges…" }).click();
      await expect.poll(() => far.getByTestId("no-edge").textContent(), LIVE).toBe("No edge matched: no online edge in your reach offers probe_tcp. Nothing ran.");
      expect(await far.getByTestId("confirm").count()).toBe(0);
      await far.context().close();
    } finally {
      await second.stop();
    }
  });

  it("fans a failing exec out and shows each edge's failure with its exit code and stderr", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await page.getByLabel("Filter").fill("exec");
    await page.locator('[data-skill="exec"]').click();
    await page.getByRole("heading", { name: /exec/ }).waitFor();
    await page.getByRole("radio", { name: /Edges by label/ }).check();
    await page.getByLabel("Label selector").fill("env=test");
    await page.locator("#param_command").fill("grep -E '(' /etc/hostname");
    await page.getByRole("button", { name: "Run on matching edges" }).click();
    const table = page.getByTestId("fanout");
    await expect.poll(() => table.getByRole("status").textContent(), LIVE).toMatch(/^1 edge: 0 succeeded, 1 failed in \d+ ms$/);
    const row = table.locator('tr[data-edge="edge-console"]');
    expect(await row.getAttribute("data-success")).toBe("false");
    expect(await row.textContent()).toMatch(/failed.*exit_status the command exited with status 2/);
    expect(await row.getByTestId("exit-code").textContent()).toBe("Exit code 2");
    expect(await row.getByTestId("stderr").textContent()).toMatch(/^grep: Unmatched/);
    await page.context().close();
  });

  it("is usable from the keyboard alone: pick a skill, fill its form and submit with Enter", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await page.getByLabel("Filter").focus();
    await page.keyboard.type("probe_tcp");
    await page.keyboard.press("Tab");
    expect(await page.evaluate<string | null | undefined>("document.activeElement?.getAttribute('data-skill')")).toBe("probe_tcp");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: /probe_tcp/ }).waitFor();
    const tabTo = async (id: string) => {
      for (let i = 0; i < 40; i++) {
        if ((await page.evaluate<string | undefined>("document.activeElement?.id")) === id) return;
        await page.keyboard.press("Tab");
      }
      throw new Error(`Tab never reached #${id}`);
    };
    await tabTo("param_host");
    await page.keyboard.type("127.0.0.1");
    await tabTo("param_port");
    await page.keyboard.type(String(bannerPort));
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByTestId("result").textContent(), LIVE).toMatch(/Succeeded/);
    await page.context().close();
  });

  it("fits a narrow window: no sideways scrolling, navigation and the form still reachable", async () => {
    const page = await openConsole(browser, m.url, m.adminToken, { width: 390, height: 800 });
    await openProbeTcp(page);
    const { scrollWidth, clientWidth } = await page.evaluate<{ scrollWidth: number; clientWidth: number }>("({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })");
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    expect(await page.locator("#param_host").isVisible()).toBe(true);
    for (const name of ["Skills", "Edges", "Approvals", "Playbooks", "Diagnose", "Audit"]) expect(await page.getByRole("link", { name, exact: true }).isVisible()).toBe(true);
    await screenshot(page, "skills-narrow");
    // every page: reached from the navigation, its heading shown, nothing wider than the window
    for (const [name, heading] of [["Edges", "Edges"], ["Approvals", "Approvals"], ["Playbooks", "Playbooks"], ["Diagnose", "Diagnose"], ["Audit", "Audit log"]]) {
      await page.getByRole("link", { name, exact: true }).click();
      await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
      const w = await page.evaluate<{ scrollWidth: number; clientWidth: number }>("({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })");
      expect(w.scrollWidth, name).toBeLessThanOrEqual(w.clientWidth);
    }
    await page.context().close();
  });

  it("builds a form for a raw JSON schema with an array of objects, a nested array and a nested object, and sends what was entered", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await page.getByLabel("Filter").fill("echo_targets");
    await page.locator('[data-skill="echo_targets"]').click();
    await page.getByRole("heading", { name: /echo_targets/ }).waitFor();
    // a manager skill: no edge to choose
    expect(await page.getByLabel("Edge", { exact: true }).count()).toBe(0);
    // defaults of the nested object are filled in
    expect(await page.locator("#param_options_retries").inputValue()).toBe("1");
    expect(await page.locator("#param_options_mode option:checked").textContent()).toBe("fast");
    // minItems: 1 gives the first target; its ports array starts empty and grows by "Add item"
    await page.locator("#param_targets_0_host").fill("db-1");
    await page.locator("#param_targets_0_ports__add").getByText("Add item").click();
    await page.locator("#param_targets_0_ports_0").fill("5432");
    await page.locator("#param_targets_0_ports__add").click();
    await page.locator("#param_targets_0_ports_1").fill("6432");
    await page.locator("#param_options_mode").selectOption({ label: "thorough" });
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.getByTestId("result").textContent(), LIVE).toMatch(/Succeeded/);
    const echoed = JSON.parse((await page.getByTestId("result").locator("pre.output").textContent()) ?? "null");
    expect(echoed).toEqual({ targets: [{ host: "db-1", ports: [5432, 6432] }], options: { retries: 1, mode: "thorough" } });
    // a nested value out of range is refused in the form, at its own field
    await page.locator("#param_targets_0_ports_1").fill("70000");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.locator("#param_targets_0_ports_1__error").textContent(), LIVE).toMatch(/must be <= 65535/);
    await screenshot(page, "skills-nested");
    await page.context().close();
  });

  it("shows a viewer the skills but does not let the viewer run a mutating one, offers no permission mode, and says why the audit page is not available", async () => {
    const token = await makeUser(m, "vera", "viewer");
    const page = await openConsole(browser, m.url, token);
    expect(await page.getByRole("link", { name: "Audit" }).count()).toBe(0);
    await page.getByLabel("Filter").fill("restart_service");
    await page.locator('[data-skill="restart_service"]').click();
    await page.getByRole("heading", { name: /restart_service/ }).waitFor();
    expect(await page.getByRole("button", { name: "Run", exact: true }).isDisabled()).toBe(true);
    expect(await page.locator("text=Your role may not run").count()).toBe(1);
    // no mode to choose: a viewer's calls are safe ones, in the manager's default mode
    expect(await page.getByLabel("Permission mode").count()).toBe(0);
    expect(await page.getByTestId("mode-note").textContent()).toMatch(/Your role \(viewer\) runs safe calls only/);
    // exec is classed per call: the viewer may send a safe command, and a mutating one is refused by the manager
    await page.getByLabel("Filter").fill("exec");
    await page.locator('[data-skill="exec"]').click();
    await page.getByRole("heading", { name: /exec/ }).waitFor();
    await page.getByLabel("Edge", { exact: true }).selectOption("edge-console");
    await page.locator("#param_command").fill("touch /tmp/ongrid-viewer-should-not");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toMatch(/Refused: PermissionDenied: .*a viewer may run safe skills only/);
    // a page the role does not allow says so, and which role it needs, instead of landing elsewhere
    await page.goto(`${m.url}/admin/audit`);
    const denied = page.getByTestId("not-allowed");
    await denied.waitFor();
    expect(new URL(page.url()).pathname).toBe("/admin/audit");
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Audit: not available to you");
    expect(await denied.textContent()).toMatch(/needs the approver \(or admin\) role; you are logged in as viewer/);
    await screenshot(page, "not-allowed");
    await denied.getByRole("link", { name: "Go to Skills" }).click();
    await expect.poll(() => new URL(page.url()).pathname, LIVE).toBe("/skills");
    await page.context().close();
  });
});
