import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { OngridError } from "../../../skill/errors.ts";
import { startScriptedModel, type Reply, type Responder, type ScriptedModel } from "../../../test/support/openai-server.ts";
import { BODY_SECTIONS } from "../../playbooks/parse.ts";
import { BUILTIN_PLAYBOOK_DIR, createPlaybookRegistry, GENERIC_PLAYBOOK, type PlaybookRegistry } from "../../playbooks/registry.ts";
import { createModelClient, type ModelClient, type ModelSettings } from "../llm.ts";
import { createDirectoryRecall, indexLine, type Recall } from "./recall.ts";
import { createRouter, MAX_ROUTE_TEXT, routerMenu, type RouteDecision, type RouterOptions } from "./router.ts";
import { createRanker } from "./rank.ts";

const log = pino({ level: "silent" });
const BUILTIN_NAMES = ["container_diagnosis", "generic_oncall", "host_resource_diagnosis", "network_diagnosis", "service_diagnosis"];
const BODY = BODY_SECTIONS.map((s) => `## ${s}\ntext\n`).join("");

let builtin: PlaybookRegistry;
let server: ScriptedModel;
let tmp: string;

beforeAll(() => {
  builtin = createPlaybookRegistry({ dirs: [], disabled: [], platform: "linux", log });
});
beforeEach(async () => {
  server = await startScriptedModel();
  tmp = mkdtempSync(join(tmpdir(), "ongrid-router-"));
});
afterEach(async () => {
  await server.close();
  rmSync(tmp, { recursive: true, force: true });
});

function modelClient(over: Partial<ModelSettings> = {}): ModelClient {
  const c = createModelClient(
    { base_url: server.url, api_key: "", api_key_file: "", model: "test-router", timeout: "5s", max_retries: 0, structured_output: "json_schema", ...over },
    log,
  );
  if (!c) throw new Error("expected a model client");
  return c;
}

/** A router over the built-in playbooks and the scripted model, storing decisions in `rows`. */
function setup(over: Partial<RouterOptions> & { settings?: Partial<ModelSettings> } = {}) {
  const rows: RouteDecision[] = [];
  const { settings, ...rest } = over;
  const router = createRouter({ playbooks: builtin, model: modelClient(settings), store: { insert: async (d) => void rows.push(d) }, log, ...rest });
  return { router, rows };
}

const choice = (skill_name: string, over: Record<string, unknown> = {}): Reply => ({ json: { is_oncall: true, skill_name, confidence: 0.9, reason: "timeouts to a TCP service", ...over } });
const messagesOf = (i: number): Array<{ role: string; content: string }> => server.requests[i].body.messages;
const systemText = (i: number) => messagesOf(i).filter((m) => m.role === "system").map((m) => m.content).join("\n");

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e,
  );
}

describe("router: the model picks", () => {
  test("a correct pick is taken as is, with usage, and stored once", async () => {
    expect([...builtin.current().playbooks.keys()].sort()).toEqual(BUILTIN_NAMES);
    const { router, rows } = setup();
    server.push(choice("network_diagnosis"));
    const text = "redis on cache-1 answers with connection timed out since 10:00";
    const d = await router.route({ text, userId: "alice", sessionId: "s-1" });
    expect(d).toMatchObject({ path: "model", isOncall: true, skillName: "network_diagnosis", confidence: 0.9, reason: "timeouts to a TCP service", fallbackCause: "", model: "test-router", userId: "alice", sessionId: "s-1", inputText: text, recalled: [] });
    expect(d.usage.promptTokens).toBeGreaterThan(0);
    expect(d.usage.completionTokens).toBeGreaterThan(0);
    expect(d.usage.totalTokens).toBe(d.usage.promptTokens + d.usage.completionTokens);
    expect(rows).toHaveLength(1);
    expect(rows[0].id).toBe(d.id);
    expect(rows[0]).toEqual(d);

    expect(server.requests).toHaveLength(1);
    const body = server.requests[0].body;
    expect(body.model).toBe("test-router");
    expect(body.response_format.type).toBe("json_schema");
    expect(body.response_format.json_schema.name).toBe("route_choice");
    expect(body.response_format.json_schema.schema.required).toEqual(["is_oncall", "skill_name", "confidence", "reason"]);
    for (const name of BUILTIN_NAMES) expect(systemText(0)).toContain(`### ${name}\n`);
    const user = messagesOf(0).filter((m) => m.role === "user");
    expect(user).toEqual([{ role: "user", content: `Incident:\n<<<\n${text}\n>>>` }]);
    // The incident text is only in the Incident block, not mixed into the instructions.
    expect(systemText(0)).not.toContain(text);
  });

  test("a name not in the registry falls back to generic_oncall and says which name", async () => {
    const { router, rows } = setup();
    server.push(choice("redis_diagnosis", { confidence: 0.95 }));
    const d = await router.route({ text: "redis latency on cache-1 is 2 s" });
    expect(d).toMatchObject({ path: "model_unknown_name", isOncall: true, skillName: GENERIC_PLAYBOOK, fallbackCause: "unknown_name:redis_diagnosis", model: "test-router" });
    expect(d.confidence).toBeLessThanOrEqual(0.5);
    expect(d.reason).toContain("redis_diagnosis");
    expect(rows.map((r) => r.id)).toEqual([d.id]);
  });

  test("is_oncall false from the model: not on-call, no playbook, path model", async () => {
    const { router, rows } = setup();
    server.push({ json: { is_oncall: false, skill_name: "", confidence: 0.8, reason: "a question about poetry meters" } });
    const d = await router.route({ text: "what is the meter of this line: deploy the sun at dawn" });
    expect(d).toMatchObject({ path: "model", isOncall: false, skillName: "", fallbackCause: "", reason: "a question about poetry meters" });
    expect(rows).toHaveLength(1);
  });

  test("a pick of generic_oncall itself is a model decision", async () => {
    const { router } = setup();
    server.push(choice(GENERIC_PLAYBOOK, { confidence: 0.4 }));
    const d = await router.route({ text: "something is wrong with prod" });
    expect(d).toMatchObject({ path: "model", skillName: GENERIC_PLAYBOOK, confidence: 0.4, fallbackCause: "" });
  });
});

describe("router: a model failure falls back to the rules", () => {
  const cases: Array<{ what: string; reply: Responder; cause: string; text: string; expected: string; settings?: Partial<ModelSettings> }> = [
    { what: "HTTP 500", reply: { status: 500, error: { message: "CUDA out of memory" } }, cause: "http_error", text: "nginx.service keeps restarting", expected: "service_diagnosis" },
    { what: "a hanging server", reply: { hang: true }, cause: "timeout", text: "DNS resolution fails for api.internal: NXDOMAIN", expected: "network_diagnosis", settings: { timeout: "300ms" } },
    { what: "malformed JSON", reply: { content: "not json" }, cause: "malformed_json", text: "disk full on db-2: no space left on device", expected: "host_resource_diagnosis" },
    { what: "a confidence of 7", reply: choice("network_diagnosis", { confidence: 7 }), cause: "schema_invalid", text: "pods in CrashLoopBackOff after the deploy", expected: "container_diagnosis" },
    { what: "a missing field", reply: { json: { is_oncall: true, skill_name: "network_diagnosis", confidence: 0.9 } }, cause: "schema_invalid", text: "nginx.service keeps restarting", expected: "service_diagnosis" },
  ];
  test.each(cases)("$what → rules, fallback cause $cause, $expected", async ({ reply, cause, text, expected, settings }) => {
    const { router, rows } = setup({ settings });
    server.push(reply);
    const d = await router.route({ text });
    const rules = createRanker(builtin.current().playbooks.values()).route(text);
    expect(rules.skillName).toBe(expected);
    expect(d).toMatchObject({ path: "rules", fallbackCause: cause, isOncall: true, skillName: expected, confidence: rules.confidence, reason: rules.reason, model: "test-router" });
    expect(server.requests).toHaveLength(1);
    expect(rows).toEqual([d]);
  });

  test("the tokens a malformed answer cost are still recorded", async () => {
    const { router } = setup();
    server.push({ content: "Sure! It is the network." });
    const d = await router.route({ text: "nginx.service keeps restarting" });
    expect(d.fallbackCause).toBe("malformed_json");
    expect(d.usage.totalTokens).toBeGreaterThan(0);
  });

  test("no model configured → rules, not_configured, nothing sent", async () => {
    const none = createModelClient({ base_url: "", api_key: "", api_key_file: "", model: "test-router", timeout: "5s", max_retries: 0, structured_output: "json_schema" }, log);
    expect(none).toBeUndefined();
    const { router, rows } = setup({ model: none });
    const d = await router.route({ text: "nginx.service keeps restarting" });
    expect(d).toMatchObject({ path: "rules", fallbackCause: "not_configured", skillName: "service_diagnosis", model: "", usage: { totalTokens: 0 } });
    expect(rows).toHaveLength(1);
    expect(server.requests).toHaveLength(0);
  });

  test("rulesOnly with a model → rules, rules_only, nothing sent", async () => {
    const { router, rows } = setup();
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text: "disk full on db-2: no space left on device", rulesOnly: true });
    expect(d).toMatchObject({ path: "rules", fallbackCause: "rules_only", skillName: "host_resource_diagnosis" });
    expect(rows).toHaveLength(1);
    expect(server.requests).toHaveLength(0);
  });

  test("an operations input that matches no playbook's words picks generic_oncall", async () => {
    const { router } = setup({ model: undefined });
    // An address makes it operations work; nothing else in it is any playbook's.
    const d = await router.route({ text: "10.9.8.7 xyzzy plugh" });
    expect(d).toMatchObject({ path: "rules", skillName: GENERIC_PLAYBOOK, confidence: 0.2 });
    const vague = await router.route({ text: "something is wrong with prod" });
    expect(vague).toMatchObject({ path: "rules", skillName: GENERIC_PLAYBOOK });
  });

  test("a caller's cancel is an error, not a fallback, and nothing is stored", async () => {
    const { router, rows } = setup();
    server.push({ hang: true });
    const ac = new AbortController();
    const p = router.route({ text: "nginx.service keeps restarting", signal: ac.signal });
    await (async () => {
      for (let i = 0; i < 200 && server.requests.length === 0; i++) await sleep(10);
    })();
    ac.abort();
    const err = await rejection(p);
    expect(err).toBeInstanceOf(OngridError);
    expect(err).toMatchObject({ code: "cancelled" });
    expect(rows).toHaveLength(0);
  });
});

describe("router: out of scope", () => {
  test.each([
    ["recommend me an anime to watch", "anim"],
    ["推荐一部好看的动漫", "动漫"],
  ])("%s is refused politely without asking the model", async (text, topic) => {
    const { router, rows } = setup();
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text });
    expect(d).toMatchObject({ path: "out_of_scope", isOncall: false, skillName: "", model: "" });
    expect(d.reason).toContain(topic);
    expect(d.reason).toMatch(/describe the incident/);
    expect(server.requests).toHaveLength(0);
    expect(rows).toEqual([d]);
  });

  test("out of scope is refused even with rulesOnly or without a model", async () => {
    const a = await setup({ model: undefined }).router.route({ text: "tell me a joke about cats" });
    const b = await setup().router.route({ text: "tell me a joke about cats", rulesOnly: true });
    expect(a.path).toBe("out_of_scope");
    expect(b.path).toBe("out_of_scope");
  });

  test.each(["the game server is down, players get timeouts", "the weather API returns 503 since the deploy", "足球比分接口报错 502"])("a mixed input is not refused: %s", async (text) => {
    const { router } = setup();
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text });
    expect(d.path).toBe("model");
    expect(d.skillName).toBe("network_diagnosis");
    expect(server.requests).toHaveLength(1);
  });
});

describe("router: recall of past diagnoses", () => {
  const REDIS_BODY = "On cache-1 the conntrack table was full; raised nf_conntrack_max to 262144 and the timeouts stopped.";
  let recall: Recall;
  let redisLine: string;

  beforeEach(() => {
    const dir = join(tmp, "reports");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "redis-timeouts.md"),
      `---\ntitle: Redis connection timeout on cache hosts\nsummary: conntrack table full on the host dropped new connections\nplaybook: network_diagnosis\n---\n# Redis connection timeout\n\n${REDIS_BODY}\n`,
    );
    writeFileSync(join(dir, "disk.md"), "# Disk full on db-2\n\nWAL files filled /var; archived and pruned them.\n");
    writeFileSync(join(dir, "cert.md"), "# Certificate expired on the edge proxy\n\nThe ACME renewal job had stopped; renewed by hand.\n");
    recall = createDirectoryRecall(dir);
    redisLine = "- Redis connection timeout on cache hosts — conntrack table full on the host dropped new connections [playbook: network_diagnosis] (redis-timeouts.md)";
  });

  test("index level: the matching page's index line is sent and stored, not its body", async () => {
    const { router, rows } = setup({ recall });
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text: "redis connection timeout on cache-1" });
    expect(d.recalled).toEqual([redisLine]);
    expect(rows[0].recalled).toEqual([redisLine]);
    const sys = systemText(0);
    expect(sys).toContain(`Related past diagnoses (index):\n${redisLine}`);
    expect(sys.endsWith(redisLine)).toBe(true);
    expect(sys).not.toContain("nf_conntrack_max");
    expect(sys).not.toContain("Disk full on db-2");
    expect(sys).not.toContain("Certificate expired");
  });

  test("full level: the page body is sent too", async () => {
    const { router } = setup({ recall, recallLevel: "full" });
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text: "redis connection timeout on cache-1" });
    expect(d.recalled).toEqual([redisLine]);
    expect(systemText(0)).toContain(redisLine);
    expect(systemText(0)).toContain(REDIS_BODY);
    expect(systemText(0)).not.toContain("Disk full on db-2");
  });

  test("recallLimit bounds the lines; nothing related recalls nothing", async () => {
    const { router } = setup({ recall, recallLimit: 0 });
    server.push(choice("network_diagnosis"));
    expect((await router.route({ text: "redis connection timeout on cache-1" })).recalled).toEqual([]);
    const r2 = setup({ recall });
    server.push(choice("generic_oncall"));
    const d = await r2.router.route({ text: "kafka consumer lag keeps growing" });
    expect(d.recalled).toEqual([]);
    expect(systemText(1)).not.toContain("Related past diagnoses");
  });

  test("a failing recall is skipped and the model still decides", async () => {
    const broken: Recall = {
      search() {
        throw new Error("disk on fire");
      },
    };
    const { router } = setup({ recall: broken });
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text: "redis connection timeout on cache-1" });
    expect(d).toMatchObject({ path: "model", skillName: "network_diagnosis", recalled: [] });
  });

  test("recall still fills `recalled` when the model then fails", async () => {
    const { router } = setup({ recall });
    server.push({ status: 500 });
    const d = await router.route({ text: "redis connection timeout on cache-1" });
    expect(d).toMatchObject({ path: "rules", fallbackCause: "http_error", recalled: [redisLine] });
  });

  test("a secret written in a past page does not reach the model or the stored decision", async () => {
    const dir = join(tmp, "leaky");
    mkdirSync(dir);
    writeFileSync(join(dir, "auth.md"), "# Redis auth failures on cache-1\n\nredis connection timeout after the clients switched to password=hunter2 from the old config.\n");
    const { router, rows } = setup({ recall: createDirectoryRecall(dir) });
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text: "redis connection timeout on cache-1" });
    expect(d.recalled).toHaveLength(1);
    expect(JSON.stringify(server.requests[0].body)).not.toContain("hunter2");
    expect(JSON.stringify(rows[0])).not.toContain("hunter2");
  });
});

describe("router: secrets and bad input", () => {
  const SECRET_TEXT = "curl -H 'Authorization: Bearer abc.def.ghi' https://api.internal/health returns 401\ndb login fails with password=hunter2 on db-2";

  test("secrets in the input reach neither the model nor the store", async () => {
    const { router, rows } = setup();
    server.push(choice("network_diagnosis"));
    const d = await router.route({ text: SECRET_TEXT });
    expect(d.path).toBe("model");
    const sent = JSON.stringify(server.requests[0].body);
    for (const secret of ["abc.def.ghi", "hunter2"]) {
      expect(sent).not.toContain(secret);
      expect(rows[0].inputText).not.toContain(secret);
      expect(JSON.stringify(rows[0])).not.toContain(secret);
    }
    expect(rows[0].inputText).toContain("https://api.internal/health returns 401");
    expect(rows[0].inputText).toContain("[REDACTED]");
  });

  test("secrets are redacted on the rules path too", async () => {
    const { router, rows } = setup({ model: undefined });
    await router.route({ text: SECRET_TEXT });
    expect(rows[0].inputText).not.toContain("hunter2");
    expect(rows[0].inputText).not.toContain("abc.def.ghi");
  });

  test.each([
    ["empty", ""],
    ["blank", "  \n\t "],
    ["too long", "disk full ".repeat(801)],
  ])("%s text is invalid_argument naming text; nothing stored or sent", async (_what, text) => {
    const { router, rows } = setup();
    server.push(choice("network_diagnosis"));
    const err = await rejection(router.route({ text }));
    expect(err).toBeInstanceOf(OngridError);
    expect(err).toMatchObject({ code: "invalid_argument" });
    expect((err as Error).message).toMatch(/^text: /);
    expect(rows).toHaveLength(0);
    expect(server.requests).toHaveLength(0);
  });

  test(`exactly ${MAX_ROUTE_TEXT} characters is accepted`, async () => {
    const { router } = setup();
    server.push(choice("host_resource_diagnosis"));
    const text = "disk full ".repeat(MAX_ROUTE_TEXT / 10);
    expect(text).toHaveLength(MAX_ROUTE_TEXT);
    const d = await router.route({ text });
    expect(d.path).toBe("model");
  });
});

describe("router: hot reload while routing", () => {
  const alpha = (description: string) => `---\nname: alpha\ndescription: ${description}\ntriggers: [alpha outage]\n---\n${BODY}`;
  let dir: string;
  let registry: PlaybookRegistry;

  function put(name: string, text: string) {
    mkdirSync(join(dir, name), { recursive: true });
    writeFileSync(join(dir, name, "SKILL.md"), text);
  }

  beforeEach(() => {
    dir = join(tmp, "playbooks");
    mkdirSync(join(dir, GENERIC_PLAYBOOK), { recursive: true });
    copyFileSync(join(BUILTIN_PLAYBOOK_DIR, GENERIC_PLAYBOOK, "SKILL.md"), join(dir, GENERIC_PLAYBOOK, "SKILL.md"));
    put("alpha", alpha("Alpha incidents, first version."));
    registry = createPlaybookRegistry({ builtinDir: null, dirs: [dir], disabled: [], platform: "linux", log });
  });

  test("each route keeps the generation it started with: the menu it sent and the name check agree", async () => {
    const rows: RouteDecision[] = [];
    const router = createRouter({ playbooks: registry, model: modelClient(), store: { insert: async (d) => void rows.push(d) }, log });
    const slow: Responder = async () => {
      await sleep(50);
      return choice("alpha");
    };
    server.push(...Array.from({ length: 20 }, () => slow));

    const generations = [registry.current()];
    const routes: Array<Promise<RouteDecision>> = [];
    const batch = (b: number) => {
      for (let i = 0; i < 5; i++) routes.push(router.route({ text: `[r${b}-${i}] alpha outage on web-${i}, the service is down` }));
    };
    batch(0);
    await sleep(5);
    put("beta", `---\nname: beta\ndescription: Beta incidents.\n---\n${BODY}`);
    expect(registry.reload().added).toEqual(["beta"]);
    generations.push(registry.current());
    batch(1);
    await sleep(5);
    put("alpha", alpha("Alpha incidents, second version."));
    expect(registry.reload().changed).toEqual(["alpha"]);
    generations.push(registry.current());
    batch(2);
    await sleep(5);
    rmSync(join(dir, "alpha"), { recursive: true });
    expect(registry.reload().removed).toEqual(["alpha"]);
    generations.push(registry.current());
    batch(3);

    const settled = await Promise.allSettled(routes);
    expect(settled.filter((s) => s.status === "rejected")).toEqual([]);
    const decisions = settled.map((s) => (s as PromiseFulfilledResult<RouteDecision>).value);
    expect(rows).toHaveLength(20);
    expect(server.requests).toHaveLength(20);

    const menus = generations.map((g) => routerMenu(g.playbooks.values()));
    expect(new Set(menus).size).toBe(4);
    for (const [k, d] of decisions.entries()) {
      const b = Math.floor(k / 5);
      const tag = `[r${b}-${k % 5}]`;
      const req = server.requests.find((r) => r.body.messages.some((m: { role: string; content: string }) => m.role === "user" && m.content.includes(tag)));
      expect(req, tag).toBeDefined();
      const menu = req!.body.messages[1].content as string;
      // The model saw exactly the menu of the generation current when the route started…
      expect(menu, tag).toBe(menus[b]);
      // …and its answer was checked against that same generation.
      if (generations[b].playbooks.has("alpha")) expect(d, tag).toMatchObject({ path: "model", skillName: "alpha" });
      else expect(d, tag).toMatchObject({ path: "model_unknown_name", skillName: GENERIC_PLAYBOOK, fallbackCause: "unknown_name:alpha" });
    }
    expect(decisions.filter((d) => d.skillName === "alpha")).toHaveLength(15);
    expect(registry.current().playbooks.has("alpha")).toBe(false);
    expect(registry.get("alpha")).toBeUndefined();
    expect(registry.get("beta")).toBeDefined();
  });

  test("watch(): a new playbook file appears and a removed one disappears", async () => {
    const stop = registry.watch(50);
    try {
      // Written beside the watched directory, then moved in whole.
      const staging = join(tmp, "staging");
      mkdirSync(join(staging, "gamma"), { recursive: true });
      writeFileSync(join(staging, "gamma", "SKILL.md"), `---\nname: gamma\ndescription: Gamma incidents.\n---\n${BODY}`);
      renameSync(join(staging, "gamma"), join(dir, "gamma"));
      await until(() => registry.get("gamma") !== undefined);
      expect(registry.get("gamma")!.description).toBe("Gamma incidents.");
      rmSync(join(dir, "gamma"), { recursive: true });
      await until(() => registry.get("gamma") === undefined);
      expect(registry.get(GENERIC_PLAYBOOK)).toBeDefined();
    } finally {
      stop();
    }
  });
});

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await sleep(25);
  }
}
