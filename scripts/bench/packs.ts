/**
 * The skill pack benchmark: one subprocess pack call through ongrid (validateParams + runSkill →
 * runPack → runProcess: its own process group, minimal environment, JSON in and out, redaction,
 * truncation) next to a bare child_process.spawn of the same executable with the same stdin, the
 * same cwd and the same environment. Target: pack call p50 and p99 ≤ 1.3× the bare spawn.
 * Prints a table and writes JSON (scripts/bench/results/packs.json).
 *
 *   npx tsx scripts/bench/packs.ts [--iterations 500] [--warmup 50] [--block 50] [--out FILE]
 *
 * Two packs are written into a temp dir: a /bin/sh one (the cheapest process there is, so the
 * ratio shows ongrid's own cost) and a Python 3 one (a typical pack). Calls are sequential; the
 * variants run in alternating blocks of --block calls (rotating order) so drift in the machine's
 * load hits them alike; the JSON also gives the median of per-block ratios (each block against the
 * bare block of the same round), which is steadier than the pooled quantiles on a busy machine.
 * A third variant, runProcess alone (skill/subprocess.ts with runPack's file, args, cwd, env, stdin,
 * deadline and cap), is reported for orientation: it splits the overhead into the subprocess layer
 * and the skill layers.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { createPackSet } from "../../skill/pack/loader.ts";
import type { PackSkillSpec } from "../../skill/pack/manifest.ts";
import { packEnv } from "../../skill/pack/run.ts";
import { createRegistry } from "../../skill/registry.ts";
import { runSkill } from "../../skill/run.ts";
import { runProcess } from "../../skill/subprocess.ts";
import type { Skill, SkillContext } from "../../skill/types.ts";
import { validateParams } from "../../skill/validate.ts";
import { infoRow, ratioRow, table, writeJson, type Row, machineInfo } from "./lib/report.ts";
import { timeSequential } from "./lib/round-trip.ts";
import { median, quantile } from "./lib/stats.ts";
import { intFlag } from "./lib/flags.ts";

const HERE = import.meta.dirname;
const TARGET_RATIO = 1.3;
const CALL_TIMEOUT_MS = 10_000;
const OUTPUT_CAP = 65_536;
const TEXT = "x".repeat(64);

function flags() {
  const { values } = parseArgs({
    options: {
      iterations: { type: "string", default: "500" },
      warmup: { type: "string", default: "50" },
      block: { type: "string", default: "50" },
      out: { type: "string" },
    },
  });
  return {
    iterations: intFlag("iterations", values.iterations!, 10),
    warmup: intFlag("warmup", values.warmup!, 0),
    block: intFlag("block", values.block!, 1),
    out: resolve(values.out ?? join(HERE, "results", "packs.json")),
  };
}

/** A pack the bench writes: its directory name, manifest entry, executable and the output it must give. */
interface BenchPack {
  label: string;
  key: string;
  file: string;
  script: string;
  expect: unknown;
}

const PACKS: BenchPack[] = [
  {
    label: "sh",
    key: "bench_sh_echo",
    file: "run.sh",
    // Reads the params (one line, no trailing newline: read still fills the variable) and answers a fixed document.
    script: '#!/bin/sh\nIFS= read -r params\nprintf \'{"output":"ok"}\\n\'\n',
    expect: "ok",
  },
  {
    label: "python3",
    key: "bench_py_echo",
    file: "run.py",
    script: '#!/usr/bin/env python3\nimport json, sys\nparams = json.load(sys.stdin)\nprint(json.dumps({"output": params["text"]}))\n',
    expect: TEXT,
  },
];

/** Writes each pack (skill.json + executable) into `<root>/<label>/`. */
function writePacks(root: string): void {
  for (const p of PACKS) {
    const dir = join(root, p.label);
    mkdirSync(dir, { recursive: true });
    const exe = join(dir, p.file);
    writeFileSync(exe, p.script);
    chmodSync(exe, 0o755);
    const manifest = {
      key: p.key,
      name: `Bench ${p.label} echo`,
      description: `Benchmark pack: reads the params from stdin and answers one JSON document (${p.label}).`,
      class: "safe",
      scope: "host",
      category: "bench",
      params: { text: { type: "string", description: "Echoed back by the python3 pack; ignored by the sh one.", required: true } },
      executable: p.file,
      timeout: "10s",
      output_cap_bytes: OUTPUT_CAP,
    };
    writeFileSync(join(dir, "skill.json"), JSON.stringify(manifest, null, 2) + "\n");
  }
}

/** The baseline: spawn, params on stdin, stdout read to the end, exit awaited, stdout parsed. */
function bareCall(spec: PackSkillSpec, env: Record<string, string>, input: string): Promise<unknown> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(spec.executable, spec.args, { cwd: spec.dir, env, stdio: "pipe" });
    const chunks: Buffer[] = [];
    let exitCode: number | null | undefined;
    let ended = false;
    const finish = () => {
      if (!ended || exitCode === undefined) return;
      if (exitCode !== 0) return reject(new Error(`bare ${spec.executable} exited with ${exitCode}`));
      try {
        resolvePromise(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch (err) {
        reject(err as Error);
      }
    };
    child.once("error", reject);
    child.stdout.on("data", (b: Buffer) => chunks.push(b));
    child.stdout.once("end", () => {
      ended = true;
      finish();
    });
    child.stderr.resume();
    child.once("exit", (code) => {
      exitCode = code;
      finish();
    });
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}

/** p50/p90/p99/max/mean of a sample, for the JSON. */
function summary(ms: readonly number[]) {
  return {
    n: ms.length,
    p50: quantile(ms, 0.5),
    p90: quantile(ms, 0.9),
    p99: quantile(ms, 0.99),
    max: Math.max(...ms),
    mean: ms.reduce((a, b) => a + b, 0) / ms.length,
  };
}

type Variant = "bare" | "process" | "ongrid";
const VARIANTS: readonly Variant[] = ["bare", "process", "ongrid"];

const began = performance.now();
const log = (msg: string) => console.log(`[${((performance.now() - began) / 1000).toFixed(1).padStart(6)} s] ${msg}`);
const tmpDirs: string[] = [];
const cleanup = () => {
  for (const d of tmpDirs.splice(0)) rmSync(d, { recursive: true, force: true });
};

async function main(): Promise<number> {
  const opt = flags();
  const loadBefore = loadavg();
  log(`load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} CPUs`);
  if (loadBefore[0] > 0.5) log("warning: the machine is busy; other processes will skew these numbers");

  const work = mkdtempSync(join(tmpdir(), "ongrid-bench-packs-"));
  tmpDirs.push(work);
  writePacks(work);
  const silent = pino({ level: "silent" });
  const registry = createRegistry({ log: silent });
  const packs = createPackSet({ dirs: [work], scope: "host", registry, log: silent });
  const report = packs.rescan();
  if (report.problems.length) throw new Error(`the bench packs were refused: ${report.problems.map((p) => `${p.file}: ${p.field}: ${p.message}`).join("; ")}`);
  log(`loaded packs ${report.loaded.join(", ")} from ${work}`);

  const rows: Row[] = [];
  const details: Record<string, unknown> = {};
  let callNo = 0;
  for (const pack of PACKS) {
    const skill: Skill = registry.getOrThrow(pack.key);
    const spec = packs.specs().get(pack.key)!;
    const params = { text: TEXT };
    const input = JSON.stringify(params);
    // The same environment runPack builds (fixed minimum + call identity), built per call in every variant.
    const envFor = (callId: string) => packEnv(spec, { callId, deadline: Date.now() + CALL_TIMEOUT_MS, edgeId: "" } as SkillContext);
    const check = (got: unknown, what: string) => {
      if (JSON.stringify(got) !== JSON.stringify(pack.expect)) throw new Error(`${pack.label} ${what}: unexpected output ${JSON.stringify(got)}`);
    };
    const calls: Record<Variant, () => Promise<void>> = {
      bare: async () => {
        const doc = (await bareCall(spec, envFor(`bench-${++callNo}`), input)) as { output?: unknown };
        check(doc?.output, "bare spawn");
      },
      process: async () => {
        const res = await runProcess({ file: spec.executable, args: spec.args, cwd: spec.dir, env: envFor(`bench-${++callNo}`), input, timeoutMs: CALL_TIMEOUT_MS, maxOutputBytes: spec.outputCapBytes });
        if (res.exitCode !== 0) throw new Error(`${pack.label} runProcess: exit ${res.exitCode} ${res.signal ?? ""} ${res.stderr}`);
        check((JSON.parse(res.stdout) as { output?: unknown }).output, "runProcess");
      },
      ongrid: async () => {
        const valid = validateParams(skill, params);
        const env = await runSkill(skill, valid, { callId: `bench-${++callNo}`, timeoutMs: CALL_TIMEOUT_MS, outputCapBytes: OUTPUT_CAP, log: silent });
        if (!env.success) throw new Error(`${pack.label} pack call failed: ${env.error?.code}: ${env.error?.message}`);
        check(env.output, "pack call");
      },
    };

    log(`${pack.label}: ${opt.warmup} warm-up calls per variant, then ${opt.iterations} sequential calls each of bare spawn, runProcess and the pack call, in blocks of ${opt.block}`);
    for (const v of VARIANTS) await timeSequential(0, opt.warmup, calls[v]);
    const ms: Record<Variant, number[]> = { bare: [], process: [], ongrid: [] };
    const blockMedians: Record<Variant, number[]> = { bare: [], process: [], ongrid: [] };
    const t0 = performance.now();
    for (let done = 0, b = 0; done < opt.iterations; done += opt.block, b++) {
      const n = Math.min(opt.block, opt.iterations - done);
      // Rotate the order so no variant always follows the same one.
      const order = VARIANTS.map((_, i) => VARIANTS[(i + b) % VARIANTS.length]);
      for (const v of order) {
        const t = await timeSequential(n, 0, calls[v]);
        ms[v].push(...t);
        blockMedians[v].push(median(t));
      }
    }
    const wallS = (performance.now() - t0) / 1000;
    const p = (v: Variant, q: number) => quantile(ms[v], q);
    // Paired by block: each block's median over the bare block of the same round, so slow drift cancels out.
    const paired = (v: Variant) => median(blockMedians[v].map((m, i) => m / blockMedians.bare[i]));
    log(`${pack.label}: p50 bare ${p("bare", 0.5).toFixed(3)} ms, runProcess ${p("process", 0.5).toFixed(3)} ms, pack call ${p("ongrid", 0.5).toFixed(3)} ms; paired per-block ratio runProcess ${paired("process").toFixed(2)}x, pack call ${paired("ongrid").toFixed(2)}x (${wallS.toFixed(1)} s)`);
    rows.push(
      ratioRow(`${pack.label} pack call p50`, "ms", p("ongrid", 0.5), p("bare", 0.5), TARGET_RATIO),
      ratioRow(`${pack.label} pack call p99`, "ms", p("ongrid", 0.99), p("bare", 0.99), TARGET_RATIO),
      infoRow(`${pack.label} runProcess alone p50`, "ms", p("process", 0.5), p("bare", 0.5)),
      infoRow(`${pack.label} runProcess alone p99`, "ms", p("process", 0.99), p("bare", 0.99)),
    );
    details[pack.label] = {
      key: pack.key,
      executable: spec.executable,
      ms: { bare: summary(ms.bare), run_process: summary(ms.process), pack_call: summary(ms.ongrid) },
      overhead_ms: { p50: p("ongrid", 0.5) - p("bare", 0.5), p99: p("ongrid", 0.99) - p("bare", 0.99) },
      paired_block_ratio: { run_process: paired("process"), pack_call: paired("ongrid") },
      block_medians_ms: { bare: blockMedians.bare, run_process: blockMedians.process, pack_call: blockMedians.ongrid },
      wall_s: wallS,
    };
  }

  const totalS = (performance.now() - began) / 1000;
  const loadAfter = loadavg();
  if (loadAfter[0] > 0.5 && loadBefore[0] <= 0.5) log(`warning: the load average rose to ${loadAfter[0].toFixed(2)} during the run`);
  console.log(`\nongrid skill pack benchmark — ${opt.iterations} calls per variant, ${cpus().length} CPUs, node ${process.version}, load ${loadBefore[0].toFixed(2)} → ${loadAfter[0].toFixed(2)}\n`);
  console.log(table(rows));
  const busy = loadBefore[0] > 0.5 || loadAfter[0] > 0.5;
  if (busy) {
    // quantile() is nearest-rank: the p99 of n calls is the k-th slowest, k = n − ⌈0.99 n⌉ + 1.
    const k = opt.iterations - Math.ceil(0.99 * opt.iterations) + 1;
    console.log(`\nnote: the machine was busy, and each p99 above is the ${k === 1 ? "slowest" : `${k}th-slowest`} of ${opt.iterations} calls, so scheduling decides it; rerun on an idle machine or with more --iterations before trusting the p99 rows.`);
  }
  writeJson(opt.out, {
    benchmark: "packs",
    date: new Date().toISOString(),
    duration_s: totalS,
    machine: machineInfo(loadBefore, loadAfter, { busy }),
    params: { iterations: opt.iterations, warmup: opt.warmup, block: opt.block, target_ratio: TARGET_RATIO, call_timeout_ms: CALL_TIMEOUT_MS, output_cap_bytes: OUTPUT_CAP, stdin_bytes: JSON.stringify({ text: TEXT }).length },
    variants: {
      baseline: "child_process.spawn(exe, args, {cwd: pack dir, env: packEnv(...), stdio: pipe}); params on stdin; stdout read to the end; exit awaited; JSON.parse",
      run_process: "skill/subprocess.ts runProcess with runPack's file, args, cwd, env, stdin, deadline and cap (own process group, capture, group check, drain); JSON.parse",
      pack_call: "validateParams + runSkill on the skill createPackSet registered (runPack → runProcess, result shape checks, redaction, truncation)",
    },
    metrics: rows,
    details,
  });
  console.log(`\nJSON: ${opt.out}\ntotal time: ${totalS.toFixed(1)} s`);
  return 0;
}

for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  process.on(sig, () => {
    console.error(`bench: ${sig}, removing the temp packs`);
    cleanup();
    process.exit(code);
  });
}

main()
  .catch((err: Error) => {
    console.error(`bench failed: ${err.stack ?? err}`);
    return 1;
  })
  .then((code) => {
    cleanup();
    process.exit(code);
  });
