/** `ongrid manager --local-edge`: enrolls this host and runs an edge agent in the manager's process, so host skills are there at once. */
import { hostname, platform, arch } from "node:os";
import { readFileSync } from "node:fs";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { createRegistry } from "../skill/registry.ts";
import { EDGE_BUILTINS } from "../edge/builtin/index.ts";
import { dialForever } from "../edge/tunnel/dialer.ts";
import { EDGE_VERSION } from "../edge/main.ts";
import type { EdgeStore } from "./edges/store.ts";

/** What the local edge needs from the running manager. */
export interface LocalEdgeOptions {
  url: string;
  edges: EdgeStore;
  log: Logger;
  /** Directories tail_file and host_files may read. */
  allowedRoots: string[];
  outputCapBytes: number;
  /** PEM file the manager serves (trusted by the local edge when the manager uses TLS). */
  tlsCert?: string;
}

/** A lower-case edge id from this host's name. */
export function localEdgeId(): string {
  const id = hostname().toLowerCase().replace(/[^a-z0-9.-]/g, "-").replace(/^[-.]+|[-.]+$/g, "").slice(0, 63);
  return id || "local";
}

/** Enrolls (or re-enrolls) the local edge and starts dialing; resolves with its id and a stop function. */
export async function startLocalEdge(o: LocalEdgeOptions): Promise<{ id: string; stop(): void }> {
  const id = localEdgeId();
  const { token } = await o.edges.enroll(id);
  const log = o.log.child({ local_edge: id });
  const registry = createRegistry({ log });
  for (const def of EDGE_BUILTINS) registry.register(def);
  const stop = new AbortController();
  const transport = createGrpcTransport({ baseUrl: o.url, nodeOptions: o.tlsCert ? { ca: readFileSync(o.tlsCert) } : undefined });
  void dialForever(
    transport,
    token,
    {
      id,
      version: EDGE_VERSION,
      hostname: hostname(),
      os: `${platform()}/${arch()}`,
      labels: { local: "true" },
      registry,
      settings: { tail_file: { allowed_roots: o.allowedRoots }, host_files: { allowed_roots: o.allowedRoots } },
      concurrency: 8,
      outputCapBytes: o.outputCapBytes,
      log,
    },
    { baseMs: 250, maxMs: 5000 },
    stop.signal,
  );
  return { id, stop: () => stop.abort() };
}
