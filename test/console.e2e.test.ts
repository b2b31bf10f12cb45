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
    await page.goto(m.url);
    await screenshot(page, "login");
    await page.getByLabel("API token").fill("ogt_not_a_real_token");
    await page.getByRole("button", { name: "Log in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/Unauthenticated/i);
    await page.getByLabel("API token").fill(m.adminToken);
    await page.getByRole("button", { name: "Log in" }).click();
    await expect.poll(() => page.getByTestId("whoami").textContent()).toMatch(/admin\s*admin/);
    // landed on /skills, and nothing the page did broke the CSP
    await expect.poll(() => new URL(page.url()).pathname).toBe("/skills");
    expect(cspErrors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
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
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/Cannot check the token with the manager/);
    expect(await page.getByLabel("API token").count()).toBe(0);
    await page.unroute("**/ongrid.v1.IdentityService/WhoAmI");
    await page.getByRole("button", { name: "Try again" }).click();
    await expect.poll(() => page.getByTestId("whoami").textContent()).toMatch(/admin/);
    await context.close();
  });

  it("runs probe_tcp on an edge from its generated form and shows the result envelope", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await openProbeTcp(page);
    // the form is generated from the param schema: both fields, required, with their descriptions
    await expect.poll(() => page.locator("#param_host").count()).toBe(1);
    await expect.poll(() => page.locator("#param_port").getAttribute("type")).toBe("number");
    await page.getByLabel("Edge", { exact: true }).selectOption("edge-console");
    const before = await auditCount();
    await page.locator("#param_host").fill("127.0.0.1");
    await page.locator("#param_port").fill(String(bannerPort));
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const result = page.getByTestId("result");
    await result.waitFor();
    await expect.poll(() => result.textContent()).toMatch(/Succeeded/);
    expect(await result.textContent()).toContain("edge-console");
    expect(await result.textContent()).toContain("SSH-2.0-console-test");
    expect(await auditCount()).toBe(before + 1);
    await screenshot(page, "skills");
    // the audit row's number links to the timeline, filtered to this caller, skill and edge
    const link = page.getByRole("link", { name: /^Audit row #\d+$/ });
    const seq = Number((await link.textContent())!.replace(/\D/g, ""));
    await m.audit.flush();
    const [row] = await m.audit.list({ afterSeq: seq - 1, limit: 1 });
    expect(row).toMatchObject({ seq, toolName: "probe_tcp", deviceId: "edge-console", callerUserId: "admin" });
    await link.click();
    await expect.poll(() => new URL(page.url()).searchParams.toString()).toBe("tool=probe_tcp&user=admin&edge=edge-console");
    await expect.poll(() => page.getByTestId("audit-row").first().getAttribute("data-seq")).toBe(String(seq));
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
    await expect.poll(() => result.textContent()).toMatch(/Failed/);
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
    await expect.poll(() => page.locator(".panel.errors").textContent()).toMatch(/port/);
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
      await expect.poll(() => table.locator("tbody tr").count()).toBe(1);
      expect(await table.getByRole("status").textContent()).toMatch(/1 edge answered so far/);
      await screenshot(page, "skills-fanout");
      release();
      await expect.poll(() => table.getByRole("status").textContent()).toMatch(/2 edges: 2 succeeded, 0 failed/);
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
    await expect.poll(() => page.getByTestId("result").textContent()).toMatch(/Succeeded/);
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
    await expect.poll(() => page.getByTestId("result").textContent()).toMatch(/Succeeded/);
    const echoed = JSON.parse((await page.getByTestId("result").locator("pre.output").textContent()) ?? "null");
    expect(echoed).toEqual({ targets: [{ host: "db-1", ports: [5432, 6432] }], options: { retries: 1, mode: "thorough" } });
    // a nested value out of range is refused in the form, at its own field
    await page.locator("#param_targets_0_ports_1").fill("70000");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await expect.poll(() => page.locator("#param_targets_0_ports_1__error").textContent()).toMatch(/must be <= 65535/);
    await screenshot(page, "skills-nested");
    await page.context().close();
  });

  it("shows a viewer the skills but does not let the viewer run a mutating one, and hides the audit page", async () => {
    const token = await makeUser(m, "vera", "viewer");
    const page = await openConsole(browser, m.url, token);
    expect(await page.getByRole("link", { name: "Audit" }).count()).toBe(0);
    await page.getByLabel("Filter").fill("exec");
    await page.locator('[data-skill="exec"]').click();
    await page.getByRole("heading", { name: /exec/ }).waitFor();
    expect(await page.getByRole("button", { name: "Run", exact: true }).isDisabled()).toBe(true);
    expect(await page.locator("text=Your role may not run").count()).toBe(1);
    await page.context().close();
  });
});
