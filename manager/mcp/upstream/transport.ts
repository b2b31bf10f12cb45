/**
 * The SDK client transport of one connection to an upstream: StdioClientTransport for a command
 * (its stderr read line by line into the log, cleaned; its exit noted; its process tree stopped on
 * close), StreamableHTTPClientTransport for a URL (headers with credentials resolved; the session
 * ended on close).
 */
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import type { Logger } from "pino";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { InjectedSecret } from "../../../skill/credential.ts";
import { descendants, isRunning, processRef, signalAll, type ProcessRef } from "./process-tree.ts";
import { cleanText } from "./secrets.ts";
import type { UpstreamTransportSpec } from "./spec.ts";

/** How many of the server's last stderr lines a failure report carries. */
const STDERR_LINES = 5;
/** How long an HTTP upstream gets to acknowledge the end of its session. */
const TERMINATE_MS = 2000;

/** One opened transport and what the supervisor asks of it. */
export interface UpstreamLink {
  transport: Transport;
  /** The stdio server's pid while it runs. */
  pid(): number | undefined;
  /** Why the stdio server ended ("exited with code 1", "was killed by SIGKILL"), with its last stderr lines; undefined while it runs. */
  ended(): string | undefined;
  /** Notes the processes the server has started, so that they are stopped even when it dies first. */
  noteProcesses(): void;
  /** Ends the connection: the session (HTTP) or the process and everything it started (stdio). */
  close(): Promise<void>;
}

/** A StdioClientTransport that notes how its process exited (the SDK reports only that the pipe closed). */
class WatchedStdioTransport extends StdioClientTransport {
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  override async start(): Promise<void> {
    await super.start();
    // The SDK keeps the child private; without it, a failure report says only that the connection closed.
    const child = (this as unknown as { _process?: ChildProcess })._process;
    child?.once("exit", (code, signal) => {
      this.exit = { code, signal };
    });
  }
}

/**
 * Opens (does not start: Client.connect does) the transport for `spec` with its env or headers
 * already resolved; `logSecrets` are the values no log line may carry.
 */
export function openLink(spec: UpstreamTransportSpec, values: Record<string, string>, logSecrets: readonly InjectedSecret[], log: Logger): UpstreamLink {
  if (spec.kind === "http") {
    const transport = new StreamableHTTPClientTransport(spec.url, { requestInit: { headers: values } });
    return {
      transport,
      pid: () => undefined,
      ended: () => undefined,
      noteProcesses() {},
      async close() {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([transport.terminateSession().catch(() => undefined), new Promise((r) => (timer = setTimeout(r, TERMINATE_MS)))]);
        clearTimeout(timer);
        await transport.close().catch(() => undefined);
      },
    };
  }
  const transport = new WatchedStdioTransport({ command: spec.command, args: spec.args, env: values, ...(spec.cwd ? { cwd: spec.cwd } : {}), stderr: "pipe" });
  const tail: string[] = [];
  // A PassThrough, there from construction (stderr: "pipe"), so nothing the server writes early is lost.
  const lines = createInterface({ input: transport.stderr as unknown as NodeJS.ReadableStream });
  lines.on("line", (line) => {
    const clean = cleanText(line, logSecrets, 500);
    tail.push(clean);
    if (tail.length > STDERR_LINES) tail.shift();
    log.debug({ stderr: clean }, "upstream MCP server wrote to stderr");
  });
  let tree: ProcessRef[] = [];
  const noteProcesses = () => {
    const pid = transport.pid;
    if (pid === null) return;
    const fresh = descendants(pid);
    const server = processRef(pid);
    // Keep what was noted before as well: a helper whose parent died is no one's descendant any more.
    const known = new Map([...tree, ...fresh, ...(server ? [server] : [])].map((r) => [`${r.pid}:${r.start}`, r]));
    tree = [...known.values()];
  };
  return {
    transport,
    pid: () => transport.pid ?? undefined,
    ended() {
      const exit = transport.exit;
      if (!exit) return undefined;
      const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
      return `its process ${how}${tail.length ? `; its last stderr: ${tail.join(" | ")}` : ""}`;
    },
    noteProcesses,
    async close() {
      noteProcesses();
      // The SDK closes stdin, waits, then sends SIGTERM and SIGKILL to the server itself.
      await transport.close().catch(() => undefined);
      const left = signalAll(tree, "SIGKILL");
      if (left.length) {
        log.info({ pids: left.map((r) => r.pid) }, "killed processes the upstream MCP server had started");
        // A signal is delivered, not obeyed at once: closed means gone.
        for (let i = 0; i < 100 && left.some(isRunning); i++) await new Promise((r) => setTimeout(r, 20));
      }
      lines.close();
    },
  };
}
