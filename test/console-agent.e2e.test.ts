/**
 * Issue 8 in a real browser, L2: /playbooks (list, read one, load problems, Reload for admins)
 * and /chat (a diagnosis session streamed into a live trace), against started managers with
 * compiled edges. One manager has no model (router rules, fallback steps, deterministic report);
 * a second is configured with a scripted OpenAI-protocol model, because whether a model is
 * configured is fixed when a manager starts and the two paths are different features.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { describeInBrowser, launchBrowser, openConsole, screenshot } from "./support/browser.ts";
import { makeUser } from "./support/auth.ts";
import { startScriptedModel, type Reply, type ScriptedModel } from "./support/openai-server.ts";

/** The five body sections a playbook should have (else it loads with a warning). */
const BODY = ["Trigger conditions", "Required evidence", "Recommended tool order", "Stop conditions", "Report format"].map((s) => `## ${s}\n\ntext\n`).join("\n");

/** Generous waits for what arrives over the network (the machine may be busy); nothing asserts how fast. */
const LIVE = { timeout: 20_000 };

let ext: string;
let brokenFile: string;
let m: TestManager;
let edge: TestEdge;
let mm: TestManager;
let modelEdge: TestEdge;
let model: ScriptedModel;
let browser: Browser;
let web: http.Server;
let webUrl: string;
let webHits = 0;

/** The script the model follows now; each model test sets it. */
let current: (body: any) => Reply | Promise<Reply> = () => ({ status: 500, error: { message: "no script set" } });

/** Answers the router, planner and verifier by schema name, executor turns from a queue (as test/agent.e2e.test.ts does). */
function script(o: { route?: Reply; plan?: Reply; verdict?: Reply; turns: Reply[] }) {
  const turns = [...o.turns];
  return (body: any): Reply => {
    const schema = body.response_format?.json_schema?.name ?? (JSON.stringify(body.messages).includes("route_choice") ? "route_choice" : undefined);
    if (schema === "route_choice") return o.route ?? { json: { is_oncall: true, skill_name: "generic_oncall", confidence: 0.5, reason: "default" } };
    if (schema === "diagnosis_plan") return o.plan ?? { json: { reason: "default", plan: ["look"] } };
    if (schema === "verdict") return o.verdict ?? { json: { verdict: "supported", unsupported_claims: [], notes: "" } };
    if (String(body.messages?.[0]?.content ?? "").startsWith("Summarise this condensed tool output")) return { content: "summary" };
    return turns.shift() ?? { content: "# Report\n\nNothing more." };
  };
}

beforeAll(async () => {
  ext = mkdtempSync(join(tmpdir(), "ongrid-console-pb-"));
  mkdirSync(join(ext, "cache_triage"), { recursive: true });
  brokenFile = join(ext, "cache_triage", "SKILL.md");
  writeFileSync(brokenFile, `---\nname: cache_triage\ndescription: cache problems\nrisk_level: extreme\n---\n${BODY}`);
  // A real HTTP service on loopback for the edge to probe: a failing health check with a server header to recognise.
  web = http.createServer((_req, res) => {
    webHits++;
    res.writeHead(503, { server: "console-agent-test/1.0", "content-type": "text/plain" });
    res.end("maintenance\n");
  });
  await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;

  m = await bootManager({ "playbooks.dirs": ext, "playbooks.watch": false });
  edge = await startEdge(m, "chat-edge", { labels: { env: "test" } });

  model = await startScriptedModel(Array.from({ length: 1000 }, () => (body: any) => current(body)));
  mm = await bootManager({ "model.base_url": model.url, "model.model": "console-test-model", "model.max_retries": 0, "model.timeout": "5s", "playbooks.watch": false });
  modelEdge = await startEdge(mm, "chat-model-edge");
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await edge?.stop();
  await modelEdge?.stop();
  await m?.stop();
  await mm?.stop();
  await model?.close();
  web?.close();
  if (ext) rmSync(ext, { recursive: true, force: true });
});

async function openPlaybooks(page: Page): Promise<void> {
  await page.getByRole("link", { name: "Playbooks" }).click();
  await page.locator('[data-playbook="generic_oncall"]').waitFor();
}

/** The trace item of `kind` for `tool` (by its tool name, not by text its output may contain). */
const traceItem = (page: Page, kind: string, tool: string) => page.locator(`ol.trace > li[data-kind="${kind}"]`).filter({ has: page.locator("code.tool", { hasText: new RegExp(`^${tool}$`) }) });

/** The data-kind of every trace item, in page order. */
const kinds = (page: Page) => page.locator("ol.trace > li").evaluateAll((els) => els.map((e) => e.getAttribute("data-kind") ?? ""));

describeInBrowser("web console: playbooks and diagnosis", () => {
  it("lists the built-in playbooks and reads one: its facts, fallback steps and its Markdown body rendered", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await openPlaybooks(page);
    const names = await page.locator("[data-playbook]:not([data-state])").evaluateAll((els) => els.map((e) => e.getAttribute("data-playbook")));
    expect(names).toEqual(expect.arrayContaining(["generic_oncall", "network_diagnosis", "host_resource_diagnosis", "service_diagnosis", "container_diagnosis"]));
    // the list carries the facts: triggers, tools and the source file
    const net = page.locator('[data-playbook="network_diagnosis"]');
    expect(await net.textContent()).toMatch(/Triggers: dns resolution, nxdomain, .* \+\d+ more/);
    expect(await net.textContent()).toMatch(/Tools:.*probe_dns/);
    expect(await net.textContent()).toContain("network_diagnosis/SKILL.md");

    await page.locator('[data-playbook="generic_oncall"]').click();
    const article = page.getByTestId("playbook");
    await article.getByRole("heading", { name: /General on-call triage \(fallback\)/ }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/playbooks/generic_oncall");
    // the body, from GetPlaybook, rendered as Markdown: its title is a heading, a sentence is there
    await article.locator(".markdown h1", { hasText: "General on-call triage" }).waitFor();
    expect(await article.locator(".markdown").textContent()).toContain("Every tool here is read-only.");
    expect(await article.locator(".markdown").textContent()).not.toContain("# General on-call triage");
    const tools = await page.getByTestId("allowed-tools").locator("li").allTextContents();
    expect(tools).toEqual(expect.arrayContaining(["host_load", "read_journal", "probe_http", "read_skill"]));
    const steps = await page.getByTestId("fallback-steps").locator("li").allTextContents();
    expect(steps[0]).toMatch(/^host_load/);
    expect(steps.some((s) => s.includes("probe_http") && s.includes("{{url}}"))).toBe(true);
    await screenshot(page, "playbooks");
    await page.context().close();
  });

  it("shows a broken SKILL.md of an extra playbook directory with its path, field and rule, and does not list it as loaded", async () => {
    const page = await openConsole(browser, m.url, m.adminToken);
    await openPlaybooks(page);
    const problems = page.getByTestId("load-problems");
    const broken = problems.locator("li", { hasText: brokenFile });
    await broken.waitFor();
    expect(await broken.getAttribute("data-severity")).toBe("error");
    expect(await broken.textContent()).toMatch(/refused/);
    expect(await broken.textContent()).toMatch(/field risk_level/);
    expect(await broken.textContent()).toMatch(/must be one of "low", "medium", "high"/);
    expect(await broken.textContent()).toMatch(/rule: enum/);
    expect(await page.locator('[data-playbook="cache_triage"]').count()).toBe(0);
    await page.context().close();
  });

  it("shows a viewer Reload disabled with the reason; an admin's Reload reports the fixed file loaded, and its raw HTML stays text", async () => {
    const viewerPage = await openConsole(browser, m.url, await makeUser(m, "vicky", "viewer"));
    await openPlaybooks(viewerPage);
    const viewerButton = viewerPage.getByRole("button", { name: "Reload playbooks" });
    expect(await viewerButton.isDisabled()).toBe(true);
    expect(await viewerPage.getByTestId("reload-help").textContent()).toBe("Only admins may reload playbooks; you are viewer.");
    await viewerPage.context().close();

    writeFileSync(
      brokenFile,
      `---\nname: cache_triage\ndisplay_name: Cache triage\ndescription: cache miss storms on the cache tier\nrisk_level: medium\ntriggers: [cache miss storm]\nallowed_tools: [host_load]\n---\n${BODY}\nRaw markup <b data-testid="raw-html">stays text</b> here.\n`,
    );
    const page = await openConsole(browser, m.url, m.adminToken);
    await openPlaybooks(page);
    const before = await page.getByTestId("playbook-count").textContent();
    expect(await page.getByTestId("load-problems").textContent()).toContain(brokenFile);
    const button = page.getByRole("button", { name: "Reload playbooks" });
    expect(await button.isDisabled()).toBe(false);
    await button.click();
    const result = page.getByTestId("reload-result");
    await result.waitFor();
    expect(await result.textContent()).toMatch(/Added:\s*cache_triage/);
    expect(await result.textContent()).toMatch(/Loaded:.*cache_triage/);
    expect(await result.getByTestId("reload-problems").textContent()).not.toContain(brokenFile);
    // the list follows: the playbook is loaded, the problem is gone, the generation moved on
    await page.locator('[data-playbook="cache_triage"]').waitFor();
    await expect.poll(() => page.getByTestId("load-problems").textContent(), LIVE).not.toContain(brokenFile);
    expect(await page.getByTestId("playbook-count").textContent()).not.toBe(before);
    await page.locator('[data-playbook="cache_triage"]').click();
    const article = page.getByTestId("playbook");
    await article.getByRole("heading", { name: /Cache triage/ }).waitFor();
    expect(await article.textContent()).toContain("risk medium");
    await article.locator(".markdown h2", { hasText: "Stop conditions" }).waitFor();
    expect(await article.locator('.markdown [data-testid="raw-html"]').count()).toBe(0);
    expect(await article.locator(".markdown").textContent()).toContain("stays text");
    await page.context().close();
  });

  it("diagnoses without a model: the route by rules, the fallback plan, the HTTP probe on the edge and a report of its real output, in order", async () => {
    const page = await openConsole(browser, m.url, await makeUser(m, "oona", "operator"));
    await page.getByRole("link", { name: "Diagnose" }).click();
    const hitsBefore = webHits;
    await page.getByLabel("Alert or question").fill(`ProbeFailed: ${webUrl}/healthz is failing on chat-edge`);
    await expect.poll(() => page.locator("#chat-edge option").allTextContents(), LIVE).toContain("chat-edge (env=test)");
    await page.getByLabel("Edge").selectOption("chat-edge");
    await page.getByRole("button", { name: "Diagnose" }).click();
    await page.locator('ol.trace > li[data-kind="done"]').waitFor({ timeout: 45_000 });

    const order = await kinds(page);
    expect(order[0]).toBe("session");
    expect(order.at(-1)).toBe("done");
    const at = (k: string) => order.indexOf(k);
    expect(at("route")).toBeGreaterThan(0);
    expect(at("plan")).toBeGreaterThan(at("route"));
    expect(at("tool_call")).toBeGreaterThan(at("plan"));
    expect(at("tool_result")).toBe(at("tool_call") + 1);
    expect(at("report")).toBeGreaterThan(order.lastIndexOf("tool_result"));
    expect(at("done")).toBe(order.length - 1);

    const route = page.locator('li[data-kind="route"]');
    expect(await route.textContent()).toContain("network_diagnosis");
    expect(await route.textContent()).toMatch(/by rules.*not_configured/);
    expect(await route.textContent()).toMatch(/probefailed/i);
    expect(await page.locator('li[data-kind="plan"]').textContent()).toMatch(/fallback_steps/);
    expect(await page.locator('li[data-kind="plan"] .plan-steps li').count()).toBeGreaterThanOrEqual(3);

    // the probe really ran on the edge against the test's server, and its real answer is shown
    const call = traceItem(page, "tool_call", "probe_http");
    expect(await call.textContent()).toContain(`${webUrl}/healthz`);
    expect(await call.textContent()).toContain("chat-edge");
    const result = traceItem(page, "tool_result", "probe_http");
    expect(await result.textContent()).toMatch(/succeeded/);
    expect(await result.textContent()).toContain("console-agent-test/1.0");
    expect(await result.textContent()).toMatch(/"status": 503/);
    expect(webHits).toBeGreaterThan(hitsBefore);

    // the deterministic report, rendered, names the evidence the probe returned
    const report = page.locator('li[data-kind="report"]');
    expect(await report.textContent()).toMatch(/no verifier runs/);
    await report.locator(".markdown h1", { hasText: "Diagnosis report" }).waitFor();
    const evidenceHeading = await report.locator(".markdown h3", { hasText: "probe_http on chat-edge" }).textContent();
    expect(evidenceHeading).toMatch(/probe_http on chat-edge — ok/);
    expect(await report.textContent()).toContain("console-agent-test/1.0");
    expect(await report.textContent()).toMatch(/status: 503/);
    expect(await page.locator('li[data-kind="done"]').textContent()).toMatch(/done.*fallback steps, no model/);
    expect(await page.getByTestId("chat-status").textContent()).toMatch(/^Finished \(done\)/);
    await page.context().close();
  });

  it("diagnoses with a model: the model's playbook choice, the tool call it asked for with its real result, the report and the verifier's flagged claim", async () => {
    current = script({
      route: { json: { is_oncall: true, skill_name: "network_diagnosis", confidence: 0.93, reason: "MODEL-ROUTE: an HTTP health check fails" } },
      plan: { json: { reason: "probe the URL from the edge", plan: ["probe the health URL", "compare with a TCP connect"] } },
      turns: [
        // the same call twice: the second is answered from the first result and does not run again
        { toolCalls: [{ name: "probe_http", arguments: { edge_id: "chat-model-edge", url: `${webUrl}/ready` } }, { name: "probe_http", arguments: { edge_id: "chat-model-edge", url: `${webUrl}/ready` } }] },
        { content: "## Summary\n\nThe endpoint answers **503** [2] from console-agent-test/1.0.\n\nThe database behind it is down." },
      ],
      verdict: { json: { verdict: "unsupported_claims", unsupported_claims: ["The database behind it is down."], notes: "no evidence about a database" } },
    });
    const before = model.requests.length;
    const hitsBefore = webHits;
    const page = await openConsole(browser, mm.url, await makeUser(mm, "olga", "operator"));
    await page.getByRole("link", { name: "Diagnose" }).click();
    await page.getByLabel("Alert or question").fill(`the health check of ${webUrl}/ready fails`);
    // With one edge online it is chosen already: the only online edge runs the host tools.
    expect(await page.getByLabel("Edge").inputValue()).toBe("chat-model-edge");
    await page.getByRole("button", { name: "Diagnose" }).click();
    await page.locator('ol.trace > li[data-kind="done"]').waitFor({ timeout: 45_000 });

    const order = await kinds(page);
    // The playbook read is guidance (I4): its own item, no step number, marked as not evidence.
    expect(order).toEqual(["session", "route", "plan", "guidance", "tool_call", "tool_result", "tool_call", "tool_result", "report", "verdict", "done"]);
    const guidance = page.locator('li[data-kind="guidance"]');
    expect(await guidance.textContent()).toContain("network_diagnosis");
    expect(await guidance.textContent()).toContain("not evidence");
    expect(await guidance.textContent()).not.toMatch(/step \d/);
    const route = page.locator('li[data-kind="route"]');
    expect(await route.textContent()).toContain("network_diagnosis");
    expect(await route.textContent()).toMatch(/by the model \(console-test-model\)/);
    expect(await route.textContent()).toContain("MODEL-ROUTE: an HTTP health check fails");
    expect(await page.locator('li[data-kind="plan"]').textContent()).toMatch(/the planner \(model\).*probe the health URL/);

    const call = traceItem(page, "tool_call", "probe_http").first();
    expect(await call.textContent()).toContain(`${webUrl}/ready`);
    expect(await call.textContent()).toContain("chat-model-edge");
    const result = traceItem(page, "tool_result", "probe_http").first();
    expect(await result.textContent()).toMatch(/succeeded/);
    expect(await result.textContent()).toContain("chat-model-edge");
    expect(await result.textContent()).toContain("console-agent-test/1.0");
    expect(await result.textContent()).not.toContain("answered from cache");
    // the tool's result envelope is shown as every result is: its output, not the envelope as JSON
    expect(await result.locator("pre.output").first().textContent()).toMatch(/^\{\n  "url": /);
    expect(await result.textContent()).not.toContain('"success"');
    const again = traceItem(page, "tool_result", "probe_http").nth(1);
    expect(await again.textContent()).toContain("answered from cache");
    expect(await again.textContent()).toContain("[answered from step 1");
    expect(webHits).toBe(hitsBefore + 1);
    // what the page shows is what the model was given back
    const exec = model.requests.slice(before).filter((r) => Array.isArray(r.body.tools) && r.body.tools.length > 0);
    expect(JSON.stringify(exec.at(-1)!.body.messages)).toContain("console-agent-test/1.0");

    const report = page.locator('li[data-kind="report"]');
    await report.locator(".markdown h2", { hasText: "Summary" }).waitFor();
    expect(await report.locator(".markdown strong").first().textContent()).toBe("503");
    const verdict = page.locator('li[data-kind="verdict"]');
    expect(await verdict.textContent()).toMatch(/unsupported claims/);
    expect(await verdict.getByTestId("unsupported-claims").locator("li").allTextContents()).toEqual(["The database behind it is down."]);
    expect(await verdict.textContent()).toContain("no evidence about a database");
    expect(await page.locator('li[data-kind="done"]').textContent()).toMatch(/Tokens: \d+ prompt/);
    await page.locator('li[data-kind="route"]').evaluate((el) => el.scrollIntoView({ block: "start" }));
    await screenshot(page, "chat");
    await page.context().close();
  });

  it("stops a running session: the stream ends, no done event arrives, and the form is ready again", async () => {
    // The planner never answers: the session waits there until the user stops it.
    current = script({ route: { json: { is_oncall: true, skill_name: "generic_oncall", confidence: 0.6, reason: "vague" } }, plan: { hang: true }, turns: [] });
    const page = await openConsole(browser, mm.url, mm.adminToken);
    await page.getByRole("link", { name: "Diagnose" }).click();
    await page.getByLabel("Alert or question").fill("something is wrong with prod");
    const stop = page.getByRole("button", { name: "Stop" });
    expect(await stop.isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Diagnose" }).click();
    await page.locator('ol.trace > li[data-kind="route"]').waitFor();
    expect(await stop.isDisabled()).toBe(false);
    expect(await page.getByTestId("chat-status").textContent()).toMatch(/^Running session ses_/);
    await stop.click();
    await expect.poll(() => page.getByTestId("chat-status").textContent(), LIVE).toMatch(/^Stopped: you ended session ses_\w+ before it finished/);
    expect(await page.getByRole("button", { name: "Diagnose" }).isDisabled()).toBe(false);
    expect(await stop.isDisabled()).toBe(true);
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await kinds(page)).toEqual(["session", "route"]);
    // the manager saw the caller go away: the session is not left running
    const id = /ses_\w+/.exec((await page.getByTestId("chat-status").textContent()) ?? "")![0];
    const status = async () => {
      const res = await mm.database.db.execute(`select status, error from agent_sessions where id = '${id}'` as never);
      return (((res as any).rows ?? res) as Array<{ status: string; error: string }>)[0];
    };
    expect(await waitFor(async () => (await status())?.status !== "running", 20_000)).toBe(true);
    expect(await status()).toEqual({ status: "failed", error: "cancelled: the caller went away" });
    await page.context().close();
  });

  it("picks the edge from the online list: with two edges online there is no automatic choice, the user must pick, and no CLI hint shows", async () => {
    const second = await startEdge(m, "chat-edge-2", { labels: { env: "test", slot: "2" } });
    try {
      const page = await openConsole(browser, m.url, m.adminToken);
      await page.getByRole("link", { name: "Diagnose" }).click();
      const options = () => page.locator("#chat-edge option").allTextContents();
      await expect.poll(options, LIVE).toEqual(["Choose an edge…", "chat-edge (env=test)", "chat-edge-2 (env=test,slot=2)"]);
      expect(await page.getByLabel("Edge").inputValue()).toBe("");
      expect(await page.locator("#chat-edge-help").textContent()).toContain("2 online in your reach");
      await page.getByLabel("Alert or question").fill(`ProbeFailed: ${webUrl}/healthz is failing`);
      await page.getByRole("button", { name: "Diagnose" }).click();
      await expect.poll(() => page.getByRole("alert").textContent(), LIVE).toBe("Choose the edge to diagnose: 2 edges are online.");
      expect(await page.locator("ol.trace").count()).toBe(0);
      await page.getByLabel("Edge").selectOption("chat-edge-2");
      await page.getByRole("button", { name: "Diagnose" }).click();
      await page.locator('ol.trace > li[data-kind="done"]').waitFor({ timeout: 45_000 });
      expect(await traceItem(page, "tool_call", "probe_http").first().textContent()).toContain("chat-edge-2");
      expect(await page.locator("body").textContent()).not.toMatch(/--edge/);
      await page.context().close();
    } finally {
      await second.stop();
    }
  });
});
