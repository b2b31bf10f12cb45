/** What every CLI command shares: config loading, in-process core, RPC clients, output helpers. */
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Command } from "commander";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { OngridError } from "../../skill/errors.ts";
import { loadConfig } from "../config/load.ts";
import type { ManagerConfig } from "../config/schema.ts";
import { createLogger, openCore } from "../main.ts";

/** Options every data-reading command accepts. */
export interface CoreOptions {
  config?: string;
  data?: string;
  manager?: string;
  json?: boolean;
}

/** Adds --config, --data and --manager to a command. */
export function withCoreOptions(cmd: Command): Command {
  return cmd
    .option("--config <file>", "config file (YAML); also ONGRID_CONFIG")
    .option("--data <dir>", "data directory of the embedded database; also ONGRID_DATA_DIR (DATABASE_URL takes precedence)")
    .option("--manager <url>", "talk to a running manager over RPC instead of opening the database; also ONGRID_MANAGER_URL");
}

/** The configuration for a CLI command (logs quiet unless configured). */
export function cliConfig(opts: CoreOptions, overrides: Record<string, unknown> = {}): ManagerConfig {
  const env = { ONGRID_LOG_LEVEL: "warn", ...process.env };
  return loadConfig({ file: opts.config, env, overrides: { data_dir: opts.data, ...overrides } });
}

/** The manager URL if the command should use RPC. */
export function managerUrl(opts: CoreOptions): string | undefined {
  return opts.manager ?? (process.env.ONGRID_MANAGER_URL || undefined);
}

/** RPC clients for a running manager. */
export function rpcClients(url: string): { skills: Client<typeof SkillService>; audit: Client<typeof AuditService>; edges: Client<typeof EdgeService> } {
  const transport = createConnectTransport({ baseUrl: url, httpVersion: "1.1" });
  return { skills: createClient(SkillService, transport), audit: createClient(AuditService, transport), edges: createClient(EdgeService, transport) };
}

/** Opens the database and registry in process for the duration of fn. */
export async function withCore<T>(opts: CoreOptions, fn: (core: Awaited<ReturnType<typeof openCore>>) => Promise<T>): Promise<T> {
  const config = cliConfig(opts);
  const core = await openCore(config, createLogger(config.log_level));
  try {
    return await fn(core);
  } finally {
    await core.audit.flush();
    await core.database.close();
  }
}

/** Prints rows as an aligned text table. */
export function printTable(rows: Array<Record<string, string>>, columns: string[]): void {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  console.log(line(columns.map((c) => c.toUpperCase())));
  for (const r of rows) console.log(line(columns.map((c) => r[c] ?? "")));
}

/** Refuses a command-line value, naming the flag (exit code 2). */
export function flagError(flag: string, message: string): never {
  throw new OngridError("invalid_argument", `${flag}: ${message}`);
}
