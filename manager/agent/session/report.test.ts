/** The no-model report: Markdown that summarises each step and links it to its audit row, never raw JSON twice. */
import { describe, expect, test } from "vitest";
import { fallbackReport, summariseOutput } from "./report.ts";
import type { EvidenceItem } from "./evidence.ts";
import type { RouteDecision } from "../router/router.ts";
import type { Playbook } from "../../playbooks/parse.ts";

const decision = { path: "rules", fallbackCause: "", reason: "trigger rule matched" } as unknown as RouteDecision;
const playbook = { name: "host_resource_diagnosis", displayName: "Host resources" } as unknown as Playbook;

function item(step: number, tool: string, content: unknown, over: Partial<EvidenceItem> = {}): EvidenceItem {
  const c = content as { success?: boolean };
  return { step, tool, edgeId: "web-01", args: {}, success: Boolean(c.success), content: JSON.stringify(content), auditSeq: 40 + step, deduped: false, ...over };
}

const stdout = Array.from({ length: 30 }, (_, i) => `line ${i + 1} of the log`).join("\n") + "\n";
const items = [
  item(1, "host_load", { success: true, output: { load1: 0.42, cpus: 2, top: [{ pid: 1, cmd: "init" }, { pid: 2 }] } }),
  item(2, "exec", { success: false, output: { exit_code: 1, stdout, stderr: "grep: no match\n", ran: "grep x /var/log/syslog" }, error: { code: "exit_status", message: "the command exited with status 1: grep: no match", hint: "read stderr and stdout" } }),
  item(3, "host_load", { success: true, output: { load1: 0.42 } }, { deduped: true, auditSeq: 41 }),
];

describe("fallbackReport", () => {
  const md = fallbackReport("web-01 is slow", decision, playbook, "web-01", items, [{ tool: "read_journal", reason: "the input names no {{unit}}" }], "ses_abc");

  test("a table of steps, each linked to its audit row within the session", () => {
    expect(md).toContain("| # | Tool | Edge | Result | Audit |");
    expect(md).toContain("| 1 | host_load | web-01 | ok | [audit row #41](/admin/audit?session=ses_abc&tool=host_load) |");
    expect(md).toContain("| 2 | exec | web-01 | failed | [audit row #42](/admin/audit?session=ses_abc&tool=exec) |");
    expect(md).toContain("ongrid audit list --session ses_abc");
  });

  test("a failed step shows its error code, message and hint, then its output as text, not escaped JSON", () => {
    expect(md).toContain("**Failed** `exit_status`: the command exited with status 1: grep: no match");
    expect(md).toContain("Hint: read stderr and stdout");
    expect(md).toContain("- exit_code: `1`");
    expect(md).toMatch(/stdout:\n\n```text\nline 1 of the log\nline 2 of the log\n/);
    expect(md).toContain("(20 more lines in the audit row)");
    expect(md).not.toContain("line 11 of the log");
    expect(md).not.toContain("\\n");
  });

  test("no step's raw result JSON is copied into the report", () => {
    for (const e of items) expect(md).not.toContain(e.content);
    expect(md).not.toContain('"success"');
  });

  test("a deduplicated step points at the earlier result instead of repeating it", () => {
    const third = md.slice(md.indexOf("### 3."));
    expect(third).toContain("Same call as an earlier step");
    expect(third).not.toContain("load1");
  });

  test("what was not checked is listed", () => {
    expect(md).toContain("- read_journal: the input names no {{unit}}");
  });
});

describe("summariseOutput", () => {
  test("text containing a fence cannot end its block", () => {
    const lines = summariseOutput({ stdout: "a\n```\n# injected heading\n" });
    const block = lines.join("\n");
    const fence = lines.find((l) => l.startsWith("```"))!;
    expect(fence.length).toBeGreaterThan(4 + "text".length - 1);
    expect(block).toContain("# injected heading");
    // The closing fence is the same length as the opening one and longer than the text's.
    expect(lines.filter((l) => l === fence.replace(/text$/, ""))).toHaveLength(1);
  });

  test("no output is said in words, never null", () => {
    expect(summariseOutput(null)).toEqual(["No output."]);
    expect(summariseOutput(undefined)).toEqual(["No output."]);
  });

  test("arrays and many fields are shortened, with how many were left out", () => {
    expect(summariseOutput([1, 2, 3, 4, 5, 6, 7])).toEqual(["7 items:", "- `1`", "- `2`", "- `3`", "- `4`", "- `5`", "- … 2 more"]);
    const wide = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, i]));
    expect(summariseOutput(wide).at(-1)).toBe("- … 8 more fields in the audit row");
  });

  test("a list of log records shows each record's level, source and message", () => {
    const lines = summariseOutput({ entries: [{ time: "2026-12-06T03:00:00Z", unit: "nginx.service", identifier: "nginx", priority: "err", pid: 812, message: 'unknown directive "lisen" in /etc/nginx/conf.d/app.conf:3' }] });
    expect(lines).toEqual(["- entries: 1 item:", '  - `[err] nginx.service: unknown directive "lisen" in /etc/nginx/conf.d/app.conf:3`']);
  });

  test("any other record shows its telling fields first (state, reason, name), whatever its depth", () => {
    const pod = { kind: "Pod", apiVersion: "v1", metadata: { name: "cart-7d9f", namespace: "shop", uid: "0f1e", labels: { app: "cart" } }, spec: { nodeName: "k8s-node-7" }, status: { phase: "Running", containerStatuses: [{ name: "cart", restartCount: 14, lastState: { terminated: { reason: "OOMKilled", exitCode: 137 } } }] } };
    const line = summariseOutput({ items: [pod] })[1];
    expect(line).toContain("status.containerStatuses[0].lastState.terminated.reason=OOMKilled");
    expect(line).toContain("status.containerStatuses[0].restartCount=14");
    expect(line).toContain("metadata.name=cart-7d9f");
    expect(line.indexOf("reason=OOMKilled")).toBeLessThan(line.indexOf("metadata.uid") === -1 ? Infinity : line.indexOf("metadata.uid"));
  });
});
