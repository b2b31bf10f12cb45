/** The edge agent `ongrid-edge`: dials out to the manager and runs host skills (compiled with `bun build --compile`). */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { isAbsolute } from "node:path";
import { Command, CommanderError } from "commander";
import pino from "pino";
import { parseDuration } from "../skill/duration.ts";
import { configureShellPolicy } from "../skill/risk/index.ts";
import { ExecAllowError } from "../skill/risk/allow.ts";
import { OngridError } from "../skill/errors.ts";
import { parseBoolean } from "../skill/boolean.ts";
import { isLoopbackHost, managerUrlProblem } from "../skill/net.ts";
import { EDGE_VERSION, createEdgeRuntime } from "./runtime.ts";
import { EDGE_ID_PATTERN, edgeIdFromHostname, labelProblem } from "../skill/identity.ts";

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];
import { dialForever } from "./tunnel/dialer.ts";
import { createDialPlan } from "./tunnel/targets.ts";

export { EDGE_VERSION };


function bad(flag: string, message: string): never {
  throw new OngridError("invalid_argument", `${flag}: ${message}`);
}

function parseLabels(values: string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf("=");
    if (eq <= 0) bad("--label", `"${v}" must be key=value`);
    labels[v.slice(0, eq).trim()] = v.slice(eq + 1).trim();
  }
  const problem = labelProblem(labels);
  if (problem) bad("--label", problem);
  return labels;
}

const list = (v: string, acc: string[]) => [...acc, v];

/** A boolean environment variable (parseBoolean's words; unset or empty: false); anything else is refused, naming it. */
function envFlag(name: string): boolean {
  const v = (process.env[name] ?? "").trim().toLowerCase();
  return v === "" ? false : (parseBoolean(v) ?? bad(name, `"${v.slice(0, 20)}" must be true or false`));
}

const env = process.env;

/** Builds the command line. */
export function buildEdgeProgram(): Command {
  return new Command("ongrid-edge")
    .description("ongrid edge agent: dials out to the manager and runs host skills")
    .version(EDGE_VERSION)
    .option("--manager <urls>", "manager URL, e.g. https://ongrid.example:7070, or several separated by commas (the edge holds one tunnel, to one of them, and moves to another on loss; a name resolving to several addresses counts as several) (ONGRID_MANAGER_URL)", env.ONGRID_MANAGER_URL)
    .option("--manager-order <order>", "which manager an edge prefers: random (an order drawn once per edge: the fleet spreads over the managers) or first (as listed) (ONGRID_MANAGER_ORDER)", env.ONGRID_MANAGER_ORDER ?? "random")
    .option("--rebalance-interval <duration>", "how often an edge away from its preferred manager checks whether that one answers again and moves back, jittered ±50%; 0s: never (ONGRID_EDGE_REBALANCE_INTERVAL)", env.ONGRID_EDGE_REBALANCE_INTERVAL ?? "60s")
    .option("--token <token>", "edge token from `ongrid edge enroll ID` (ONGRID_EDGE_TOKEN)", env.ONGRID_EDGE_TOKEN)
    .option("--token-file <file>", "read the token from a file instead (ONGRID_EDGE_TOKEN_FILE)", env.ONGRID_EDGE_TOKEN_FILE)
    .option("--id <id>", "edge id (ONGRID_EDGE_ID; default: this host's name, lower-cased)", env.ONGRID_EDGE_ID)
    .option("--label <key=value>", "a label for selectors (repeatable; ONGRID_EDGE_LABELS=k=v,k=v)", list, env.ONGRID_EDGE_LABELS ? env.ONGRID_EDGE_LABELS.split(",") : [])
    .option("--allowed-root <dir>", "directory tail_file and host_files may read (repeatable; ONGRID_EDGE_ALLOWED_ROOTS=a:b)", list, env.ONGRID_EDGE_ALLOWED_ROOTS ? env.ONGRID_EDGE_ALLOWED_ROOTS.split(":") : [])
    .option("--exec-read-root <dir>", "directory whose files read-only exec commands may read without approval (repeatable; ONGRID_EXEC_READ_ROOTS=a:b; default /var/log; keep equal to the manager's skills.exec.read_roots)", list, env.ONGRID_EXEC_READ_ROOTS ? env.ONGRID_EXEC_READ_ROOTS.split(":") : [])
    .option("--exec-allow-file <file>", "exec allowlist file adding commands and options read-only exec calls may run without approval (ONGRID_EXEC_ALLOW_FILE; keep equal to the manager's skills.exec.allow_file)", env.ONGRID_EXEC_ALLOW_FILE)
    .option("--exec-safe-run-as <user[:group]>", "unprivileged user read-only exec commands run as when the edge runs as root; \"\" for the edge's own user (ONGRID_EXEC_SAFE_RUN_AS; default nobody)", env.ONGRID_EXEC_SAFE_RUN_AS)
    .option("--pack-dir <dir>", "directory of subprocess skill packs, or of one pack (repeatable; ONGRID_EDGE_PACK_DIRS=a:b)", list, env.ONGRID_EDGE_PACK_DIRS ? env.ONGRID_EDGE_PACK_DIRS.split(":") : [])
    .option("--proc-root <dir>", "proc filesystem host_load, host_processes and host_sockets read instead of /proc, e.g. the host's /proc mounted into a container (ONGRID_EDGE_PROC_ROOT)", env.ONGRID_EDGE_PROC_ROOT)
    .option("--no-watch-packs", "do not rescan packs on file changes (SIGHUP still rescans; ONGRID_EDGE_WATCH_PACKS=false)")
    .option("--concurrency <n>", "calls run at once; more wait (ONGRID_EDGE_CONCURRENCY)", env.ONGRID_EDGE_CONCURRENCY ?? "8")
    .option("--output-cap <bytes>", "outputs larger than this are truncated (ONGRID_OUTPUT_CAP_BYTES)", env.ONGRID_OUTPUT_CAP_BYTES ?? "65536")
    .option("--ca <file>", "CA certificate (PEM) to verify an https manager against (ONGRID_EDGE_CA_FILE)", env.ONGRID_EDGE_CA_FILE)
    .option("--require-tls", "refuse an http:// manager URL: the token and every call travel only over TLS (ONGRID_REQUIRE_TLS=true)")
    .option("--max-backoff <duration>", "longest wait between reconnection attempts (ONGRID_EDGE_MAX_BACKOFF)", env.ONGRID_EDGE_MAX_BACKOFF ?? "30s")
    .option("--log-level <level>", "trace|debug|info|warn|error (ONGRID_LOG_LEVEL)", env.ONGRID_LOG_LEVEL ?? "info")
    .action(async (o) => {
      if (!o.manager) bad("--manager", "is required (or set ONGRID_MANAGER_URL)");
      const given = String(o.manager).split(",").map((u) => u.trim());
      if (given.some((u) => !u)) bad("--manager", "has an empty entry in its comma-separated list");
      if (given.length > 32) bad("--manager", "at most 32 manager URLs");
      const urls = given.map((u) => {
        let url: URL;
        try {
          url = new URL(u);
        } catch {
          bad("--manager", `"${u}" is not a URL`);
        }
        const urlProblem = managerUrlProblem(url, () => (o.requireTls || envFlag("ONGRID_REQUIRE_TLS") ? "--require-tls / ONGRID_REQUIRE_TLS" : undefined));
        if (urlProblem) bad("--manager", given.length > 1 ? `"${u}": ${urlProblem}` : urlProblem);
        return url;
      });
      const url = urls[0];
      if (o.managerOrder !== "random" && o.managerOrder !== "first") bad("--manager-order", `must be random or first, not "${String(o.managerOrder).slice(0, 40)}"`);
      let rebalanceMs: number;
      try {
        rebalanceMs = parseDuration(o.rebalanceInterval);
      } catch (err) {
        bad("--rebalance-interval", (err as Error).message);
      }
      if (rebalanceMs !== 0 && rebalanceMs < 1000) bad("--rebalance-interval", "must be 0s (never) or at least 1s");
      let token: string = o.token ?? "";
      if (o.tokenFile) {
        try {
          token = readFileSync(o.tokenFile, "utf8").trim();
        } catch (err) {
          bad("--token-file", `cannot read: ${(err as Error).message}`);
        }
      }
      if (!token) bad("--token", "is required (or --token-file, ONGRID_EDGE_TOKEN)");
      const id = o.id ? String(o.id) : edgeIdFromHostname(hostname());
      if (!EDGE_ID_PATTERN.test(id)) bad("--id", `"${id}" is not a valid edge id (lower-case letters, digits, dots, dashes; 1-63)`);
      if (o.procRoot !== undefined && !isAbsolute(o.procRoot)) bad("--proc-root", `"${o.procRoot}" must be an absolute directory path`);
      if (!LOG_LEVELS.includes(o.logLevel)) bad("--log-level", `must be one of ${LOG_LEVELS.join(", ")}`);
      const concurrency = Number(o.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024) bad("--concurrency", "must be an integer from 1 to 1024");
      const outputCap = Number(o.outputCap);
      if (!Number.isInteger(outputCap) || outputCap < 256) bad("--output-cap", "must be an integer >= 256");
      let maxBackoff: number;
      try {
        maxBackoff = parseDuration(o.maxBackoff);
      } catch (err) {
        bad("--max-backoff", (err as Error).message);
      }
      let ca: Buffer | undefined;
      if (o.ca) {
        try {
          ca = readFileSync(o.ca);
        } catch (err) {
          bad("--ca", `cannot read: ${(err as Error).message}`);
        }
      }
      const log = pino({ level: o.logLevel, base: { svc: "ongrid-edge", edge: id } }, pino.destination(2));
      for (const u of urls) {
        if (u.protocol === "http:" && !isLoopbackHost(u.hostname)) {
          log.warn({ manager: u.origin }, "the manager URL is plaintext http://: the edge token and every call cross the network in clear; use https:// (--require-tls refuses plaintext)");
        }
      }
      const readRoots = (o.execReadRoot as string[]).filter(Boolean);
      const badRoot = readRoots.find((r) => !isAbsolute(r));
      if (badRoot) bad("--exec-read-root", `"${badRoot}" must be an absolute directory path`);
      try {
        configureShellPolicy({ readRoots, allowFile: o.execAllowFile || undefined });
      } catch (err) {
        if (err instanceof ExecAllowError) bad("--exec-allow-file", err.message);
        throw err;
      }
      const runtime = createEdgeRuntime({
        id,
        labels: parseLabels(o.label),
        allowedRoots: (o.allowedRoot as string[]).filter(Boolean),
        concurrency,
        outputCapBytes: outputCap,
        log,
        packDirs: (o.packDir as string[]).filter(Boolean),
        procRoot: o.procRoot || undefined,
        execSafeRunAs: o.execSafeRunAs,
      });
      const packs = runtime.packs;
      if (packs && o.watchPacks && env.ONGRID_EDGE_WATCH_PACKS !== "false") packs.watch();
      process.on("SIGHUP", () => {
        if (!packs) return log.info("SIGHUP: no pack directories configured (--pack-dir)");
        const r = packs.rescan();
        log.info({ loaded: r.loaded.length, problems: r.problems.length }, "SIGHUP: skill packs rescanned");
      });
      const plan = createDialPlan({ urls, order: o.managerOrder, rebalanceMs, ca });
      const stop = new AbortController();
      for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => stop.abort());
      console.log(`ongrid-edge ${EDGE_VERSION} "${id}" dialing ${urls.length > 1 ? urls.map((u) => u.origin).join(", ") : url.origin} (${runtime.registry.size} skills)`);
      await dialForever(plan, token, runtime, { baseMs: 250, maxMs: maxBackoff }, stop.signal);
      process.exit(0);
    });
}

/** Runs the agent; usage and config errors exit 2. */
export async function runEdge(argv: string[]): Promise<void> {
  const program = buildEdgeProgram().exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    console.error(`ongrid-edge: ${(err as Error).message}`);
    process.exitCode = err instanceof OngridError && err.code === "invalid_argument" ? 2 : 1;
  }
}

