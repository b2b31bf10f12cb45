/** The manager as a process of its own (`bin/ongrid.mjs manager`), for benchmarks and the soak run. */
import { join } from "node:path";
import { start, waitForLine, type Child } from "./proc.ts";

/** A started manager: its process and URL. */
export interface ManagerProc {
  child: Child;
  url: string;
}

/** How to start it. */
export interface ManagerProcOptions {
  /** The project's root (where bin/ongrid.mjs is). */
  root: string;
  port: number;
  dataDir: string;
  /** PostgreSQL; PGlite in dataDir when undefined (a DATABASE_URL of the caller's environment is not passed on). */
  databaseUrl?: string;
  needFds: number;
  /** Writes a V8 CPU profile of the manager into this directory (node --cpu-prof). */
  cpuProfDir?: string;
  /** A fresh data store: read the admin token the first start prints once. */
  firstStart?: boolean;
  listenTimeoutMs?: number;
  tokenTimeoutMs?: number;
  /** More environment for the manager (configuration by ONGRID_* variables). */
  env?: NodeJS.ProcessEnv;
}

/** Starts the manager, waits until it listens on loopback and, on a first start, reads its admin token. */
export async function startManagerProcess(o: ManagerProcOptions): Promise<ManagerProc & { adminToken?: string }> {
  // A simulated fleet dials from one address: no per-address connection cap (server.max_connections_per_address).
  // No scheduled topology refresh either: it would ask every simulated edge in the middle of a measurement.
  const env: NodeJS.ProcessEnv = { ...process.env, ONGRID_LOG_LEVEL: "warn", ONGRID_MAX_CONNECTIONS_PER_ADDRESS: "0", ONGRID_TOPOLOGY_REFRESH_INTERVAL: "0s", ...o.env };
  delete env.DATABASE_URL;
  if (o.databaseUrl) env.DATABASE_URL = o.databaseUrl;
  const profile = o.cpuProfDir ? ["--cpu-prof", `--cpu-prof-dir=${o.cpuProfDir}`] : [];
  const child = start("manager", process.execPath, [...profile, join(o.root, "bin", "ongrid.mjs"), "manager", "--port", String(o.port), "--data", o.dataDir], { cwd: o.root, env, needFds: o.needFds });
  const url = (await waitForLine(child, /listening on (https?:\/\/\S+)/, o.listenTimeoutMs ?? 60_000))[1]!;
  if (!/^http:\/\/(127\.0\.0\.1|\[::1\]|localhost):/.test(url)) throw new Error(`the manager is not on loopback: ${url}`);
  // A fresh manager prints its admin's token once, on the line after this notice.
  const adminToken = o.firstStart ? (await waitForLine(child, /first start: created user "admin"[^\n]*\n(ogu_\S+)\n/, o.tokenTimeoutMs ?? 10_000))[1] : undefined;
  return { child, url, adminToken };
}
