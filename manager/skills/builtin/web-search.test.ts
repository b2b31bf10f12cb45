import http from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../../skill/registry.ts";
import { validateParams } from "../../../skill/validate.ts";
import { runSkill } from "../../../skill/run.ts";
import { lintRegistry } from "../../../skill/lint.ts";
import webSearch from "./web-search.ts";
import { MANAGER_BUILTINS } from "./index.ts";
import { startFakeSearx, type FakeSearx } from "../../../test/support/searxng.ts";

const skill = buildSkill(webSearch);
const log = pino({ level: "silent" });
let searx: FakeSearx;

beforeAll(async () => {
  searx = await startFakeSearx();
});
afterAll(() => searx.close());

function run(params: Record<string, unknown>, settings: Record<string, unknown>, timeoutMs = 5000) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs, outputCapBytes: 65536, log, settings });
}

describe("web_search", () => {
  it("passes the query, category and language to the endpoint and shapes the results", async () => {
    const r = await run({ query: "kernel oom killer", limit: 2, language: "de-DE", time_range: "week" }, { url: searx.url });
    expect(r.success).toBe(true);
    expect(r.output).toEqual({
      query: "kernel oom killer",
      returned: 2,
      results: [
        { title: "Result 1 for kernel oom killer", url: "https://example.invalid/1", snippet: "snippet 1", engine: "fake" },
        { title: "Result 2 for kernel oom killer", url: "https://example.invalid/2", snippet: "snippet 2", engine: "fake" },
      ],
    });
    const q = searx.queries.at(-1)!;
    expect(Object.fromEntries(q)).toEqual({ q: "kernel oom killer", format: "json", categories: "general", language: "de-DE", time_range: "week" });
  });

  it("caps results at skills.web_search.max_results", async () => {
    const r = await run({ query: "x", limit: 50 }, { url: searx.url, max_results: 1 });
    expect((r.output as { returned: number }).returned).toBe(1);
  });

  it("fails with an actionable error for each upstream problem", async () => {
    const notConfigured = await run({ query: "x" }, { url: "" });
    expect(notConfigured.error).toMatchObject({ code: "not_configured" });
    expect(notConfigured.error!.hint).toMatch(/skills\.web_search\.url/);

    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = await run({ query: "x" }, { url: `http://127.0.0.1:${deadPort}/search` });
    expect(refused.error).toMatchObject({ code: "upstream_unavailable" });
    expect(refused.error!.message).toMatch(/ECONNREFUSED/);

    searx.respond(() => ({ status: 403, body: "forbidden" }));
    expect((await run({ query: "x" }, { url: searx.url })).error).toMatchObject({ code: "upstream_refused" });
    searx.respond(() => ({ status: 200, body: "<html>not json</html>" }));
    expect((await run({ query: "x" }, { url: searx.url })).error).toMatchObject({ code: "upstream_bad_response" });
    searx.respond(() => ({ status: 200, body: JSON.stringify({ nothing: true }) }));
    expect((await run({ query: "x" }, { url: searx.url })).error).toMatchObject({ code: "upstream_bad_response" });
    searx.respond(() => ({ status: 200, body: JSON.stringify({ results: [{ title: "x".repeat(3 * 1024 * 1024) }] }) }));
    const huge = await run({ query: "x" }, { url: searx.url });
    expect(huge.error).toMatchObject({ code: "upstream_bad_response", message: "search endpoint's answer exceeds 2097152 bytes" });
    searx.respond(() => ({ status: 502, body: "bad gateway" }));
    const e502 = await run({ query: "x" }, { url: searx.url });
    expect(e502.error).toMatchObject({ code: "upstream_error", message: "search endpoint answered HTTP 502" });
  });

  it("times out on a hanging endpoint with upstream_timeout", async () => {
    const hang = http.createServer(() => {
      /* never answers */
    });
    await new Promise<void>((r) => hang.listen(0, "127.0.0.1", r));
    try {
      const r = await run({ query: "x" }, { url: `http://127.0.0.1:${(hang.address() as AddressInfo).port}/`, timeout: "200ms" });
      expect(r.error).toMatchObject({ code: "upstream_timeout" });
    } finally {
      hang.closeAllConnections();
      await new Promise((r) => hang.close(r));
    }
  });
});

describe("manager builtins", () => {
  it("pass the ACI new-tool checklist with no error", () => {
    const errors = lintRegistry(MANAGER_BUILTINS).filter((f) => f.severity === "error");
    expect(errors).toEqual([]);
  });
});
