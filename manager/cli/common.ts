/** What every CLI command shares: config loading, in-process core, RPC clients, output helpers. */
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import type { Command } from "commander";
import type { SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import type { AuditService } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import type { EdgeService } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import type { ApprovalService } from "../../proto/gen/ongrid/v1/approval_service_pb.ts";
import type { IdentityService } from "../../proto/gen/ongrid/v1/identity_service_pb.ts";
import type { CredentialService } from "../../proto/gen/ongrid/v1/credential_service_pb.ts";
import type { PlaybookService } from "../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import type { AgentService } from "../../proto/gen/ongrid/v1/agent_service_pb.ts";
import { readFileSync } from "node:fs";
import { OngridError } from "../../skill/errors.ts";
import { managerUrlProblem } from "../../skill/net.ts";
import { dirname, join } from "node:path";
import { loadConfig } from "../config/load.ts";
import type { ManagerConfig } from "../config/schema.ts";
import type { openCore } from "../core.ts";
import type { AdminActor } from "../audit/admin.ts";
import { lockHolder } from "../db/lock.ts";

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
 * The manager URL if the command should use RPC, else undefined (open the database in process):
 * --manager, else ONGRID_MANAGER_URL, else the manager holding the data directory (its URL is in
 * the lock file, db/lock.ts). Every command decides RPC or in-process here. The URL must be http://
 * or https://, and https:// when server.require_tls is set (ONGRID_REQUIRE_TLS).
 */
export function managerUrl(opts: CoreOptions): string | undefined {
  const url = opts.manager ?? (process.env.ONGRID_MANAGER_URL || undefined) ?? runningManager(opts);
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

/** The data directory's lock file when the database is the embedded one (PostgreSQL takes no lock), else undefined. */
function lockFile(opts: CoreOptions): string | undefined {
  const config = cliConfig(opts);
  return config.database_url ? undefined : join(config.data_dir, "ongrid.lock");
}

/**
 * The URL of the live manager holding the data directory, which the CLI then talks to over RPC;
 * without an API token that is refused, saying how to pass one. Undefined when no manager holds it.
 */
function runningManager(opts: CoreOptions): string | undefined {
  const file = lockFile(opts);
  const holder = file ? lockHolder(file) : undefined;
  if (holder?.untrusted) {
    throw new OngridError(
      "failed_precondition",
      `the data directory ${dirname(file!)} is held by pid ${holder.pid}, and its lock file ${file} is not followed because ${holder.untrusted}: the CLI would send your token to the URL written there`,
      "name the manager yourself with --manager URL (or ONGRID_MANAGER_URL), and check who wrote that file",
    );
  }
  if (!holder?.url) return undefined;
  if (apiToken(opts) === undefined) {
    throw new OngridError(
      "unauthenticated",
      `the data directory ${dirname(file!)} is held by the ongrid manager at ${holder.url} (pid ${holder.pid}); the CLI works through it over RPC, which needs your API token`,
      "pass it in ONGRID_TOKEN, or in a file with --token-file FILE (or ONGRID_TOKEN_FILE); the manager printed the admin's on its first start. " +
        "No token at all? Stop the manager, run `ongrid tokens create --user admin` on this host, and start it again",
    );
  }
  return holder.url;
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
    skills: lazyClient<typeof SkillService>(transport, async () => (await import("../../proto/gen/ongrid/v1/skill_service_pb.ts")).SkillService),
    audit: lazyClient<typeof AuditService>(transport, async () => (await import("../../proto/gen/ongrid/v1/audit_service_pb.ts")).AuditService),
    edges: lazyClient<typeof EdgeService>(transport, async () => (await import("../../proto/gen/ongrid/v1/edge_service_pb.ts")).EdgeService),
    approvals: lazyClient<typeof ApprovalService>(transport, async () => (await import("../../proto/gen/ongrid/v1/approval_service_pb.ts")).ApprovalService),
    identity: lazyClient<typeof IdentityService>(transport, async () => (await import("../../proto/gen/ongrid/v1/identity_service_pb.ts")).IdentityService),
    credentials: lazyClient<typeof CredentialService>(transport, async () => (await import("../../proto/gen/ongrid/v1/credential_service_pb.ts")).CredentialService),
    playbooks: lazyClient<typeof PlaybookService>(transport, async () => (await import("../../proto/gen/ongrid/v1/playbook_service_pb.ts")).PlaybookService),
    agent: lazyClient<typeof AgentService>(transport, async () => (await import("../../proto/gen/ongrid/v1/agent_service_pb.ts")).AgentService),
  };
}

/**
 * A client whose service descriptor loads on its first call: decoding every service's descriptor
 * is most of a command's start, and a command uses one or two. A call answers a promise (unary)
 * that can also be iterated (a server stream: `for await (const m of client.watch(...))`).
 */
function lazyClient<S extends DescService>(transport: Transport, service: () => Promise<S>): Client<S> {
  let client: Promise<Client<S>> | undefined;
  return new Proxy({} as Client<S>, {
    get(_target, method) {
      if (typeof method !== "string" || method === "then") return undefined;
      return (...args: unknown[]) => {
        client ??= service().then((s) => createClient(s, transport));
        const call = client.then((c) => (c[method as keyof Client<S>] as (...a: unknown[]) => unknown)(...args));
        return Object.assign(call, {
          async *[Symbol.asyncIterator]() {
            yield* (await call) as AsyncIterable<unknown>;
          },
        });
      };
    },
  });
}

/** The type of rpcClients' answer. */
export type RpcClients = ReturnType<typeof rpcClients>;

/** Opens the database and registry in process for the duration of fn. */
export async function withCore<T>(opts: CoreOptions, fn: (core: Awaited<ReturnType<typeof openCore>>) => Promise<T>): Promise<T> {
  const config = cliConfig(opts);
  // Reached only when managerUrl found no manager: a command with an RPC path asks it first.
  const file = lockFile(opts);
  const holder = file ? lockHolder(file) : undefined;
  if (holder?.url) {
    throw new OngridError(
      "failed_precondition",
      `this command opens the database itself and cannot be served over RPC, and the data directory ${dirname(file!)} is held by the ongrid manager at ${holder.url} (pid ${holder.pid})`,
      "stop the manager and run it again, or point it at another data directory with --data",
    );
  }
  const { createLogger, openCore } = await import("../core.ts");
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
  const { appendAdminRow, localActor } = await import("../audit/admin.ts");
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
