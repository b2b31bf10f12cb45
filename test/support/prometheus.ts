/**
 * A real Prometheus (Debian's `prometheus` package) for the tests: started on a free loopback port
 * with a config, rules and data directory of its own, stopped by the test. Without the binary the
 * tests skip and say why; under CI (CI=true) a missing binary is a failure (.ci/run installs it).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe } from "vitest";
import { freePort } from "./free-port.ts";

export { freePort };

/** The binary: $ONGRID_PROMETHEUS or Debian's /usr/bin/prometheus. */
export const PROMETHEUS = process.env.ONGRID_PROMETHEUS || "/usr/bin/prometheus";

/** `describe` that runs where Prometheus is installed, skips with the reason elsewhere, fails under CI. */
export function describeWithPrometheus(name: string, fn: () => void): void {
  if (existsSync(PROMETHEUS)) {
    describe(name, fn);
    return;
  }
  const why = `no Prometheus at ${PROMETHEUS} (install Debian's prometheus package, or set ONGRID_PROMETHEUS)`;
  if (process.env.CI === "true") {
    describe(name, () => {
      throw new Error(`${why}; under CI the observability tests must run (.ci/run installs prometheus)`);
    });
    return;
  }
  console.warn(`skipping "${name}": ${why}`);
  describe.skip(name, fn);
}


/** One scrape job: a host:port, scraped at /metrics, with a bearer token file when given. */
export interface ScrapeTarget {
  job: string;
  address: string;
  tokenFile?: string;
}

/** A running Prometheus. */
export interface TestPrometheus {
  url: string;
  port: number;
  dir: string;
  /** Everything it wrote on stdout and stderr so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` every second and evaluating `rules` (a rules file's YAML) every second. */
export async function startPrometheus(opts: { targets: ScrapeTarget[]; rules?: string; alertmanager?: string; port?: number }): Promise<TestPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), "ongrid-prometheus-"));
  const port = opts.port ?? (await freePort());
  const lines = ["global:", "  scrape_interval: 1s", "  scrape_timeout: 1s", "  evaluation_interval: 1s"];
  if (opts.rules !== undefined) {
    writeFileSync(join(dir, "rules.yml"), opts.rules);
    lines.push("rule_files:", `  - ${JSON.stringify(join(dir, "rules.yml"))}`);
  }
  if (opts.alertmanager) lines.push("alerting:", "  alertmanagers:", "    - static_configs:", `        - targets: [${JSON.stringify(opts.alertmanager)}]`);
  lines.push("scrape_configs:");
  for (const t of opts.targets) {
    lines.push(`  - job_name: ${JSON.stringify(t.job)}`, "    metrics_path: /metrics");
    if (t.tokenFile) lines.push("    authorization:", "      type: Bearer", `      credentials_file: ${JSON.stringify(t.tokenFile)}`);
    lines.push("    static_configs:", `      - targets: [${JSON.stringify(t.address)}]`);
  }
  writeFileSync(join(dir, "prometheus.yml"), `${lines.join("\n")}\n`);
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // A test process that dies without afterAll must not leave Prometheus running.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited with ${child.exitCode} before it was ready:\n${out}`);
    }
    const ready = await fetch(`${url}/-/ready`).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus was not ready on ${url} within 30 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, port, dir, output: () => out, stop };
}
