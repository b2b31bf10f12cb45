import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../skill/registry.ts";
import { validateParams } from "../../skill/validate.ts";
import { runSkill } from "../../skill/run.ts";
import { lintSkill } from "../../skill/lint.ts";
import readJournal, { buildJournalArgs, parseJournalJson, parseJournalTime, parseSince } from "./read-journal.ts";

const skill = buildSkill(readJournal);
const log = pino({ level: "silent" });

function run(params: Record<string, unknown>, settings: Record<string, unknown> = {}) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 20_000, outputCapBytes: 1024 * 1024, log, settings });
}

const hasJournalctl = spawnSync("journalctl", ["--version"]).status === 0;
const journalRemote = ["/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote"].find((p) => existsSync(p));
/** True when neither place journald writes to holds anything (this development VM: journalctl installed, no systemd running). */
const noSystemJournal = !["/run/log/journal", "/var/log/journal"].some((d) => existsSync(d) && readdirSync(d).length > 0);

let base: string;
beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), "ongrid-journal-"));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("buildJournalArgs", () => {
  it("turns every filter into one --name=value argument after the fixed options", () => {
    const since = new Date("2025-01-31T13:00:00Z");
    expect(buildJournalArgs({ unit: "nginx.service", since, priority: "warning", lines: 50, grep: "timed out", directory: "/host/journal" })).toEqual([
      "-o",
      "json",
      "--no-pager",
      "--reverse",
      "-n",
      "50",
      "--directory=/host/journal",
      "--unit=nginx.service",
      "--since=@1738328400",
      "--priority=warning",
      "--grep=timed out",
    ]);
    expect(buildJournalArgs({ lines: 200 })).toEqual(["-o", "json", "--no-pager", "--reverse", "-n", "200"]);
  });

  it("bounds the window's end with --until=@<epoch seconds>, rounded up so the last second is kept, and refuses until before since", () => {
    const since = new Date("2025-01-31T13:00:00Z");
    expect(buildJournalArgs({ since, until: new Date("2025-01-31T14:00:00.400Z"), lines: 50 })).toEqual(["-o", "json", "--no-pager", "--reverse", "-n", "50", "--since=@1738328400", "--until=@1738332001"]);
    expect(buildJournalArgs({ until: new Date("2025-01-31T14:00:00Z"), lines: 5 }).at(-1)).toBe("--until=@1738332000");
    expect(() => buildJournalArgs({ since, until: new Date("2025-01-31T12:00:00Z"), lines: 5 })).toThrow(/param "until": 2025-01-31T12:00:00.000Z is before since \(2025-01-31T13:00:00.000Z\)/);
    expect(() => buildJournalArgs({ until: new Date(Number.NaN), lines: 5 })).toThrow(/param "until": not a valid time/);
  });

  it("keeps a grep that looks like an option inside its own argument", () => {
    expect(buildJournalArgs({ lines: 1, grep: "--output=cat" }).at(-1)).toBe("--grep=--output=cat");
  });

  it("refuses injection attempts in unit even when called without param validation", () => {
    for (const unit of ["x; rm -rf /", "--output=cat", "nginx service", "$(reboot)", "a`id`", "-u"]) {
      expect(() => buildJournalArgs({ unit, lines: 10 }), unit).toThrow(/param "unit"/);
    }
    expect(() => buildJournalArgs({ priority: "everything", lines: 10 })).toThrow(/param "priority"/);
    expect(() => buildJournalArgs({ grep: "(", lines: 10 })).toThrow(/param "grep"/);
  });
});

describe("param validation", () => {
  it("refuses shell-like unit and since values before anything runs", () => {
    for (const unit of ["x; rm -rf /", "--output=cat", "$(reboot)", "nginx|cat"]) {
      expect(() => validateParams(skill, { unit }), unit).toThrow(/param "unit"/);
    }
    for (const since of ["1h; rm -rf /", "$(reboot)", "yesterday && reboot", "--until=now", "1h ago\n--all"]) {
      expect(() => validateParams(skill, { since }), since).toThrow(/param "since"/);
    }
    for (const until of ["1h; rm -rf /", "$(reboot)", "--since=today", "now\n--all"]) {
      expect(() => validateParams(skill, { until }), until).toThrow(/param "until"/);
    }
    expect(() => validateParams(skill, { lines: 5000 })).toThrow(/param "lines"/);
  });

  it("accepts unit names with instances, escapes and globs", () => {
    for (const unit of ["nginx", "getty@tty1.service", "systemd-fsck@dev-disk-by\\x2duuid-1.service", "docker-*.scope"]) {
      expect(() => validateParams(skill, { unit }), unit).not.toThrow();
    }
  });
});

describe("parseSince", () => {
  const now = new Date("2025-06-15T12:00:00Z");
  it("resolves relative times against now", () => {
    expect(parseSince("1h ago", now).toISOString()).toBe("2025-06-15T11:00:00.000Z");
    expect(parseSince("2 days ago", now).toISOString()).toBe("2025-06-13T12:00:00.000Z");
    expect(parseSince("1h30min ago", now).toISOString()).toBe("2025-06-15T10:30:00.000Z");
    expect(parseSince("-15m", now).toISOString()).toBe("2025-06-15T11:45:00.000Z");
    expect(parseSince("now", now).toISOString()).toBe(now.toISOString());
  });

  it("reads ISO times with and without a zone, and refuses impossible dates", () => {
    expect(parseSince("2025-01-31T14:00:00Z", now).toISOString()).toBe("2025-01-31T14:00:00.000Z");
    expect(parseSince("2025-01-31 14:00:00+02:00", now).toISOString()).toBe("2025-01-31T12:00:00.000Z");
    expect(parseSince("2025-01-31 14:00", now).getTime()).toBe(new Date(2025, 0, 31, 14, 0).getTime());
    expect(parseSince("today", now).getTime()).toBe(new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime());
    expect(() => parseSince("2025-02-30", now)).toThrow(/param "since"/);
    expect(() => parseSince("3 moons ago", now)).toThrow(/unknown unit "moons"/);
  });

  it("reads until the same way, naming until in a refusal", () => {
    expect(parseJournalTime("30min ago", "until", now).toISOString()).toBe("2025-06-15T11:30:00.000Z");
    expect(parseJournalTime("2025-01-31T14:00:00Z", "until", now).toISOString()).toBe("2025-01-31T14:00:00.000Z");
    expect(() => parseJournalTime("2025-02-30", "until", now)).toThrow(/param "until": "2025-02-30" is not a valid date and time/);
    expect(() => parseJournalTime("3 moons ago", "until", now)).toThrow(/param "until": .*unknown unit "moons"/);
  });
});

describe("parseJournalJson", () => {
  it("shapes journalctl -o json lines into entries", () => {
    const text = [
      // verbatim journalctl 252 output
      '{"_BOOT_ID":"0123456789abcdef0123456789abcdef","_PID":"123","__MONOTONIC_TIMESTAMP":"2000","__REALTIME_TIMESTAMP":"1796055408118268","_SYSTEMD_UNIT":"nginx.service","SYSLOG_IDENTIFIER":"nginx","PRIORITY":"3","_HOSTNAME":"h","__CURSOR":"s=c86d;i=2","MESSAGE":"upstream timed out"}',
      // systemd reporting about a unit; a binary message; a message too large to print
      '{"__REALTIME_TIMESTAMP":"1796055409000000","_SYSTEMD_UNIT":"init.scope","UNIT":"nginx.service","SYSLOG_IDENTIFIER":"systemd","_PID":"1","PRIORITY":"6","MESSAGE":"Started nginx.service."}',
      '{"__REALTIME_TIMESTAMP":"1796055410000000","SYSLOG_IDENTIFIER":"kernel","PRIORITY":"2","MESSAGE":[104,105,255]}',
      '{"__REALTIME_TIMESTAMP":"1796055411000000","MESSAGE":null}',
      "not json",
      "",
    ].join("\n");
    const { entries, skipped } = parseJournalJson(text);
    expect(skipped).toBe(1);
    expect(entries).toEqual([
      { time: "2026-11-30T16:16:48.118Z", unit: "nginx.service", identifier: "nginx", priority: "err", pid: 123, message: "upstream timed out" },
      { time: "2026-11-30T16:16:49.000Z", unit: "nginx.service", identifier: "systemd", priority: "info", pid: 1, message: "Started nginx.service." },
      { time: "2026-11-30T16:16:50.000Z", unit: null, identifier: "kernel", priority: "crit", pid: null, message: "hi\uFFFD" },
      { time: "2026-11-30T16:16:51.000Z", unit: null, identifier: null, priority: null, pid: null, message: "[message too large for journalctl to print]" },
    ]);
  });
});

describe("read_journal", () => {
  it("fails with journal_unavailable when journalctl is not installed", async () => {
    const r = await run({}, { journalctl: join(base, "no-such-journalctl") });
    expect(r.error).toMatchObject({ code: "journal_unavailable" });
    expect(r.error!.message).toMatch(/not installed/);
    expect(r.error!.hint).toMatch(/tail_file/);
  });

  it.runIf(hasJournalctl)("fails with journal_unavailable when journalctl finds no journal files (real journalctl)", async () => {
    const empty = join(base, "empty");
    mkdirSync(empty, { recursive: true });
    const r = await run({ unit: "nginx" }, { directory: empty });
    expect(r.error).toMatchObject({ code: "journal_unavailable" });
    expect(r.error!.hint).toMatch(/tail_file/);
  });

  it.runIf(hasJournalctl && noSystemJournal)("fails with journal_unavailable on this host, which has journalctl but keeps no journal", async () => {
    const r = await run({ lines: 5 });
    expect(r.error).toMatchObject({ code: "journal_unavailable" });
  });

  it("refuses a bad skills.read_journal setting, naming it", async () => {
    const r = await run({}, { directory: 42 });
    expect(r.error).toMatchObject({ code: "not_configured" });
    expect(r.error!.message).toContain("skills.read_journal.directory");
  });

  it.runIf(process.env.CI === "true")("has journalctl and systemd-journal-remote under CI (installed by .ci/run), so the real-journal tests below run", () => {
    expect(hasJournalctl).toBeTruthy();
    expect(journalRemote).toBeTruthy();
  });

  describe.runIf(hasJournalctl && journalRemote)("against a real journal file (built with systemd-journal-remote)", () => {
    let dir: string;
    const now = Date.now() * 1000;
    beforeAll(() => {
      dir = join(base, "journal");
      mkdirSync(dir);
      const entry = (ageSec: number, fields: Record<string, string>) =>
        Object.entries({ __REALTIME_TIMESTAMP: String(now - ageSec * 1_000_000), __MONOTONIC_TIMESTAMP: String(10_000_000_000 - ageSec * 1_000_000), _BOOT_ID: "0123456789abcdef0123456789abcdef", _HOSTNAME: "h", ...fields })
          .map(([k, v]) => `${k}=${v}\n`)
          .join("");
      const exportText = [
        entry(7200, { MESSAGE: "old start", PRIORITY: "6", _PID: "100", _SYSTEMD_UNIT: "nginx.service", SYSLOG_IDENTIFIER: "nginx" }),
        entry(30, { MESSAGE: "nginx started", PRIORITY: "6", _PID: "123", _SYSTEMD_UNIT: "nginx.service", SYSLOG_IDENTIFIER: "nginx" }),
        entry(20, { MESSAGE: "upstream timed out", PRIORITY: "3", _PID: "123", _SYSTEMD_UNIT: "nginx.service", SYSLOG_IDENTIFIER: "nginx" }),
        entry(15, { MESSAGE: "Accepted publickey for ops", PRIORITY: "6", _PID: "456", _SYSTEMD_UNIT: "ssh.service", SYSLOG_IDENTIFIER: "sshd" }),
        entry(10, { MESSAGE: "Out of memory: Killed process 789", PRIORITY: "2", _TRANSPORT: "kernel", SYSLOG_IDENTIFIER: "kernel" }),
      ].join("\n") + "\n"; // every entry, the last one too, ends with an empty line
      execFileSync(journalRemote!, ["-o", join(dir, "test.journal"), "-"], { input: exportText, stdio: ["pipe", "ignore", "ignore"] });
    });

    it("returns the newest entries in time order", async () => {
      const r = await run({ lines: 2 }, { directory: dir });
      expect(r.success).toBe(true);
      expect(r.output).toMatchObject({
        returned: 2,
        entries: [
          { unit: "ssh.service", identifier: "sshd", priority: "info", pid: 456, message: "Accepted publickey for ops" },
          { unit: null, identifier: "kernel", priority: "crit", message: "Out of memory: Killed process 789" },
        ],
      });
    });

    const messages = async (params: Record<string, unknown>) => {
      const r = await run(params, { directory: dir });
      expect(r.success, JSON.stringify(r.error)).toBe(true);
      return (r.output as { entries: { message: string }[] }).entries.map((e) => e.message);
    };

    it("filters by unit, priority, since and grep", async () => {
      expect(await messages({ unit: "nginx" })).toEqual(["old start", "nginx started", "upstream timed out"]);
      expect(await messages({ unit: "nginx", since: "1h ago" })).toEqual(["nginx started", "upstream timed out"]);
      expect(await messages({ unit: "nginx", since: "1h ago", lines: 1 })).toEqual(["upstream timed out"]);
      expect(await messages({ priority: "err" })).toEqual(["upstream timed out", "Out of memory: Killed process 789"]);
      expect(await messages({ grep: "killed" })).toEqual(["Out of memory: Killed process 789"]);
      expect(await messages({ grep: "killed|Accepted" })).toEqual(["Accepted publickey for ops"]);
      expect(await messages({ grep: "no such text" })).toEqual([]);
    });

    it("bounds the window's end with until: lines then counts back from there, not from now", async () => {
      expect(await messages({ until: "1h ago" })).toEqual(["old start"]);
      expect(await messages({ unit: "nginx", until: "25s ago" })).toEqual(["old start", "nginx started"]);
      expect(await messages({ since: "1h ago", until: "12s ago", lines: 2 })).toEqual(["upstream timed out", "Accepted publickey for ops"]);
      const r = await run({ since: "1h ago", until: "2h ago" }, { directory: dir });
      expect(r.error).toMatchObject({ code: "invalid_argument" });
      expect(r.error!.message).toMatch(/param "until": .* is before since/);
    });
  });

  it("passes the new-tool checklist with no error", () => {
    expect(lintSkill(readJournal).filter((f) => f.severity === "error")).toEqual([]);
  });
});
