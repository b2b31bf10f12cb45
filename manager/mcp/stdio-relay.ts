/**
 * `ongrid mcp` (M1): MCP over stdio for clients that launch a command. It relays JSON-RPC messages
 * between stdin/stdout and the manager's streamable HTTP endpoint, with the caller's API token: the
 * manager does everything (gate, approvals, audit); nothing is decided here.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** What the relay needs. */
export interface RelayOptions {
  /** The manager's MCP endpoint, e.g. http://127.0.0.1:7070/mcp. */
  endpoint: URL;
  token: string;
  /** Where the relay's own diagnostics go (never stdout: that is the protocol). */
  warn: (line: string) => void;
  stdin?: NodeJS.ReadableStream;
  stdout?: NodeJS.WritableStream;
}

/** Runs the relay until either side closes; resolves then. */
export async function runStdioRelay(o: RelayOptions): Promise<void> {
  const local = new StdioServerTransport(o.stdin as never, o.stdout as never);
  const remote = new StreamableHTTPClientTransport(o.endpoint, { requestInit: { headers: { authorization: `Bearer ${o.token}` } } });
  /** Ids of initialize requests in flight: their answer carries the protocol version the HTTP side must send. */
  const initializing = new Set<string | number>();
  let closing = false;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const close = async (why: string) => {
    if (closing) return;
    closing = true;
    if (why) o.warn(why);
    // DELETE the session on the manager, then stop reading stdin.
    await remote.terminateSession().catch(() => undefined);
    await remote.close().catch(() => undefined);
    await local.close().catch(() => undefined);
    done();
  };

  local.onmessage = (msg: JSONRPCMessage) => {
    if ("method" in msg && msg.method === "initialize" && "id" in msg) initializing.add(msg.id);
    remote.send(msg).catch((err: Error) => {
      // A request that cannot be delivered gets its error answer, so the client does not wait forever.
      if ("id" in msg && "method" in msg) void local.send({ jsonrpc: "2.0", id: msg.id, error: { code: -32000, message: `ongrid manager at ${o.endpoint.origin}: ${err.message}` } });
      else o.warn(`ongrid mcp: could not forward a message to the manager: ${err.message}`);
    });
  };
  remote.onmessage = (msg: JSONRPCMessage) => {
    if ("id" in msg && "result" in msg && initializing.delete(msg.id as string | number)) {
      const v = (msg.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof v === "string") remote.setProtocolVersion(v);
    }
    void local.send(msg);
  };
  local.onclose = () => void close("");
  remote.onerror = (err: Error) => o.warn(`ongrid mcp: ${err.message}`);
  local.onerror = (err: Error) => o.warn(`ongrid mcp: stdin: ${err.message}`);
  await remote.start();
  await local.start();
  await finished;
}
