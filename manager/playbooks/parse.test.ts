import { describe, expect, test } from "vitest";
import { parsePlaybook, type PlaybookProblem } from "./parse.ts";

const BODY = "## Trigger conditions\nx\n## Required evidence\nx\n## Recommended tool order\nx\n## Stop conditions\nx\n## Report format\nx\n";
const doc = (fm: string, body = BODY) => `---\n${fm}\n---\n${body}`;
const parse = (text: string) => parsePlaybook(text, "/pb/x/SKILL.md", "external");
const errors = (ps: PlaybookProblem[]) => ps.filter((p) => p.severity === "error").map((p) => `${p.field}|${p.rule}|${p.message}`);
const warnings = (ps: PlaybookProblem[]) => ps.filter((p) => p.severity === "warning").map((p) => `${p.field}|${p.rule}`);

describe("parsePlaybook", () => {
  test("reads every frontmatter key and the body", () => {
    const r = parse(
      doc(`name: disk_full
display_name: Disk full
description: A filesystem is out of space or inodes.
category: storage
platforms: [linux]
tags: [disk]
triggers: ["disk full", "磁盘满"]
allowed_tools: [host_files, restart_service]
risk_level: medium
fallback_steps:
  - tool: host_files
    args: { path: "{{path}}", depth: 1 }
    note: biggest directories first
  - tool: host_load`),
    );
    expect(errors(r.problems)).toEqual([]);
    expect(warnings(r.problems)).toEqual([]);
    expect(r.playbook).toMatchObject({
      name: "disk_full",
      displayName: "Disk full",
      category: "storage",
      platforms: ["linux"],
      triggers: ["disk full", "磁盘满"],
      allowedTools: ["host_files", "restart_service"],
      riskLevel: "medium",
      fallbackSteps: [
        { tool: "host_files", args: { path: "{{path}}", depth: 1 }, note: "biggest directories first" },
        { tool: "host_load", args: {} },
      ],
      source: "external",
      file: "/pb/x/SKILL.md",
    });
    expect(r.playbook!.body.startsWith("## Trigger conditions")).toBe(true);
    expect(r.playbook!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  test("defaults: display name, category, platforms, risk level", () => {
    const r = parse(doc("name: a1\ndescription: d"));
    expect(r.playbook).toMatchObject({ displayName: "a1", category: "oncall", platforms: ["any"], riskLevel: "low", tags: [], triggers: [], allowedTools: [], fallbackSteps: [] });
  });

  test("Agent Skills frontmatter loads: allowed-tools as a string or a list, license, metadata", () => {
    const r = parse(doc('name: diagnose-mysql-connection-pool\ndescription: d\nlicense: Apache-2.0\nallowed-tools: "probe_tcp read_journal, Bash(git:*)"\nmetadata:\n  author: sre\n  version: 2'));
    expect(errors(r.problems)).toEqual([]);
    expect(r.playbook!.allowedTools).toEqual(["probe_tcp", "read_journal"]);
    expect(r.playbook!.license).toBe("Apache-2.0");
    expect(r.playbook!.metadata).toEqual({ author: "sre", version: 2 });
    // A tool spec that is not an ongrid key is reported, not silently dropped.
    expect(warnings(r.problems)).toEqual(["allowed-tools|pattern"]);
    const list = parse(doc("name: a2\ndescription: d\nallowed-tools: [probe_tcp]\nallowed_tools: [host_load]"));
    expect(list.playbook!.allowedTools.sort()).toEqual(["host_load", "probe_tcp"]);
  });

  test("CRLF line ends and a byte-order mark are accepted", () => {
    const r = parse(`\uFEFF---\r\nname: crlf\r\ndescription: d\r\n---\r\n${BODY.replace(/\n/g, "\r\n")}`);
    expect(errors(r.problems)).toEqual([]);
    expect(r.playbook!.name).toBe("crlf");
  });

  test.each([
    ["no frontmatter", "# Just markdown\n", "|frontmatter|must start with a YAML frontmatter block"],
    ["unclosed frontmatter", "---\nname: a\ndescription: d\n", "|frontmatter|the frontmatter block is not closed"],
    ["malformed YAML", "---\nname: [a\ndescription: d\n---\nbody\n", "|yaml|frontmatter is not valid YAML"],
    ["duplicate YAML keys", "---\nname: a\nname: b\ndescription: d\n---\nbody\n", "|yaml|frontmatter is not valid YAML"],
    ["a list instead of a mapping", "---\n- a\n- b\n---\nbody\n", "|frontmatter|frontmatter must be a YAML mapping"],
  ])("refuses %s, naming the rule", (_what, text, expected) => {
    const r = parse(text);
    expect(r.playbook).toBeUndefined();
    expect(errors(r.problems)).toHaveLength(1);
    expect(errors(r.problems)[0]).toContain(expected);
  });

  test("a YAML error names its line in the file", () => {
    const r = parse("---\nname: a\ndescription: d\ntags: [x\n---\nbody\n");
    // tags is on the frontmatter's line 3, the file's line 4; the parser reports the line after the open bracket.
    expect(errors(r.problems)[0]).toMatch(/at line 5 of the file: Flow sequence/);
  });

  test("missing name and description, bad values: every field named with its rule at once", () => {
    const r = parse(doc("display_name: X\nrisk_level: extreme\nplatforms: [plan9]\ntriggers: oom\nfallback_steps:\n  - args: {}\n  - tool: Bad-Key"));
    expect(r.playbook).toBeUndefined();
    const e = errors(r.problems).map((l) => l.split("|").slice(0, 2).join("|"));
    expect(e).toEqual(
      expect.arrayContaining(["name|required", "description|required", "risk_level|enum", "platforms[0]|enum", "triggers|type", "fallback_steps[0].tool|required", "fallback_steps[1].tool|pattern"]),
    );
  });

  test("a name that is not lower case is refused", () => {
    expect(errors(parse(doc("name: Network Diagnosis\ndescription: d")).problems).join()).toContain("name|pattern");
  });

  test("fallback args may only use the five placeholders", () => {
    const r = parse(doc('name: a\ndescription: d\nfallback_steps:\n  - tool: probe_http\n    args: { url: "{{url}}", headers: ["{{token}}"] }'));
    expect(r.playbook).toBeUndefined();
    expect(errors(r.problems)).toEqual(['fallback_steps[0].args.headers[0]|placeholder|{{token}} is not a placeholder; use one of {{url}}, {{host}}, {{port}}, {{unit}}, {{path}}']);
  });

  test("a fallback step's when: placeholder kinds are read, and anything else is refused naming the field and rule", () => {
    const ok = parse(doc('name: a\ndescription: d\nfallback_steps:\n  - tool: probe_dns\n    args: { name: "{{host}}" }\n    when: { host: name }'));
    expect(errors(ok.problems)).toEqual([]);
    expect(ok.playbook!.fallbackSteps[0]).toEqual({ tool: "probe_dns", args: { name: "{{host}}" }, when: { host: "name" } });
    const badKind = parse(doc('name: a\ndescription: d\nfallback_steps:\n  - tool: probe_dns\n    when: { host: hostname }'));
    expect(badKind.playbook).toBeUndefined();
    expect(errors(badKind.problems).map((l) => l.split("|").slice(0, 2).join("|"))).toEqual(["fallback_steps[0].when.host|enum"]);
    const badName = parse(doc('name: a\ndescription: d\nfallback_steps:\n  - tool: probe_dns\n    when: { token: ip }'));
    expect(badName.playbook).toBeUndefined();
    expect(errors(badName.problems).join()).toContain("fallback_steps[0].when");
  });

  test("an empty body is refused; a body without the expected sections is a warning", () => {
    expect(errors(parse(doc("name: a\ndescription: d", "\n  \n")).problems)).toEqual(["body|required|the Markdown body after the frontmatter is empty; it is the playbook"]);
    const r = parse(doc("name: a\ndescription: d", "## Trigger conditions\nx\n"));
    expect(r.playbook).toBeDefined();
    const w = r.problems.find((p) => p.rule === "sections")!;
    expect(w.severity).toBe("warning");
    expect(w.message).toContain('"## Required evidence"');
    expect(w.message).not.toContain("Trigger conditions");
  });

  test("unknown frontmatter keys load with a warning naming the key", () => {
    const r = parse(doc("name: a\ndescription: d\nowner: team-sre"));
    expect(r.playbook).toBeDefined();
    expect(warnings(r.problems)).toEqual(["owner|known_key"]);
  });
});
