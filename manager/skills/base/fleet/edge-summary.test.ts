import { describe, expect, it } from "vitest";
import { createGetEdgeSummary, journalFindings } from "./edge-summary.ts";
import { fakeDeps, loadOutput, runTool, type FakeEdge } from "./fleet.testkit.ts";

const fleet: FakeEdge[] = [
  { id: "web-1", labels: { team: "a" } },
  { id: "web-2", labels: { team: "a" }, skills: ["host_load"] },
  { id: "web-3", labels: { team: "a" }, online: false, lastSeen: new Date("2025-01-30T10:00:00Z") },
  { id: "db-1", labels: { team: "b" } },
];

const disk = { filesystems: [{ mount: "/", fs_type: "ext4", read_only: false, used_pct: 95.5, avail_bytes: 10, inodes_used_pct: 3 }, { mount: "/cdrom", fs_type: "iso9660", read_only: true, used_pct: 100 }], total: 2 };
const journal = {
  entries: [
    { time: "2025-01-31T13:00:00.000Z", unit: "nginx.service", identifier: "systemd", priority: "warning", pid: 1, message: "nginx.service: Failed with result 'exit-code'." },
    { time: "2025-01-31T13:00:00.000Z", unit: "nginx.service", identifier: "systemd", priority: "err", pid: 1, message: "Failed to start nginx.service - A high performance web server." },
    { time: "2025-01-31T13:05:00.000Z", unit: null, identifier: "kernel", priority: "err", pid: null, message: "EXT4-fs error (device vda1): checksum invalid" },
    { time: "2025-01-31T13:06:00.000Z", unit: "cron.service", identifier: "CRON", priority: "warning", pid: 9, message: "pam_unix(cron:session): something odd" },
  ],
  returned: 4,
};

describe("journalFindings", () => {
  it("finds units systemd reported failing and the newest error entries", () => {
    const f = journalFindings(journal.entries, 10);
    expect(f.failed_units).toEqual([{ unit: "nginx.service", last_failed_at: "2025-01-31T13:00:00.000Z", result: "exit-code", failures: 2 }]);
    expect(f.error_count).toBe(2);
    expect(f.warning_count).toBe(2);
    expect(f.recent_errors.map((e) => e.message)).toEqual(["EXT4-fs error (device vda1): checksum invalid", "Failed to start nginx.service - A high performance web server."]);
    expect(journalFindings(journal.entries, 1).recent_errors).toHaveLength(1);
  });

  it("takes the unit from the message when the entry has none", () => {
    const f = journalFindings([{ time: null, unit: null, identifier: "systemd", priority: "warning", message: "backup@db.service: Failed with result 'timeout'." }], 5);
    expect(f.failed_units).toEqual([{ unit: "backup@db.service", last_failed_at: null, result: "timeout", failures: 1 }]);
  });
});

describe("get_edge_summary", () => {
  it("combines host_load, host_files and read_journal into one snapshot with concerns, each called as the caller", async () => {
    const { deps, calls } = fakeDeps(fleet, (i) => ({ output: i.key === "host_load" ? loadOutput(8, 4, 95) : i.key === "host_files" ? disk : journal }));
    const r = await runTool(createGetEdgeSummary(deps), { edge_id: "web-1", window: "6h" }, { sessionId: "chat-1" });
    expect(r.success).toBe(true);
    const out = r.output as any;
    expect(out.failed_parts).toEqual([]);
    expect(out.load).toMatchObject({ ok: true, load_per_cpu: 2, cpus: 4, memory_used_pct: 95 });
    expect(out.disk.filesystems.map((f: any) => f.mount)).toEqual(["/"]); // the read-only image is left out
    expect(out.journal).toMatchObject({ ok: true, since: "6h ago", error_count: 2 });
    expect(out.concerns).toEqual([
      "load: 8 on 4 CPUs = 2 per CPU (over 1)",
      "memory: 95% used (over 90%)",
      "disk: / is 95.5% used (over 90%)",
      "units: nginx.service failed (exit-code) at 2025-01-31T13:00:00.000Z",
      "logs: 2 error entries since 6h ago",
    ]);
    expect(calls.map((c) => c.key).sort()).toEqual(["host_files", "host_load", "read_journal"]);
    for (const c of calls) expect(c).toMatchObject({ edgeId: "web-1", sessionId: "chat-1", caller: { userId: "olga" } });
    expect(calls.find((c) => c.key === "read_journal")!.params).toEqual({ priority: "warning", since: "6h ago", lines: 500 });
  });

  it("returns the parts that answered when one fails, the failed one saying what failed", async () => {
    const { deps } = fakeDeps(fleet, (i) =>
      i.key === "read_journal"
        ? { error: { code: "journal_unavailable", message: "there is no systemd journal on this host", hint: "use tail_file" } }
        : { output: i.key === "host_load" ? loadOutput(1) : disk },
    );
    const out = (await runTool(createGetEdgeSummary(deps), { edge_id: "web-1" })).output as any;
    expect(out.failed_parts).toEqual(["journal"]);
    expect(out.journal).toEqual({ ok: false, skill: "read_journal", error: { code: "journal_unavailable", message: "there is no systemd journal on this host", hint: "use tail_file" } });
    expect(out.load.ok).toBe(true);
    expect(out.disk.ok).toBe(true);
  });

  it("does not call skills the edge does not offer and says so", async () => {
    const { deps, calls } = fakeDeps(fleet, () => ({ output: loadOutput(1) }));
    const out = (await runTool(createGetEdgeSummary(deps), { edge_id: "web-2" })).output as any;
    expect(calls.map((c) => c.key)).toEqual(["host_load"]);
    expect(out.failed_parts).toEqual(["disk", "journal"]);
    expect(out.disk.error.code).toBe("not_offered");
  });

  it("answers an edge outside the caller's reach exactly like an unknown one, and an offline edge as unavailable", async () => {
    const { deps, calls } = fakeDeps(fleet, () => ({ output: {} }));
    const tina = { caller: { userId: "tina", role: "viewer", reach: ["team=a"] } };
    const hidden = await runTool(createGetEdgeSummary(deps), { edge_id: "db-1" }, tina);
    const unknown = await runTool(createGetEdgeSummary(deps), { edge_id: "nope-1" }, tina);
    expect(hidden.error).toEqual(unknown.error && { ...unknown.error, message: 'unknown edge "db-1"' });
    expect(hidden.error!.code).toBe("not_found");
    const offline = await runTool(createGetEdgeSummary(deps), { edge_id: "web-3" }, tina);
    expect(offline.error).toMatchObject({ code: "unavailable", message: 'edge "web-3" is offline (last seen 2025-01-30T10:00:00.000Z); nothing can be measured' });
    expect(calls).toEqual([]);
  });
});
