/** Starts a real manager in this process on a free loopback port with its own PGlite data dir. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../manager/config/load.ts";
import type { Logger } from "pino";
import { startManager, type Manager } from "../../manager/main.ts";
import { createLogger } from "../../manager/core.ts";

/** A manager for one test file, plus its data directory. */
export interface TestManager extends Manager {
  dataDir: string;
  /** A token of the "admin" user (the bootstrap token on a fresh data dir, else a new one). */
  adminToken: string;
  stop(): Promise<void>;
}

/**
 * Boots a manager; overrides are dotted config keys (e.g. "skills.web_search.url"); `keepDir` reuses a data dir and leaves it;
 * `opts.log` replaces the silent logger (e.g. one writing to a buffer at level trace).
 */
export async function bootManager(overrides: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}, keepDir?: string, opts: { log?: Logger } = {}): Promise<TestManager> {
  const dataDir = keepDir ?? mkdtempSync(join(tmpdir(), "ongrid-test-"));
  const config = loadConfig({ env, overrides: {
      "server.port": 0,
      data_dir: dataDir,
      // Tests send many refused requests from 127.0.0.1 (the authorisation matrix alone hundreds); the
      // per-address limit of failed authentications is tested where it is set (test/auth-rate-limit.e2e.test.ts).
      "server.auth_failures_per_minute": 100_000,
      // No scheduled topology refresh (its host_sockets calls would add audit rows and edge calls to
      // every test); test/topology.e2e.test.ts and manager/topology/topology.test.ts test the schedule.
      "topology.refresh_interval": "0s",
      ...overrides,
    },
  });
  const manager = await startManager(config, opts.log ?? createLogger("silent"));
  const adminToken = manager.bootstrapToken ?? (await manager.identity.createToken("admin", { description: "test" })).token;
  return {
    ...manager,
    dataDir,
    adminToken,
    async stop() {
      await manager.close();
      if (!keepDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
