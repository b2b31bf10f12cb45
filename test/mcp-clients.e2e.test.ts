/**
 * ongrid's MCP endpoint from other clients: the SDK client launching `ongrid mcp` over stdio (as
 * Claude Desktop, Cursor or VS Code do), and the MCP Inspector's CLI over streamable HTTP.
 */
import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "./support/cli.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { makeUser } from "./support/auth.ts";

let m: TestManager;
const edges: TestEdge[] = [];
const INSPECTOR = resolve(ROOT, "node_modules/@modelcontextprotocol/inspector-cli/build/index.js");

/** Runs the Inspector's CLI mode to completion. */
function inspector(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, reject) => {
    // Run from its build directory: the CLI checks for its package.json relative to the working
    // directory but imports it relative to itself (inspector-cli 1.0.3), so only there do both agree.
    const child = spawn(process.execPath, [INSPECTOR, ...args], { cwd: dirname(INSPECTOR), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => done({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  m = await bootManager();
  edges.push(await startEdge(m, "stdio-edge"));
}, 60_000);
afterAll(async () => {
  for (const e of edges) await e.stop();
  await m?.stop();
});

describe("MCP clients from other ecosystems", () => {
  it("the SDK client launching `ongrid mcp` lists, calls (audited in its MCP session) and hears list_changed over stdio", async () => {
    const token = await makeUser(m, "stdio-op", "operator");
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [resolve(ROOT, "bin/ongrid.mjs"), "mcp", "--manager", m.url],
      env: { ...(process.env as Record<string, string>), ONGRID_TOKEN: token },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (d) => (stderr += d));
    const client = new Client({ name: "stdio-test", version: "0.0.1" });
    await client.connect(transport);
    try {
      expect(client.getServerVersion()?.name).toBe("ongrid");
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain("host_load");
      const r = (await client.callTool({ name: "host_load", arguments: { edge_id: "stdio-edge" } })) as CallToolResult;
      expect(r.isError, stderr).toBe(false);
      expect((r.structuredContent as { success: boolean }).success).toBe(true);
      await m.audit.flush();
      const row = (await m.audit.list({ toolName: "host_load", deviceId: "stdio-edge" } as never)).find((x) => x.onBehalfOf === "stdio-op");
      expect(row?.sessionId).toMatch(/^mcp_[0-9a-f]{32}$/);
      let changed = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changed++;
      });
      edges.push(await startEdge(m, "stdio-edge-2"));
      expect(await waitFor(() => changed > 0, 15_000), stderr).toBe(true);
    } finally {
      await client.close();
    }
  });

  it("`ongrid mcp` without a token says how to pass one", async () => {
    const child = spawn(process.execPath, [resolve(ROOT, "bin/ongrid.mjs"), "mcp", "--manager", m.url], { cwd: ROOT, env: { ...process.env, ONGRID_TOKEN: "", ONGRID_TOKEN_FILE: "" }, stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise<number | null>((r) => child.on("close", r));
    expect(code).toBe(1);
    expect(stderr).toMatch(/ongrid mcp needs your API token.*ONGRID_TOKEN/s);
  });

  it("the MCP Inspector's CLI lists and calls a tool over streamable HTTP", async () => {
    const token = await makeUser(m, "inspector-op", "operator");
    const common = [`${m.url}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${token}`];
    let r = await inspector([...common, "--method", "tools/list"]);
    expect(r.code, r.stderr).toBe(0);
    const names = (JSON.parse(r.stdout) as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
    expect(names).toContain("probe_tcp");
    const port = new URL(m.url).port;
    r = await inspector([...common, "--method", "tools/call", "--tool-name", "probe_tcp", "--tool-arg", "edge_id=stdio-edge", "--tool-arg", "host=127.0.0.1", "--tool-arg", `port=${port}`]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as CallToolResult;
    expect(out.isError).toBe(false);
    expect((out.structuredContent as { output: { connected: boolean } }).output.connected).toBe(true);
    r = await inspector([`${m.url}/mcp`, "--transport", "http", "--method", "tools/list"]);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(/401|Unauthorized|unauthenticated/i);
  });
});
