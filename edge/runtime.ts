/** What an edge agent is, assembled once: its builtin skills, identity and settings; used by the binary and by `--local-edge`. */
import { arch, hostname, platform } from "node:os";
import type { Logger } from "pino";
import { createPackSet, type PackSet } from "../skill/pack/loader.ts";
import { createRegistry } from "../skill/registry.ts";
import { EDGE_BUILTINS } from "./builtin/index.ts";
import type { EdgeRuntime } from "./tunnel/session.ts";

/** The edge agent's version, sent in hello. */
export const EDGE_VERSION = "0.1.0";

/** The choices that differ between one edge and another. */
export interface EdgeRuntimeOptions {
  id: string;
  labels: Record<string, string>;
  /** Directories tail_file and host_files may read. */
  allowedRoots: string[];
  concurrency: number;
  outputCapBytes: number;
  log: Logger;
  /** Directories of subprocess packs (E2), loaded as host skills; none by default. */
  packDirs?: string[];
  /** The user (user or user:group) read-only exec commands run as when the edge is root; "" for the edge's own user; nobody by default. */
  execSafeRunAs?: string;
  /** The proc filesystem host_load, host_processes and host_sockets read instead of /proc (a host's /proc mounted into a container; tests' fake one). */
  procRoot?: string;
}

/** A runtime and, when pack directories are configured, its packs. */
export type EdgeRuntimeWithPacks = EdgeRuntime & { packs?: PackSet };

/** Registers every builtin and the configured packs, and describes this host. */
export function createEdgeRuntime(o: EdgeRuntimeOptions): EdgeRuntimeWithPacks {
  const registry = createRegistry({ log: o.log });
  // Shipped with the binary and built eagerly by the manager and the tests: compiled on first use here.
  for (const def of EDGE_BUILTINS) registry.register(def, { compile: "lazy" });
  const listeners = new Set<() => void>();
  let packs: PackSet | undefined;
  if (o.packDirs?.length) {
    packs = createPackSet({
      dirs: o.packDirs,
      scope: "host",
      registry,
      log: o.log,
      onChange: () => {
        for (const l of listeners) l();
      },
    });
    packs.rescan();
  }
  return {
    packs,
    onSkillsChanged(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    id: o.id,
    version: EDGE_VERSION,
    hostname: hostname(),
    os: `${platform()}/${arch()}`,
    labels: o.labels,
    registry,
    settings: {
      tail_file: { allowed_roots: o.allowedRoots },
      host_files: { allowed_roots: o.allowedRoots },
      ...(o.execSafeRunAs !== undefined ? { exec: { safe_run_as: o.execSafeRunAs } } : {}),
      ...(o.procRoot ? { host_load: { proc_root: o.procRoot }, host_processes: { proc_root: o.procRoot }, host_sockets: { proc_root: o.procRoot } } : {}),
    },
    concurrency: o.concurrency,
    outputCapBytes: o.outputCapBytes,
    log: o.log,
  };
}
