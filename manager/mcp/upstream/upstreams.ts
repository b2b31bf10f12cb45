/**
 * The upstream MCP servers of mcp.upstreams (M3), each supervised by its own connection: their
 * tools are manager skills like any other, so every call goes through the dispatcher (gate,
 * approvals, audit, redaction, truncation). Connecting starts when the manager serves (the CLI,
 * which opens the core to run skills in process, never starts one).
 */
import type { Logger } from "pino";
import type { SkillRegistry } from "../../../skill/registry.ts";
import type { CredentialStore } from "../../calls/credentials/store.ts";
import type { ManagerConfig } from "../../config/schema.ts";
import type { BackoffOptions } from "./backoff.ts";
import { createConnection, type UpstreamConnection, type UpstreamStatus } from "./connection.ts";
import { upstreamSpecs } from "./spec.ts";

export type { UpstreamStatus } from "./connection.ts";

/** Every configured upstream. */
export interface UpstreamSet {
  /** Starts connecting to every enabled upstream (in the background); returns the function that closes them all. */
  start(): () => Promise<void>;
  /** One entry per enabled upstream, in config order. */
  status(): UpstreamStatus[];
  /** Stops every upstream (and the processes they started) and removes their tools. */
  close(): Promise<void>;
  /** Calls `listener` whenever an upstream's tools changed the registry; returns the function that stops it. */
  onChange(listener: () => void): () => void;
}

/** What createUpstreams needs; backoff and pingIntervalMs are for tests. */
export interface UpstreamsOptions {
  config: Pick<ManagerConfig, "mcp">;
  registry: SkillRegistry;
  credentials?: Pick<CredentialStore, "resolve">;
  log: Logger;
  backoff?: BackoffOptions;
  pingIntervalMs?: number;
}

/** Creates the set; nothing connects until start(). */
export function createUpstreams(o: UpstreamsOptions): UpstreamSet {
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of listeners) {
      try {
        l();
      } catch (err) {
        o.log.warn({ err: (err as Error).message }, "an upstream tools listener failed");
      }
    }
  };
  const connections: UpstreamConnection[] = upstreamSpecs(o.config.mcp?.upstreams ?? []).map((spec) =>
    createConnection({ spec, registry: o.registry, credentials: o.credentials, log: o.log, backoff: o.backoff, pingIntervalMs: o.pingIntervalMs, onChange: changed }),
  );
  const close = async () => {
    await Promise.allSettled(connections.map((c) => c.close()));
  };
  return {
    start() {
      for (const c of connections) c.start();
      if (connections.length) o.log.info({ upstreams: connections.map((c) => c.status().name) }, "connecting to upstream MCP servers");
      return close;
    },
    status: () => connections.map((c) => c.status()),
    close,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
