/** What every CLI command shares: config loading, in-process core, RPC clients, output helpers. */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Command } from "commander";
import { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { AuditService } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ApprovalService } from "../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { IdentityService } from "../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { CredentialService } from "../../proto/gen/ongrid/v1/credential_service_pb.ts";
import { PlaybookService } from "../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { AgentService } from "../../proto/gen/ongrid/v1/agent_service_pb.ts";
import { readFileSync } from "node:fs";
import { OngridError } from "../../skill/errors.ts";
import { managerUrlProblem } from "../../skill/net.ts";
import { loadConfig } from "../config/load.ts";
import type { ManagerConfig } from "../config/schema.ts";
import { createLogger, openCore } from "../core.ts";
import { appendAdminRow, localActor, type AdminActor } from "../audit/admin.ts";

/** Options every data-reading command accepts. */
export interface CoreOptions {
  config?: string;
  data?: string;
  manager?: string;
  /** File holding the API token for --manager (also ONGRID_TOKEN_FILE; ONGRID_TOKEN holds the token itself). */
  tokenFile?: string;
  json?: boolean;
}

/** Adds --config, --data and --manager to a command. */
export function withCoreOptions(cmd: Command): Command {
  return cmd
    .option("--config <file>", "config file (YAML); also ONGRID_CONFIG")
    .option("--data <dir>", "data directory of the embedded database; also ONGRID_DATA_DIR (DATABASE_URL takes precedence)")
    .option("--manager <url>", "talk to a running manager over RPC instead of opening the database; also ONGRID_MANAGER_URL")
    .option("--token-file <file>", "file holding your API token for --manager; also ONGRID_TOKEN_FILE, or the token itself in ONGRID_TOKEN");
}

/** The configuration for a CLI command (logs quiet unless configured). */
export function cliConfig(opts: CoreOptions, overrides: Record<string, unknown> = {}): ManagerConfig {
  const env = { ONGRID_LOG_LEVEL: "warn", ...process.env };
  return loadConfig({ file: opts.config, env, overrides: { data_dir: opts.data, ...overrides } });
}

/**
 * The manager URL if the command should use RPC (--manager, else ONGRID_MANAGER_URL). It must be
 * an http:// or https:// URL, and https:// when server.require_tls is set (ONGRID_REQUIRE_TLS).
 */
export function managerUrl(opts: CoreOptions): string | undefined {
  const url = opts.manager ?? (process.env.ONGRID_MANAGER_URL || undefined);
  if (url === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return flagError("--manager", `"${url.slice(0, 200)}" is not a URL (e.g. https://ongrid.example:7070)`);
  }
  const problem = managerUrlProblem(parsed, () => (cliConfig(opts).server.require_tls ? "server.require_tls / ONGRID_REQUIRE_TLS" : undefined));
  if (problem) flagError("--manager", problem);
  return url;
}

/** The manager URL, or this host's manager at server.port (https when server.tls_cert is set) when none is given. */
export function managerUrlOrLocal(opts: CoreOptions): string {
  const url = managerUrl(opts);
  if (url !== undefined) return url;
  const { server } = cliConfig(opts);
  return `${server.tls_cert || server.require_tls ? "https" : "http"}://127.0.0.1:${server.port}`;
}

/** The API token for RPC calls: --token-file, else ONGRID_TOKEN, else ONGRID_TOKEN_FILE; undefined when none is given. */
export function apiToken(opts: Pick<CoreOptions, "tokenFile"> = {}): string | undefined {
  const file = opts.tokenFile ?? (process.env.ONGRID_TOKEN ? undefined : process.env.ONGRID_TOKEN_FILE || undefined);
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new OngridError("invalid_argument", `--token-file: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const token = text.trim();
    if (!token) throw new OngridError("invalid_argument", `--token-file: ${file} is empty`);
    return token;
  }
  return process.env.ONGRID_TOKEN?.trim() || undefined;
}

/** RPC clients for a running manager, sending the caller's API token. */
export function rpcClients(url: string, opts: Pick<CoreOptions, "tokenFile"> = {}) {
  const token = apiToken(opts);
  const transport = createConnectTransport({
    baseUrl: url,
    httpVersion: "1.1",
    interceptors: token ? [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] : [],
  });
  return {
    skills: createClient(SkillService, transport),
    audit: createClient(AuditService, transport),
    edges: createClient(EdgeService, transport),
    approvals: createClient(ApprovalService, transport),
    identity: createClient(IdentityService, transport),
    credentials: createClient(CredentialService, transport),
    playbooks: createClient(PlaybookService, transport),
    agent: createClient(AgentService, transport),
  };
}

/** The type of rpcClients' answer. */
export type RpcClients = ReturnType<typeof rpcClients>;

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

/**
 * An administrative action made on the manager's host without a token (the database itself): run
 * like withCore, and written to the audit chain as the local user (G6), whether it worked or not.
 */
export async function withAdminCore<T>(
  opts: CoreOptions,
  action: string,
  args: Record<string, unknown>,
  fn: (core: Awaited<ReturnType<typeof openCore>>, actor: AdminActor) => Promise<T>,
): Promise<T> {
  const actor = localActor();
  return withCore(opts, async (core) => {
    try {
      const out = await fn(core, actor);
      await appendAdminRow(core.audit, actor, action, args);
      return out;
    } catch (err) {
      const e = err as OngridError;
      await appendAdminRow(core.audit, actor, action, args, `${e.code ?? "internal"}: ${e.message}`).catch(() => undefined);
      throw err;
    }
  });
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
