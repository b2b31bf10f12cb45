/** Eval anchors (J6): what an eval.yaml may hold, and how a bad one is refused. */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, describe, expect, test } from "vitest";
import { createPlaybookRegistry } from "../playbooks/registry.ts";
import { answerFor, loadEvalCases, parseEvalFile, requireNoProblems } from "./cases.ts";

const names = new Set(["host_resource_diagnosis", "generic_oncall"]);
const parse = (text: string) => parseEvalFile(text, "/pb/x/eval.yaml", "host_resource_diagnosis", names);
const ok = `cases:
  - id: disk-full
    lang: en
    kind: clear
    incident: "disk full on web-1"
    expected_playbook: host_resource_diagnosis
    fixtures:
      host_files: { output: { path: /var, entries: [] } }
      probe_dns: { error: { code: timeout, message: "no answer" } }
    evidence: [host_files]
    findings: ["/var"]
    must_not: ["NXDOMAIN"]
  - id: recipe
    lang: zh
    kind: out_of_scope
    incident: "红烧肉怎么做"
    expected_playbook: null
`;

describe("parseEvalFile", () => {
  test("reads a case with its fixtures, evidence, findings and must_not, and an out-of-scope case", () => {
    const r = parse(ok);
    expect(r.problems).toEqual([]);
    expect(r.cases.map((c) => [c.id, c.expectedPlaybook, c.kind])).toEqual([
      ["disk-full", "host_resource_diagnosis", "clear"],
      ["recipe", null, "out_of_scope"],
    ]);
    expect(r.cases[0]).toMatchObject({ anchor: "host_resource_diagnosis", evidence: ["host_files"], findings: ["/var"], mustNot: ["NXDOMAIN"] });
    expect(r.cases[0].fixtures.probe_dns).toEqual({ error: { code: "timeout", message: "no answer" } });
  });

  test.each([
    ["not YAML", "cases: [", "|yaml"],
    ["no cases", "{}", "cases|required"],
    ["a bad id", ok.replace("id: disk-full", "id: Disk Full"), "cases[0].id|pattern"],
    ["an unknown kind", ok.replace("kind: clear", "kind: easy"), "cases[0].kind|enum"],
    ["a fixture with neither output nor error", ok.replace("host_files: { output: { path: /var, entries: [] } }", "host_files: { result: 1 }"), "cases[0].fixtures.host_files"],
    ["a fixture keyed by something that is no skill key", ok.replace("probe_dns:", "'rm -rf /':"), "cases[0].fixtures"],
    ["an unknown playbook", ok.replace("expected_playbook: host_resource_diagnosis", "expected_playbook: redis_diagnosis"), "cases[0].expected_playbook|known_playbook"],
    ["evidence without a fixture", ok.replace("evidence: [host_files]", "evidence: [host_files, host_load]"), "cases[0].evidence|fixture"],
    ["out_of_scope with a playbook", ok.replace("kind: clear", "kind: out_of_scope"), "cases[0].kind|out_of_scope"],
  ])("refuses %s, naming the field and rule", (_what, text, want) => {
    const r = parse(text);
    expect(r.problems.map((p) => `${p.field}|${p.rule}`).join("\n")).toContain(want);
    expect(() => requireNoProblems(r.problems)).toThrow(/eval\.yaml/);
  });
});

describe("answers by params", () => {
  test("the first answer whose when the call's params include wins; one without when is the default", () => {
    const text = ok.replace(
      "host_files: { output: { path: /var, entries: [] } }",
      "kubernetes_get:\n        answers:\n          - { when: { kind: pods, namespace: shop }, output: { items: [pod] } }\n          - { when: { kind: events }, error: { code: unavailable, message: down } }\n          - { output: { items: [] } }\n      host_files: { output: { path: /var, entries: [] } }",
    );
    const r = parse(text);
    expect(r.problems).toEqual([]);
    const f = r.cases[0].fixtures.kubernetes_get;
    expect(answerFor(f, { kind: "pods", namespace: "shop", edge_id: "e" })).toEqual({ when: { kind: "pods", namespace: "shop" }, output: { items: ["pod"] } });
    expect(answerFor(f, { kind: "pods", namespace: "other" })).toEqual({ output: { items: [] } });
    expect(answerFor(f, { kind: "events" })).toMatchObject({ error: { code: "unavailable" } });
    const noDefault = parse(text.replace("          - { output: { items: [] } }\n", ""));
    expect(answerFor(noDefault.cases[0].fixtures.kubernetes_get, { kind: "nodes" })).toBeUndefined();
    expect(answerFor(r.cases[0].fixtures.host_files, { path: "/anything" })).toEqual({ output: { path: "/var", entries: [] } });
  });

  test("an answers entry with neither output nor error is refused", () => {
    const r = parse(ok.replace("host_files: { output: { path: /var, entries: [] } }", "host_files: { answers: [ { when: { path: /var } } ] }"));
    expect(r.problems.map((p) => p.field).join()).toContain("cases[0].fixtures.host_files.answers[0]");
  });
});

describe("loadEvalCases", () => {
  const dir = mkdtempSync(join(tmpdir(), "ongrid-eval-cases-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("reads eval.yaml beside each playbook's SKILL.md, the built-in anchors too, and refuses an id used twice", () => {
    mkdirSync(join(dir, "disk_full"));
    writeFileSync(join(dir, "disk_full", "SKILL.md"), "---\nname: disk_full\ndescription: d\n---\n## Trigger conditions\nx\n");
    writeFileSync(join(dir, "disk_full", "eval.yaml"), ok.replace(/host_resource_diagnosis/g, "disk_full"));
    const registry = createPlaybookRegistry({ dirs: [dir], disabled: [], log: pino({ level: "silent" }) });
    const r = loadEvalCases(registry.current().playbooks.values());
    const ours = r.cases.filter((c) => c.anchor === "disk_full");
    expect(ours.map((c) => c.id)).toEqual(["disk-full", "recipe"]);
    // The built-in anchors are read too; an id both use is refused.
    writeFileSync(join(dir, "disk_full", "eval.yaml"), ok.replace(/host_resource_diagnosis/g, "disk_full").replace("id: disk-full", `id: ${r.cases.find((c) => c.anchor !== "disk_full")!.id}`));
    const again = loadEvalCases(registry.current().playbooks.values());
    expect(r.cases.some((c) => c.anchor !== "disk_full")).toBe(true);
    expect(again.problems.map((p) => p.rule)).toContain("unique");
  });
});
