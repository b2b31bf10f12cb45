/**
 * The supervisor against a real MCP server over streamable HTTP (test/support/mcp-http-server.ts):
 * headers from the credential store, and a server that goes away (seen by a call, or by the idle
 * ping) and comes back on the same port.
 */
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { OngridError } from "../../../skill/errors.ts";
import { createRegistry, type SkillRegistry } from "../../../skill/registry.ts";
import { runSkill } from "../../../skill/run.ts";
import type { ResultEnvelope } from "../../../skill/types.ts";
import { freeStablePort } from "../../../test/support/free-port.ts";
import { startMcpHttpServer, type McpHttpServer } from "../../../test/support/mcp-http-server.ts";
import { createConnection, type UpstreamConnection } from "./connection.ts";
import { upstreamSpec } from "./spec.ts";

const SECRET = "s3cr3t-http-value-5521";
const silent = pino({ level: "silent" });
const credentials = {
  async resolve(name: string) {
    if (name === "web_token") return SECRET;
    throw new OngridError("not_found", `credential "${name}" does not exist`);
  },
};
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function connect(url: string, pingIntervalMs?: number): { c: UpstreamConnection; registry: SkillRegistry } {
  const registry = createRegistry({ log: silent });
  const spec = upstreamSpec({ name: "web", url, credential: "web_token", headers: { "X-Team": "sre" }, classes: { whoami: "safe" }, trust_annotations: false, enabled: true });
  const c = createConnection({ spec, registry, credentials, log: silent, backoff: { initialMs: 50, maxMs: 200 }, pingIntervalMs });
  cleanup.push(() => c.close());
  c.start();
  return { c, registry };
}

const whoami = (registry: SkillRegistry): Promise<ResultEnvelope> => runSkill(registry.getOrThrow("mcp_web_whoami"), {}, { callId: "t", timeoutMs: 10_000, outputCapBytes: 65536, log: silent });

async function serve(port = 0): Promise<McpHttpServer> {
  const s = await startMcpHttpServer(port);
  cleanup.push(() => s.stop());
  return s;
}

describe("an upstream over streamable HTTP", () => {
  it("sends the credential as a bearer token and the plain headers; the value never comes back", async () => {
    const server = await serve();
    const { c, registry } = connect(server.url);
    await until("it is up", () => c.status().state === "up");
    expect(registry.getOrThrow("mcp_web_whoami").meta.class).toBe("safe");
    const res = await whoami(registry);
    expect(server.seen.at(-1)).toEqual({ authorization: `Bearer ${SECRET}`, team: "sre" });
    expect(res).toMatchObject({ success: true, output: "scheme Bearer, value [credential:web_token]; x-team: sre" });
  });

  it("a server that goes away: the next call answers unavailable and the upstream reconnects with backoff once the server is back", async () => {
    const port = await freeStablePort();
    const first = await serve(port);
    const { c, registry } = connect(first.url);
    await until("it is up", () => c.status().state === "up");
    await first.stop();
    const down = await whoami(registry);
    expect(down).toMatchObject({ success: false, error: { code: "unavailable" } });
    expect(down.error!.message).toMatch(/^the upstream MCP server "web" is unavailable: a request failed: /);
    await until("a reconnect has failed", () => c.status().failures >= 2);
    expect(c.status()).toMatchObject({ state: "down" });
    expect(c.status().reason).toMatch(/^it could not be started: .*ECONNREFUSED/);
    expect((await whoami(registry)).error?.code).toBe("unavailable");
    await serve(port);
    await until("it is up again", () => c.status().state === "up");
    expect(await whoami(registry)).toMatchObject({ success: true });
    expect(c.status().restarts).toBe(1);
  });

  it("an idle upstream that stops answering is found by its ping and marked down without any call", async () => {
    const port = await freeStablePort();
    const first = await serve(port);
    const { c } = connect(first.url, 100);
    await until("it is up", () => c.status().state === "up");
    await first.stop();
    await until("the ping found it gone", () => c.status().state === "down");
    expect(c.status().reason).toMatch(/it did not answer a ping|it could not be started/);
  });
});
