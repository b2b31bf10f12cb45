/** `ongrid manager --local-edge`: enrolls this host and runs an edge agent in the manager's process, so host skills are there at once. */
import { hostname } from "node:os";
import { readFileSync } from "node:fs";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { dialForever } from "../../edge/tunnel/dialer.ts";
import { createEdgeRuntime } from "../../edge/runtime.ts";
import type { EdgeStore } from "./edge-store.ts";
import { edgeIdFromHostname } from "../../skill/identity.ts";
import { OngridError } from "../../skill/errors.ts";

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
  /** skills.exec.safe_run_as. */
  execSafeRunAs?: string;
  /** Pack directories of the local edge (packs.local_edge_dirs). */
  packDirs?: string[];
}

/**
 * Enrolls the local edge (a fresh token each start) and starts dialing. An edge id revoked by an
 * operator stays revoked: the local edge is then not started.
 */
export async function startLocalEdge(o: LocalEdgeOptions): Promise<{ id: string; stop(): void }> {
  const id = edgeIdFromHostname(hostname());
  if ((await o.edges.get(id))?.revokedAt) {
    throw new OngridError("failed_precondition", `the local edge "${id}" is revoked`, `enroll it again with \`ongrid edge enroll ${id}\`, or start without --local-edge`);
  }
  const { token } = await o.edges.enroll(id, { labels: { local: "true" } });
  const runtime = createEdgeRuntime({
    id,
    labels: { local: "true" },
    allowedRoots: o.allowedRoots,
    concurrency: 8,
    outputCapBytes: o.outputCapBytes,
    log: o.log.child({ local_edge: id }),
    packDirs: o.packDirs,
    execSafeRunAs: o.execSafeRunAs,
  });
  const stopWatching = runtime.packs?.watch();
  const stop = new AbortController();
  const transport = createGrpcTransport({ baseUrl: o.url, nodeOptions: o.tlsCert ? { ca: readFileSync(o.tlsCert) } : undefined });
  void dialForever(transport, token, runtime, { baseMs: 250, maxMs: 5000 }, stop.signal);
  return {
    id,
    stop: () => {
      stopWatching?.();
      stop.abort();
    },
  };
}
