import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { truncateOutput } from "../../../skill/truncate.ts";
import hostProcesses from "../../../edge/builtin/host-processes.ts";
import { runTool } from "../../../test/support/tools.ts";
import { condense, lineShape, MAX_SHAPES, recordLevel, shapeLevel, type Condensed } from "./condense.ts";

/** Deterministic pseudo-random numbers, so the generated log is the same on every run. */
function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
}

/** Distinct letter-only words (shapes differ by letters, not by numbers). */
function word(n: number): string {
  let s = "";
  do {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26);
  } while (n > 0);
  return `w${s}`;
}

interface GeneratedLog {
  text: string;
  lines: number;
  counts: Record<"request" | "cache" | "slow" | "retry" | "refused" | "payment" | "oom", number>;
  first: string;
  last: string;
}

/** A ~5 MB application log: two repeated INFO shapes, two WARN shapes, three ERROR/FATAL shapes near the end. */
function generateLog(minBytes: number): GeneratedLog {
  const rand = rng(7);
  const base = Date.parse("2025-01-31T10:00:00.000Z");
  const counts = { request: 0, cache: 0, slow: 0, retry: 0, refused: 0, payment: 0, oom: 0 };
  const out: string[] = [];
  let size = 0;
  const push = (i: number, body: string) => {
    const line = `${new Date(base + i * 100).toISOString()} ${body}`;
    out.push(line);
    size += line.length + 1;
  };
  let i = 0;
  for (; size < minBytes; i++) {
    const n = Math.floor(rand() * 100_000);
    if (i % 9973 === 17) {
      push(i, `ERROR db connection to 10.0.0.${i % 9}:5432 refused (attempt ${i % 4})`);
      counts.refused++;
    } else if (i % 101 === 0) {
      push(i, `WARN slow query took ${n % 5000} ms on table "orders"`);
      counts.slow++;
    } else if (i % 257 === 3) {
      push(i, `WARN retrying upstream 10.0.1.${i % 200}:8080 attempt ${i % 5}`);
      counts.retry++;
    } else if (i % 3 === 0) {
      push(i, `INFO cache hit ratio 0.${n % 100} for shard ${n % 64}`);
      counts.cache++;
    } else {
      const id = Math.floor(rand() * 2 ** 32).toString(16).padStart(8, "0");
      push(i, `INFO request id=${id} path=/api/items/${n} served in ${n % 900} ms from 10.0.${n % 250}.${i % 250}`);
      counts.request++;
    }
  }
  for (const order of [1001, 1002, 1003]) {
    push(i++, `ERROR payment service returned status=503 for order ${order}`);
    counts.payment++;
  }
  push(i++, "FATAL out of memory: killed worker 7");
  counts.oom++;
  push(i++, `INFO cache hit ratio 0.5 for shard 3`);
  counts.cache++;
  return { text: `${out.join("\n")}\n`, lines: out.length, counts, first: out[0].slice(0, 24), last: out[out.length - 1].slice(0, 24) };
}

const patternOf = (c: Condensed, pattern: string) => c.patterns.find((p) => p.pattern === pattern);

describe("condense", () => {
  const log = generateLog(5 * 1024 * 1024);
  const c = condense(log.text);

  it("condenses a 5 MB log to at most maxChars with exact line and level counts", () => {
    expect(log.text.length).toBeGreaterThanOrEqual(5 * 1024 * 1024);
    expect(c.summary.length).toBeLessThanOrEqual(4000);
    expect(c.stats.bytes).toBe(Buffer.byteLength(log.text));
    expect(c.stats.lines).toBe(log.lines);
    expect(c.stats.errorLines).toBe(log.counts.refused + log.counts.payment + log.counts.oom);
    expect(c.stats.warningLines).toBe(log.counts.slow + log.counts.retry);
    expect(c.stats.distinctLines).toBe(7);
    expect(c.stats.foldedLines).toBe(log.lines - 1); // only the FATAL line is unique
    expect(c.stats.timeRange).toEqual({ first: log.first, last: log.last });
    expect(c.summary).toContain(`time range: ${log.first} … ${log.last}`);
  });

  it("keeps every distinct error pattern with its count and an example, errors first", () => {
    const refused = patternOf(c, "<ts> ERROR db connection to <ip> refused (attempt <n>)");
    const payment = patternOf(c, "<ts> ERROR payment service returned status=<5xx> for order <n>");
    const oom = patternOf(c, "<ts> FATAL out of memory: killed worker <n>");
    expect(refused).toMatchObject({ level: "error", count: log.counts.refused });
    expect(payment).toMatchObject({ level: "error", count: 3, example: expect.stringContaining("status=503 for order 1001") });
    expect(oom).toMatchObject({ level: "error", count: 1, example: expect.stringContaining("FATAL out of memory: killed worker 7") });
    expect(c.patterns.slice(0, 3).map((p) => p.level)).toEqual(["error", "error", "error"]);
    expect(c.patterns[0]).toBe(refused); // the most frequent error comes first
    expect(refused!.first! < refused!.last!).toBe(true);
    for (const p of [refused!, payment!, oom!]) expect(c.summary).toContain(p.example);
    expect(c.summary).toContain(`${log.counts.refused}× <ts> ERROR db connection to <ip> refused`);
    expect(c.summary.indexOf("== errors")).toBeLessThan(c.summary.indexOf("== warnings"));
  });

  it("folds the repeated INFO shapes with their exact counts", () => {
    const request = patternOf(c, "<ts> INFO request id=<n> path=/api/items/<n> served in <n> ms from <ip>");
    expect(request).toMatchObject({ level: "info", count: log.counts.request });
    expect(patternOf(c, "<ts> INFO cache hit ratio <n> for shard <n>")).toMatchObject({ level: "info", count: log.counts.cache });
    expect(patternOf(c, '<ts> WARN slow query took <n> ms on table "orders"')).toMatchObject({ level: "warning", count: log.counts.slow });
    expect(patternOf(c, "<ts> WARN retrying upstream <ip> attempt <n>")).toMatchObject({ level: "warning", count: log.counts.retry });
    expect(c.summary).toContain(`${log.counts.request}× <ts> INFO request id=<n>`);
  });

  it("condenses a tail_file result given as JSON, alone or inside a tool envelope", () => {
    const lines = Array.from({ length: 300 }, (_, i) =>
      i % 20 === 19 ? `2025-01-31T12:00:${String(i % 60).padStart(2, "0")}Z ERROR upstream timed out after ${i} ms` : `2025-01-31T12:00:${String(i % 60).padStart(2, "0")}Z INFO GET /health ${i} ok`,
    );
    const output = { path: "/var/log/app.log", lines, returned: 300, truncated_from_start: true, size_bytes: 1048576, modified_at: "2025-01-31T12:05:00.000Z", bytes_scanned: 65536, scan_limit_reached: false };
    for (const text of [JSON.stringify(output), JSON.stringify({ success: true, output })]) {
      const r = condense(text);
      expect(r.stats.lines).toBe(300);
      expect(r.stats.errorLines).toBe(15);
      expect(r.patterns[0]).toMatchObject({ pattern: "<ts> ERROR upstream timed out after <n> ms", count: 15, level: "error" });
      expect(r.summary).toMatch(/JSON input: lines from \S*\.lines\[\] \(300 items\).*path=\/var\/log\/app\.log/);
      expect(r.summary.length).toBeLessThanOrEqual(4000);
    }
  });

  it("formats read_journal entries as log lines and reads their priority", () => {
    const entries = Array.from({ length: 120 }, (_, i) => ({
      time: `2025-01-31T13:${String(10 + Math.floor(i / 60)).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}.000Z`,
      unit: "nginx.service",
      identifier: "nginx",
      priority: i % 10 === 0 ? "err" : "info",
      pid: 812,
      message: i % 10 === 0 ? `connect() failed (111: Connection refused) while connecting to upstream, client: 10.1.2.${i}` : `worker process ${1000 + i} started`,
    }));
    const r = condense(JSON.stringify({ unit: "nginx", entries, returned: 120 }), { maxChars: 1500 });
    expect(r.stats.lines).toBe(120);
    expect(r.stats.errorLines).toBe(12);
    expect(r.patterns[0]).toMatchObject({ level: "error", count: 12, example: "2025-01-31T13:10:00.000Z nginx[812] ERR: connect() failed (111: Connection refused) while connecting to upstream, client: 10.1.2.0" });
    expect(r.stats.timeRange).toEqual({ first: "2025-01-31T13:10:00.000Z", last: "2025-01-31T13:11:59.000Z" });
    expect(r.summary.length).toBeLessThanOrEqual(1500);
  });

  it("reads the string values of a JSON result cut by the output cap", () => {
    const lines = Array.from({ length: 2000 }, (_, i) => (i % 50 === 0 ? `2025-01-31T12:00:00Z ERROR disk /data full, write ${i} failed` : `2025-01-31T12:00:00Z INFO wrote block ${i}`));
    const cut = truncateOutput({ path: "/var/log/app.log", lines }, 8000);
    expect(cut.truncated).toBe(true);
    const r = condense(JSON.stringify({ success: true, output: cut.output, truncated: true }));
    expect(r.stats.lines).toBeGreaterThan(100);
    expect(r.patterns[0]).toMatchObject({ level: "error", pattern: "<ts> ERROR disk /data full, write <n> failed" });
  });

  it("classifies Chinese error lines", () => {
    const text = [
      "2025-01-31 10:00:01 订单服务 数据库连接失败 host=10.0.0.1",
      "2025-01-31 10:00:02 订单服务 数据库连接失败 host=10.0.0.2",
      "2025-01-31 10:00:03 订单服务 数据库连接失败 host=10.0.0.3",
      "2025-01-31 10:00:04 网关 请求超时 耗时 30000ms",
      "2025-01-31 10:00:05 支付服务 发生未知异常",
      "2025-01-31 10:00:06 INFO 服务启动完成",
      "2025-01-31 10:00:07 订单服务 数据库连接失败 host=10.0.0.4",
    ].join("\n");
    const r = condense(text);
    expect(r.stats.errorLines).toBe(6);
    expect(r.patterns[0]).toMatchObject({ pattern: "<ts> 订单服务 数据库连接失败 host=<ip>", count: 4, level: "error" });
    expect(r.stats.timeRange).toEqual({ first: "2025-01-31 10:00:01", last: "2025-01-31 10:00:07" });
  });

  it("keeps lines matching focus that the summary would otherwise drop", () => {
    const body: string[] = [];
    for (let i = 0; i < 3000; i++) body.push(`2025-01-31T10:${String(Math.floor(i / 60) % 60).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}Z INFO request ${i} served`);
    body.splice(1500, 0, "2025-01-31T10:25:00Z INFO disk /dev/sda1 usage at 91 percent");
    for (let i = 0; i < 40; i++) body.push(`2025-01-31T11:00:00Z INFO finished job ${word(i)}`);
    const text = body.join("\n");
    expect(condense(text).summary).not.toContain("sda1");
    const byWord = condense(text, { focus: "disk" });
    expect(byWord.summary).toContain("INFO disk /dev/sda1 usage at 91 percent");
    expect(byWord.summary).toContain('focus any of "disk": 1 matching lines');
    const twoWords = condense(text, { focus: "nothing, /dev/sda1" });
    expect(twoWords.summary).toContain("INFO disk /dev/sda1 usage at 91 percent");
    expect(twoWords.summary.length).toBeLessThanOrEqual(4000);
    // Regex syntax is matched literally: a backtracking pattern is never run (it would stall the manager).
    const evil = condense(`${"a".repeat(5000)}!\nerror one\n`, { focus: "(a|aa)*$" });
    expect(evil.summary).toContain('focus any of "(a|aa)*$": 0 matching lines');
  });

  it("classifies HTTP status classes in access logs and finds syslog times", () => {
    const text = [
      'Jan 31 10:00:00 web1 nginx: 10.0.0.1 - - [31/Jan/2025:10:00:00 +0000] "GET /api HTTP/1.1" 200 157 "-" "curl/8.0"',
      'Jan 31 10:00:01 web1 nginx: 10.0.0.2 - - [31/Jan/2025:10:00:01 +0000] "GET /api HTTP/1.1" 502 157 "-" "curl/8.0"',
      'Jan 31 10:00:02 web1 nginx: 10.0.0.3 - - [31/Jan/2025:10:00:02 +0000] "GET /api HTTP/1.1" 404 157 "-" "curl/8.0"',
      'Jan 31 10:00:03 web1 nginx: 10.0.0.4 - - [31/Jan/2025:10:00:03 +0000] "GET /api HTTP/1.1" 503 157 "-" "curl/8.0"',
    ].join("\n");
    const r = condense(text);
    expect(r.stats).toMatchObject({ errorLines: 2, warningLines: 1, timeRange: { first: "Jan 31 10:00:00", last: "Jan 31 10:00:03" } });
    expect(r.patterns[0]).toMatchObject({ level: "error", count: 2 });
  });

  it("keeps late errors when the shape cap is reached", () => {
    const body = Array.from({ length: MAX_SHAPES + 3000 }, (_, i) => `INFO event ${word(i)} recorded`);
    body.push("ERROR replication stopped: primary unreachable");
    const r = condense(body.join("\n"), { maxChars: 2000 });
    expect(r.stats.lines).toBe(MAX_SHAPES + 3001);
    expect(r.stats.distinctLines).toBe(MAX_SHAPES + 3001);
    expect(r.stats.errorLines).toBe(1);
    expect(r.patterns[0]).toMatchObject({ level: "error", example: "ERROR replication stopped: primary unreachable" });
    expect(r.summary).toContain("ERROR replication stopped: primary unreachable");
    expect(r.summary).toContain("shape cap");
    expect(r.summary.length).toBeLessThanOrEqual(2000);
  });

  it("answers an empty input with zero counts", () => {
    const r = condense("");
    expect(r.stats).toEqual({ bytes: 0, lines: 0, errorLines: 0, warningLines: 0, distinctLines: 0, foldedLines: 0 });
    expect(r.patterns).toEqual([]);
    expect(r.summary).toMatch(/^0 bytes, 0 lines/);
  });

  it("returns a tiny input nearly as is", () => {
    const text = "2025-01-31T10:00:00Z INFO started\n2025-01-31T10:00:01Z ERROR boom: config missing\n";
    const r = condense(text);
    expect(r.summary.endsWith(`\n\n${text.trimEnd()}`)).toBe(true);
    expect(r.summary.length).toBeLessThan(text.length + 200);
    expect(r.stats).toMatchObject({ lines: 2, errorLines: 1, timeRange: { first: "2025-01-31T10:00:00Z", last: "2025-01-31T10:00:01Z" } });
  });

  it("holds any maxChars", () => {
    for (const maxChars of [500, 1000, 20_000]) expect(condense(log.text.slice(0, 400_000), { maxChars }).summary.length).toBeLessThanOrEqual(maxChars);
  });
});

describe("condense classifies by level fields and log formats, not by words inside command lines (real outputs)", () => {
  // A real process whose command line is full of words that are not severities.
  const ARGV = ["-e", "setInterval(() => {}, 1000)", "--", "--suppress-warnings", "--log-level=ERROR", "/var/log/error.log", "error-reporter", "--on-failure=retry", "-XX:OnOutOfMemoryError=kill"];
  let child: ChildProcess;
  beforeAll(async () => {
    child = spawn(process.execPath, ARGV, { stdio: "ignore" });
    await new Promise((r) => setTimeout(r, 300));
  });
  afterAll(() => {
    child?.kill("SIGKILL");
  });
  const mentionsChild = (c: Condensed) => c.patterns.filter((p) => p.example.includes("suppress-warnings") || p.pattern.includes("suppress-warnings"));

  it("host_processes rows (the real skill's JSON in its envelope) are records: info unless a field says otherwise", async () => {
    const env = await runTool(hostProcesses as never, { sort_by: "mem", limit: 100 });
    expect(env.success).toBe(true);
    const rows = (env.output as { processes: Array<{ pid: number; command: string }> }).processes;
    expect(rows.find((r) => r.pid === child.pid)?.command).toContain("--suppress-warnings");
    const text = JSON.stringify(env);
    const c = condense(text, { maxChars: 2000 });
    // Before, the row read as a warning ("warnings") and an error ("ERROR", "error", "OutOfMemoryError").
    expect(mentionsChild(c).filter((p) => p.level !== "info")).toEqual([]);
    expect(c.stats.errorLines).toBe(0);
    expect(c.stats.warningLines).toBe(0);
  });

  it("ps output as plain text: flags, paths and compound names are not severities", () => {
    const ps = spawnSync("ps", ["-eo", "pid,args"], { encoding: "utf8" });
    expect(ps.status).toBe(0);
    const line = ps.stdout.split("\n").find((l) => l.includes("--suppress-warnings"))!;
    expect(line).toBeTruthy();
    expect(shapeLevel(lineShape(line).shape)).toBe("info");
  });

  it("Python logging's default format: the level name decides, the message's words do not override it", () => {
    const py = spawnSync(
      "python3",
      ["-c", "import logging,sys\nlogging.basicConfig(stream=sys.stdout, level=logging.INFO, format='%(asctime)s %(levelname)s %(name)s: %(message)s')\nl=logging.getLogger('app')\nl.info('started with --suppress-warnings, 0 errors so far')\nl.warning('disk / is 97%% full')\nl.error('upstream api.internal:8443 answered 502')\nl.info('retry budget reset')\n"],
      { encoding: "utf8" },
    );
    expect(py.status).toBe(0);
    const levels = py.stdout.trim().split("\n").map((l) => shapeLevel(lineShape(l).shape));
    expect(levels).toEqual(["info", "warning", "error", "info"]);
  });

  it("records: level fields, error fields, failed states, non-zero exit codes and HTTP statuses", () => {
    expect(recordLevel({ pid: 1, command: "app --suppress-warnings --log-level=ERROR" })).toBe("info");
    expect(recordLevel({ unit: "nginx.service", active_state: "failed" })).toBe("error");
    expect(recordLevel({ unit: "nginx.service", active_state: "active", description: "error page server" })).toBe("info");
    expect(recordLevel({ unit: "db.service", active_state: "activating" })).toBe("warning");
    expect(recordLevel({ exit_code: 1, command: "backup.sh" })).toBe("error");
    expect(recordLevel({ exit_code: 0, stderr: "warning: deprecated" })).toBe("info");
    expect(recordLevel({ url: "http://x/errors", status: 503 })).toBe("error");
    expect(recordLevel({ url: "http://x/", status: 404 })).toBe("warning");
    expect(recordLevel({ level: "warn", msg: "anything" })).toBe("warning");
    expect(recordLevel({ priority: 3 })).toBe("error");
    expect(recordLevel({ error: "" })).toBe("info");
    expect(recordLevel({ error: "connection refused" })).toBe("error");
    expect(recordLevel({ success: false })).toBe("error");
  });

  it("plain log lines still classify by their keywords, and the words of a key=value pair's value count", () => {
    expect(shapeLevel(lineShape("2026-12-06T03:00:00Z connect() to 10.0.0.2:5432 failed (111: Connection refused)").shape)).toBe("error");
    expect(shapeLevel(lineShape("java.lang.OutOfMemoryError: Java heap space").shape)).toBe("error");
    expect(shapeLevel(lineShape("kernel: Out of memory: Killed process 1234 (java)").shape)).toBe("error");
    expect(shapeLevel(lineShape("ts=2026-12-06T03:00:00Z job=backup status=failed").shape)).toBe("error");
    expect(shapeLevel(lineShape("ts=2026-12-06T03:00:00Z job=backup error_count=0 status=ok").shape)).toBe("info");
    expect(shapeLevel(lineShape("upstream timed out (110: Connection timed out) while reading response header").shape)).toBe("error");
    expect(shapeLevel(lineShape("opened /var/log/app/error.log for append").shape)).toBe("info");
  });
});
