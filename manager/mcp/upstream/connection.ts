/**
 * One upstream MCP server, supervised: connected with the SDK client, its tools registered as
 * manager skills, re-listed on notifications/tools/list_changed, pinged while idle; when it dies
 * (its process exits, its HTTP endpoint fails, it stops answering) its tools stay listed but
 * answer `unavailable` naming it and why, and it is started again after a bounded, jittered,
 * exponential backoff. Closing it stops the server and everything it started.
 */
import type { Logger } from "pino";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { SkillError } from "../../../skill/errors.ts";
import type { SkillRegistry } from "../../../skill/registry.ts";
import type { SkillClass } from "../../../skill/types.ts";
import type { CredentialStore } from "../../calls/credentials/store.ts";
import { MANAGER_VERSION } from "../../version.ts";
import { backoffDelay, DEFAULT_BACKOFF, type BackoffOptions } from "./backoff.ts";
import { listTools } from "./list-tools.ts";
import { createCall, type LiveConnection } from "./call.ts";
import { describeError, resolveValues } from "./secrets.ts";
import type { UpstreamSpec } from "./spec.ts";
import { createToolSet } from "./tool-set.ts";
import { openLink, type UpstreamLink } from "./transport.ts";

/** How long connecting (initialize and the first tools/list) may take: long enough for `npx -y` to fetch a server the first time. */
const CONNECT_TIMEOUT_MS = 60_000;
/** How often an idle connection is pinged, and how long a ping may take. */
const PING_INTERVAL_MS = 30_000;
const PING_TIMEOUT_MS = 10_000;
/** A connection up this long counts as healthy: the next failure starts the backoff from its first step. */
const STABLE_MS = 60_000;
/** Bursts of list_changed notifications are answered with one tools/list after this pause. */
const RELIST_PAUSE_MS = 100;

/** What an operator (and a test) may read of one upstream. */
export interface UpstreamStatus {
  name: string;
  transport: "stdio" | "http";
  /** The program's base name or the URL without its query. */
  target: string;
  state: "starting" | "up" | "down" | "closed";
  /** Why it is not up; "" while it is. */
  reason: string;
  /** The stdio server's pid while it runs. */
  pid?: number;
  /** Connections made after the first. */
  restarts: number;
  /** Failed starts and deaths since it was last up for a while. */
  failures: number;
  /** While down: when the next attempt is due (ms since the epoch). */
  retryAt?: number;
  tools: Array<{ key: string; tool: string; cls: SkillClass }>;
  /** Tools (and overrides) refused at the last listing, one line each. */
  problems: string[];
}

/** The supervisor of one upstream. */
export interface UpstreamConnection {
  /** Starts connecting in the background. */
  start(): void;
  status(): UpstreamStatus;
  /** Stops the server (and what it started) and removes its tools. */
  close(): Promise<void>;
}

/** What the supervisor needs; the timings are for tests. */
export interface ConnectionOptions {
  spec: UpstreamSpec;
  registry: SkillRegistry;
  credentials?: Pick<CredentialStore, "resolve">;
  log: Logger;
  backoff?: BackoffOptions;
  pingIntervalMs?: number;
  /** Told after a listing changed the registry. */
  onChange?: () => void;
}

/** Creates the supervisor; nothing runs until start(). */
export function createConnection(o: ConnectionOptions): UpstreamConnection {
  const { spec } = o;
  const log = o.log.child({ upstream: spec.name, transport: spec.transport.kind, target: spec.target });
  const connectTimeout = CONNECT_TIMEOUT_MS;
  let state: UpstreamStatus["state"] = "starting";
  let reason = "it is starting";
  let restarts = 0;
  let failures = 0;
  let retryAt: number | undefined;
  let problems: string[] = [];
  let live: LiveConnection | undefined;
  let opening: UpstreamLink | undefined;
  let closed = false;
  let running: Promise<void> | undefined;
  let wake = () => {};
  const call = createCall({ spec, live: () => (state === "up" ? live : undefined), unavailable: (detail) => unavailable(detail) });
  const tools = createToolSet({ spec, registry: o.registry, log, call });

  function unavailable(detail = reason): SkillError {
    const when = retryAt ? `ongrid starts it again in about ${Math.max(1, Math.ceil((retryAt - Date.now()) / 1000))} s (failure ${failures})` : "ongrid is connecting to it";
    return new SkillError("unavailable", `the upstream MCP server "${spec.name}" is unavailable: ${detail}`, `${when}; retry then, or ask an operator to look at the manager's log for upstream "${spec.name}"`);
  }

  /** Resolves the secrets, opens the transport, initializes and lists; throws with a cleaned reason. */
  async function connect(): Promise<{ l: LiveConnection; listed: Awaited<ReturnType<typeof listTools>> }> {
    const t = spec.transport;
    const resolved = t.kind === "stdio" ? await resolveValues("env", t.env, o.credentials) : await resolveValues("headers", t.headers, o.credentials);
    if (closed) throw new Error("the manager is shutting down");
    const link = openLink(t, resolved.values, resolved.all, log);
    opening = link;
    const client = new Client({ name: "ongrid", version: MANAGER_VERSION }, { capabilities: {} });
    let lose!: (why: string) => void;
    const lost = new Promise<string>((resolve) => (lose = resolve));
    const l: LiveConnection = { client, link, secrets: resolved.secrets, logSecrets: resolved.all, lost, lose };
    client.onclose = () => lose(link.ended() ?? "the connection closed");
    client.onerror = (err) => {
      log.debug({ err: describeError(err, resolved.all) }, "upstream MCP transport reported an error");
      // Over HTTP an error may be all there is to see of a server that went away: ask it.
      if (t.kind === "http") void check(l);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => relist(l));
    try {
      await client.connect(link.transport, { timeout: connectTimeout });
      const listed = await listTools(client, connectTimeout);
      link.noteProcesses();
      return { l, listed };
    } catch (err) {
      await link.close();
      throw new Error(link.ended() ?? describeError(err, resolved.all));
    } finally {
      opening = undefined;
    }
  }

  function sync(listed: Awaited<ReturnType<typeof listTools>>): void {
    for (const p of listed.problems) log.warn(`upstream MCP tools: ${p}`);
    const report = tools.sync(listed.tools);
    problems = [...listed.problems, ...report.problems];
    if (report.added.length || report.changed.length || report.removed.length) o.onChange?.();
  }

  /** Connections with a ping in flight. */
  const checking = new WeakSet<LiveConnection>();
  /** Pings the live connection; one that does not answer is lost. */
  async function check(l: LiveConnection): Promise<void> {
    if (l !== live || checking.has(l)) return;
    checking.add(l);
    try {
      await l.client.ping({ timeout: PING_TIMEOUT_MS });
      l.link.noteProcesses();
    } catch (err) {
      if (l === live) l.lose(`it did not answer a ping: ${describeError(err, l.logSecrets)}`);
    } finally {
      checking.delete(l);
    }
  }

  /** Per connection with a listing under way: whether another list_changed came meanwhile. */
  const relisting = new WeakMap<LiveConnection, { again: boolean }>();
  /** Answers list_changed: lists again (bursts coalesced) and brings the registry in line. */
  function relist(l: LiveConnection): void {
    if (l !== live) return;
    const running = relisting.get(l);
    if (running) {
      running.again = true;
      return;
    }
    const r = { again: false };
    relisting.set(l, r);
    void (async () => {
      do {
        r.again = false;
        await new Promise((done) => setTimeout(done, RELIST_PAUSE_MS));
        if (l !== live) break;
        try {
          const listed = await listTools(l.client, connectTimeout);
          if (l === live) sync(listed);
        } catch (err) {
          log.warn({ err: describeError(err, l.logSecrets) }, "upstream MCP server said its tools changed, but listing them failed");
          void check(l);
        }
      } while (r.again && l === live);
    })().finally(() => relisting.delete(l));
  }

  async function pause(): Promise<void> {
    const delay = backoffDelay(failures - 1, o.backoff ?? DEFAULT_BACKOFF);
    retryAt = Date.now() + delay;
    log.warn({ reason, failures, retry_in_ms: delay }, "upstream MCP server is down; its tools answer unavailable until it is back");
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    retryAt = undefined;
  }

  async function supervise(): Promise<void> {
    let connected = false;
    while (!closed) {
      let c: Awaited<ReturnType<typeof connect>>;
      try {
        c = await connect();
      } catch (err) {
        if (closed) break;
        state = "down";
        reason = `it could not be started: ${(err as Error).message}`;
        failures++;
        await pause();
        continue;
      }
      if (closed) {
        await c.l.link.close();
        break;
      }
      live = c.l;
      if (connected) restarts++;
      connected = true;
      state = "up";
      reason = "";
      sync(c.listed);
      const upAt = Date.now();
      log.info({ pid: c.l.link.pid(), tools: tools.entries().length, restarts }, "upstream MCP server up");
      const pinger = setInterval(() => void check(c.l), o.pingIntervalMs ?? PING_INTERVAL_MS);
      pinger.unref();
      const why = await c.l.lost;
      clearInterval(pinger);
      live = undefined;
      if (!closed) {
        state = "down";
        reason = why;
      }
      await c.l.link.close();
      if (closed) break;
      if (Date.now() - upAt >= STABLE_MS) failures = 0;
      failures++;
      await pause();
    }
  }

  return {
    start() {
      running ??= supervise().catch((err) => log.error({ err: (err as Error).message }, "upstream MCP supervisor failed"));
    },
    status: () => ({
      name: spec.name,
      transport: spec.transport.kind,
      target: spec.target,
      state,
      reason,
      ...(live?.link.pid() !== undefined ? { pid: live.link.pid() } : {}),
      restarts,
      failures,
      ...(retryAt !== undefined ? { retryAt } : {}),
      tools: tools.entries(),
      problems,
    }),
    async close() {
      if (closed) return;
      closed = true;
      state = "closed";
      reason = "the manager is shutting down";
      wake();
      live?.lose(reason);
      await opening?.close();
      await running;
      tools.clear();
    },
  };
}
