/**
 * The exec classifier's cost (A6): microseconds to classify one command line with the gate's code
 * (classifyCommand: mvdan/sh's parse, the allowlist, the destroyer rules), over a mix of everyday
 * read-only commands, pipelines, mutating and destructive lines. The baseline, measured in the same
 * run, is the parse alone (what any shell-parser-based classifier pays), so the ratio is what the
 * rules add. Prints a table and writes JSON (scripts/bench/results/classify.json).
 *
 *   npx tsx scripts/bench/classify.ts [--rounds N] [--out FILE]
 */
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { classifyCommand } from "../../skill/risk/index.ts";
import { parseLine } from "../../skill/risk/shell.ts";
import { infoRow, machineInfo, table, writeJson, type Row } from "./lib/report.ts";
import { median, quantile } from "./lib/stats.ts";

const LINES = [
  "df -h",
  "uptime",
  "ps aux --sort=-%cpu",
  "journalctl -u nginx --no-pager -n 50",
  "journalctl -u nginx -n 200 --no-pager | grep -i error | sort | uniq -c | sort -rn | head",
  "ps aux | awk '{print $1}' | sort | uniq -c | sort -rn",
  "cat /var/log/syslog | cut -d' ' -f5 | sort | uniq -c",
  "systemctl restart nginx",
  "echo hi > /tmp/x; rm /tmp/x",
  "for f in /var/log/*.log; do gzip \"$f\"; done",
  "mkfs.ext4 /dev/sda",
  "function f { rm -rf /; }; f",
];

function time(fn: (line: string) => unknown, rounds: number): number[] {
  const perCall: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (const l of LINES) fn(l);
    perCall.push(Number(process.hrtime.bigint() - t0) / 1000 / LINES.length);
  }
  return perCall;
}

const { values } = parseArgs({ options: { rounds: { type: "string", default: "2000" }, out: { type: "string" } } });
const rounds = Number(values.rounds);
const loadBefore = loadavg();
// Warm both paths (JIT, the parser's first-use set-up) before measuring.
time((l) => classifyCommand(l), 200);
time((l) => parseLine(l), 200);
// Interleaved halves, so drift on a shared machine hits both alike.
const cls: number[] = [];
const parse: number[] = [];
for (let half = 0; half < 2; half++) {
  cls.push(...time((l) => classifyCommand(l), rounds / 2));
  parse.push(...time((l) => parseLine(l), rounds / 2));
}
const perLine = LINES.map((line) => {
  const t = time(() => classifyCommand(line), 300);
  return { line, class: classifyCommand(line).class, median_us: median(t) };
});
const rows: Row[] = [
  infoRow("classify one command, median", "µs", median(cls), median(parse)),
  infoRow("classify one command, p99", "µs", quantile(cls, 0.99), quantile(parse, 0.99)),
  infoRow("lines per second on one core", "lines/s", 1e6 / median(cls), 1e6 / median(parse)),
];
console.log(`exec classifier: ${LINES.length} lines x ${rounds} rounds on ${cpus()[0]?.model ?? "?"} (baseline: mvdan/sh's parse alone)\n`);
console.log(table(rows));
console.log("\nper line (median µs):");
for (const p of perLine) console.log(`  ${p.median_us.toFixed(1).padStart(7)}  ${p.class.padEnd(9)}  ${p.line}`);
writeJson(values.out ?? join(import.meta.dirname, "results", "classify.json"), { rows, perLine, machine: machineInfo(loadBefore, loadavg(), { rounds }) });
