import { pino } from "pino";
import { describe, expect, test } from "vitest";
import type { Playbook } from "../../playbooks/parse.ts";
import { createPlaybookRegistry, GENERIC_PLAYBOOK } from "../../playbooks/registry.ts";
import { routeByRules } from "./rules.ts";

function pb(name: string, triggers: string[] = [], tags: string[] = []): Playbook {
  return {
    name,
    displayName: name,
    description: `${name} incidents`,
    category: "oncall",
    platforms: ["any"],
    tags,
    triggers,
    examples: [],
    allowedTools: [],
    riskLevel: "low",
    fallbackSteps: [],
    body: "## Trigger conditions\ntext",
    file: `/playbooks/${name}/SKILL.md`,
    source: "external",
    fingerprint: name,
  };
}
const generic = pb(GENERIC_PLAYBOOK, [], ["incident"]);

describe("routeByRules", () => {
  test("a trigger (weight 3) outweighs two tags (weight 1 each)", () => {
    const tagged = pb("tagged", [], ["disk", "latency"]);
    const triggered = pb("triggered", ["slow disk"]);
    const r = routeByRules("slow disk and high latency on db-2", [generic, tagged, triggered]);
    expect(r.skillName).toBe("triggered");
    expect(r.matched).toEqual(["slow disk"]);
    expect(r.reason).toContain('"slow disk"');
    expect(r.reason).toContain("also matched tagged");
    // Three tags beat one trigger only when they outscore it (4 > 3).
    const moreTags = pb("tagged", [], ["disk", "latency", "db-2", "high"]);
    expect(routeByRules("slow disk and high latency on db-2", [generic, moreTags, triggered]).skillName).toBe("tagged");
  });

  test("a tag that is also a trigger of the same playbook counts once, as a trigger", () => {
    const both = pb("both", ["oom"], ["oom"]);
    const r = routeByRules("oom on web-1", [generic, both]);
    expect(r.matched).toEqual(["oom"]);
    expect(r.reason).toBe('rules: matched "oom" of both');
  });

  test("ASCII triggers and tags need word boundaries; case does not matter", () => {
    const host = pb("host", ["oom"], ["restart"]);
    expect(routeByRules("the server room is hot", [generic, host]).skillName).toBe(GENERIC_PLAYBOOK);
    expect(routeByRules("zoom calls drop", [generic, host]).skillName).toBe(GENERIC_PLAYBOOK);
    expect(routeByRules("nginx keeps restarting", [generic, host]).skillName).toBe(GENERIC_PLAYBOOK);
    expect(routeByRules("OOM-killed java on web-1", [generic, host]).skillName).toBe("host");
    expect(routeByRules("kernel: oom", [generic, host]).skillName).toBe("host");
    expect(routeByRules("(oom)", [generic, host]).skillName).toBe("host");
  });

  test("Chinese triggers match as substrings, with no spaces around them", () => {
    const disk = pb("disk", ["磁盘满"]);
    const net = pb("net", ["连接超时"]);
    expect(routeByRules("web-3上的磁盘满了怎么办", [generic, disk, net]).skillName).toBe("disk");
    expect(routeByRules("redis连接超时了", [generic, disk, net]).skillName).toBe("net");
    expect(routeByRules("磁盘还有很多空间", [generic, disk, net]).skillName).toBe(GENERIC_PLAYBOOK);
  });

  test("nothing matched → generic_oncall with confidence 0.2; generic_oncall itself is never scored", () => {
    const genericWithTrigger = pb(GENERIC_PLAYBOOK, ["outage"], ["outage"]);
    const net = pb("net", ["dns"]);
    const r = routeByRules("big outage everywhere", [genericWithTrigger, net]);
    expect(r).toEqual({ skillName: GENERIC_PLAYBOOK, confidence: 0.2, reason: expect.stringMatching(/^rules: no playbook trigger or tag/), matched: [] });
    expect(routeByRules("anything", []).skillName).toBe(GENERIC_PLAYBOOK);
  });

  test("ties: the longer matched text wins, then the name; the order of playbooks does not matter", () => {
    // The shorter match has the earlier name, so only the length can make "z_long" win.
    const short = pb("a_short", ["disk"]);
    const long = pb("z_long", ["disk full"]);
    for (const order of [[short, long], [long, short]]) expect(routeByRules("disk full on db-2", [generic, ...order]).skillName).toBe("z_long");
    const a = pb("a_disk", ["disk"]);
    const b = pb("b_disk", ["disk"]);
    const c = pb("c_disk", ["disk"]);
    const perms = [[a, b, c], [c, b, a], [b, c, a], [c, a, b]];
    const picks = perms.map((order) => routeByRules("disk on db-2", [generic, ...order]));
    for (const p of picks) expect(p).toEqual(picks[0]);
    expect(picks[0].skillName).toBe("a_disk");
  });

  test("confidence: higher for a clear winner than a contested one, never above 0.85 and never below the no-match 0.2", () => {
    const clear = routeByRules("slow disk on db-2", [generic, pb("a", ["slow disk"]), pb("b", [], ["x"])]);
    const contested = routeByRules("slow disk on db-2", [generic, pb("a", ["slow disk"]), pb("b", [], ["db-2", "on"])]);
    expect(clear.skillName).toBe("a");
    expect(contested.skillName).toBe("a");
    expect(clear.confidence).toBeGreaterThan(contested.confidence);
    expect(contested.confidence).toBeGreaterThan(0.2);
    const many = routeByRules("a b c d e f", [generic, pb("many", ["a", "b", "c", "d", "e", "f"])]);
    expect(many.confidence).toBe(0.85);
  });

  test("the built-in playbooks: typical alerts in both languages", () => {
    const registry = createPlaybookRegistry({ dirs: [], disabled: [], platform: "linux", log: pino({ level: "silent" }) });
    const all = [...registry.current().playbooks.values()];
    const cases: Array<[string, string]> = [
      ["nginx.service keeps restarting", "service_diagnosis"],
      ["DNS resolution fails for api.internal: NXDOMAIN", "network_diagnosis"],
      ["disk full on db-2: no space left on device", "host_resource_diagnosis"],
      ["pods in CrashLoopBackOff after the deploy", "container_diagnosis"],
      ["订单服务一直重启", "service_diagnosis"],
      ["访问 api.internal 连接超时", "network_diagnosis"],
      ["web-3 磁盘满了", "host_resource_diagnosis"],
      ["something is wrong with prod", GENERIC_PLAYBOOK],
    ];
    for (const [text, want] of cases) expect(routeByRules(text, all).skillName, text).toBe(want);
  });
});
