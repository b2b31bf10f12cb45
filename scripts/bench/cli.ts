/**
 * The CLI start-up benchmark: how long `ongrid` takes from spawn to exit, next to `node -e 0`
 * measured in the same run. Targets: `ongrid --version` ≤ 4× `node -e 0`, and
 * `ongrid skills list --manager URL` (against a manager this bench starts) ≤ 6×, both from the
 * build (dist/cli, scripts/build-cli.mjs). For comparison, the same commands from source (tsx,
 * ONGRID_FROM_SOURCE=1), and the manager's own start from the build: spawn to its "listening"
 * line, on an empty data directory (migrations, first user) and restarted on the same one.
 * Prints a table and writes JSON (scripts/bench/results/cli.json).
 *
 *   npm run bench:cli [-- --runs 15] [--source-runs 3] [--manager-runs 5] [--out FILE]
 *
 * Runs go round-robin over the variants (one of each, again and again), so drift in the
 * machine's load hits them alike; each row gives the median, and the JSON the p90 too.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { infoRow, machineInfo, ratioRow, table, writeJson, type Row } from "./lib/report.ts";
import { median, quantile } from "./lib/stats.ts";
import { intFlag } from "./lib/flags.ts";

const HERE = import.meta.dirname;
const ROOT = resolve(HERE, "../..");
const BIN = join(ROOT, "bin", "ongrid.mjs");
const VERSION_TARGET = 4;
const LIST_TARGET = 6;
/** The token the manager prints on its first start, on a line of its own. */
const TOKEN = /first start: created user "admin"[^\n]*\n(ogu_\S+)\n/;

function flags() {
  const { values } = parseArgs({
    options: {
      runs: { type: "string", default: "15" },
      "source-runs": { type: "string", default: "3" },
      "manager-runs": { type: "string", default: "5" },
      out: { type: "string" },
    },
  });
  return {
    runs: intFlag("runs", values.runs!, 3),
    sourceRuns: intFlag("source-runs", values["source-runs"]!, 1),
    managerRuns: intFlag("manager-runs", values["manager-runs"]!, 1),
    out: resolve(values.out ?? join(HERE, "results", "cli.json")),
  };
}

/** Milliseconds from spawn to exit of one command, which must exit 0. */
function timeRun(args: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code === 0) resolvePromise(ms);
      else reject(new Error(`node ${args.join(" ")} exited ${code}: ${stderr}`));
    });
  });
}

/** Starts the manager from the build; resolves at its "listening" line with the time it took, its URL and (first start) token. */
function startManager(data: string): Promise<{ ms: number; url: string; token?: string; stop: () => Promise<void> }> {
  return new Promise((resolvePromise, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [BIN, "manager", "--port", "0", "--data", data], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: "", ONGRID_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let ms: number | undefined;
    const stop = () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once("exit", () => done());
        child.kill("SIGTERM");
      });
    child.stdout.on("data", (d) => {
      out += d;
      ms ??= /listening on/.test(out) ? Number(process.hrtime.bigint() - started) / 1e6 : undefined;
      // The first start prints the token right after the listening line; a restart prints no token.
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (ms !== undefined && url && (TOKEN.test(out) || /web console:/.test(out))) resolvePromise({ ms, url, token: TOKEN.exec(out)?.[1], stop });
    });
    child.stderr.on("data", (d) => (out += d));
    child.on("exit", (code) => reject(new Error(`manager exited ${code} before listening:\n${out}`)));
  });
}

/** Each variant's samples, taken round-robin. */
async function roundRobin(variants: Record<string, () => Promise<number>>, rounds: number): Promise<Record<string, number[]>> {
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  for (let i = 0; i < rounds; i++) for (const [k, run] of Object.entries(variants)) samples[k].push(await run());
  return samples;
}

async function main(): Promise<void> {
  const opt = flags();
  execFileSync(process.execPath, [join(ROOT, "scripts", "build-cli.mjs"), "--quiet"], { cwd: ROOT, stdio: "inherit" });
  const loadBefore = loadavg();
  const dir = mkdtempSync(join(tmpdir(), "ongrid-bench-cli-"));
  const data = join(dir, "data");
  const managerStarts: { first: number[]; restart: number[] } = { first: [], restart: [] };
  try {
    const first = await startManager(data);
    managerStarts.first.push(first.ms);
    const env = { ONGRID_TOKEN: first.token!, ONGRID_FROM_SOURCE: "" };
    const list = ["skills", "list", "--manager", first.url];
    // Warm the file cache for every variant once.
    await timeRun(["-e", "0"]);
    await timeRun([BIN, "--version"], env);
    await timeRun([BIN, ...list], env);
    const built = await roundRobin(
      {
        node: () => timeRun(["-e", "0"]),
        version: () => timeRun([BIN, "--version"], env),
        list: () => timeRun([BIN, ...list], env),
      },
      opt.runs,
    );
    const source = await roundRobin(
      {
        version: () => timeRun([BIN, "--version"], { ...env, ONGRID_FROM_SOURCE: "1" }),
        list: () => timeRun([BIN, ...list], { ...env, ONGRID_FROM_SOURCE: "1" }),
      },
      opt.sourceRuns,
    );
    await first.stop();
    for (let i = 0; i < opt.managerRuns; i++) {
      const m = await startManager(data);
      managerStarts.restart.push(m.ms);
      await m.stop();
    }
    const loadAfter = loadavg();
    const med = (v: number[]) => median(v);
    const p90 = (v: number[]) => quantile(v, 0.9);
    const base = med(built.node);
    const rows: Row[] = [
      infoRow("node -e 0 (baseline) median", "ms", base),
      ratioRow("ongrid --version median", "ms", med(built.version), base, VERSION_TARGET),
      ratioRow("ongrid skills list --manager median", "ms", med(built.list), base, LIST_TARGET),
      infoRow("ongrid --version p90", "ms", p90(built.version), p90(built.node)),
      infoRow("ongrid skills list --manager p90", "ms", p90(built.list), p90(built.node)),
      infoRow("from source (tsx): --version median", "ms", med(source.version), base),
      infoRow("from source (tsx): skills list --manager median", "ms", med(source.list), base),
      infoRow("manager start, empty data dir (spawn to listening)", "ms", managerStarts.first[0]),
      infoRow("manager restart median (spawn to listening)", "ms", med(managerStarts.restart)),
    ];
    console.log(table(rows));
    writeJson(opt.out, {
      bench: "cli",
      command: "npm run bench:cli",
      runs: { built: opt.runs, source: opt.sourceRuns, manager: opt.managerRuns },
      rows,
      samples_ms: { built, source, manager_start: managerStarts },
      quantiles_ms: Object.fromEntries(
        [...Object.entries(built).map(([k, v]) => [`built.${k}`, v] as const), ...Object.entries(source).map(([k, v]) => [`source.${k}`, v] as const), ["manager.restart", managerStarts.restart] as const].map(([k, v]) => [
          k,
          { median: med(v), p90: p90(v) },
        ]),
      ),
      machine: machineInfo(loadBefore, loadAfter),
    });
    console.log(`\nwrote ${opt.out}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
