/** Starts a real manager in this process on a free loopback port with its own PGlite data dir. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../manager/config/load.ts";
import { createLogger, startManager, type Manager } from "../../manager/main.ts";

/** A manager for one test file, plus its data directory. */
export interface TestManager extends Manager {
  dataDir: string;
  /** A token of the "admin" user (the bootstrap token on a fresh data dir, else a new one). */
  adminToken: string;
  stop(): Promise<void>;
}

/** Boots a manager; overrides are dotted config keys (e.g. "skills.web_search.url"); `keepDir` reuses a data dir and leaves it. */
export async function bootManager(overrides: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}, keepDir?: string): Promise<TestManager> {
  const dataDir = keepDir ?? mkdtempSync(join(tmpdir(), "ongrid-test-"));
  const config = loadConfig({ env, overrides: { "server.port": 0, data_dir: dataDir, ...overrides } });
  const manager = await startManager(config, createLogger("silent"));
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
