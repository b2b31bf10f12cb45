/**
 * A small, real MCP server over streamable HTTP on 127.0.0.1 (the SDK's Server and its
 * StreamableHTTPServerTransport, stateless: one Server per request). Its one tool, whoami, says
 * which Authorization and X-Team headers it received; every call's headers are kept in `seen`.
 */
import { createServer, type Server as HttpServer } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

/** A running server. */
export interface McpHttpServer {
  port: number;
  url: string;
  /** Headers of each tools/call, in order. */
  seen: Array<{ authorization: string; team: string }>;
  /** Stops listening and drops every open connection. */
  stop(): Promise<void>;
}

/** Starts the server on `port` (0: a free one). */
export function startMcpHttpServer(port = 0): Promise<McpHttpServer> {
  const seen: McpHttpServer["seen"] = [];
  const http: HttpServer = createServer(async (req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    const server = new Server({ name: "http-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: "whoami", description: "Says which Authorization and X-Team headers it received. Use to check credentials.", inputSchema: { type: "object", properties: {} } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (_req, extra) => {
      const h = extra.requestInfo?.headers ?? {};
      const got = { authorization: String(h.authorization ?? ""), team: String(h["x-team"] ?? "") };
      seen.push(got);
      const [scheme, value] = got.authorization.split(" ");
      // Worded so that ongrid's redaction rules (which mask "Authorization: …") leave it be: only the scrub of an injected value can hide it.
      return { content: [{ type: "text", text: `scheme ${scheme}, value ${value}; x-team: ${got.team}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close().then(() => server.close()));
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  return new Promise((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, "127.0.0.1", () => {
      const bound = (http.address() as { port: number }).port;
      resolve({
        port: bound,
        url: `http://127.0.0.1:${bound}/mcp`,
        seen,
        stop: () =>
          new Promise<void>((done) => {
            http.close(() => done());
            http.closeAllConnections();
          }),
      });
    });
  });
}
