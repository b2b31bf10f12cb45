/**
 * S6: recognisable secrets planted in a failing pack's stderr, in a model's replies during a
 * diagnosis, and in skill params and results never reach the caller, the audit table or the
 * manager's own log (captured at level trace).
 */
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AgentService } from "../proto/gen/ongrid/v1/agent_service_pb.ts";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { startScriptedModel, type Reply, type ScriptedModel } from "./support/openai-server.ts";

const rnd = () => randomBytes(9).toString("hex");
/** The secret values: none of these strings may appear anywhere a caller, the audit log or the log can show. */
const PASSWORD = `S3cr3t-${rnd()}`;
const BEARER_TOKEN = `tkn${rnd()}Zq9`;
const PEM_BODY = `MIIEvQIBADANBgkqhkiG9w0BAQEFAASC${rnd()}`;
const SECRETS = [PASSWORD, BEARER_TOKEN, PEM_BODY];
/** Text carrying all three, the way a tool or a model would print them. */
const PLANTED = [
  `connecting with password=${PASSWORD} failed`,
  `> Authorization: Bearer ${BEARER_TOKEN}`,
  "-----BEGIN RSA PRIVATE KEY-----",
  PEM_BODY,
  "aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSByZWFsIGtleQ==",
  "-----END RSA PRIVATE KEY-----",
].join("\n");

let m: TestManager;
let model: ScriptedModel;
let work: string;
let logText = "";
let skills: ReturnType<typeof createClient<typeof SkillService>>;
let opToken: string;

/** JSON of a protobuf message or anything else (bigints as strings). */
const dump = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? String(x) : x));

function expectNoSecret(where: string, text: string) {
  for (const s of SECRETS) expect(text.includes(s), `${where} holds ${s.slice(0, 8)}…:\n${text.slice(Math.max(0, text.indexOf(s) - 300), text.indexOf(s) + 100)}`).toBe(false);
}

async function auditText(): Promise<string> {
  await m.audit.flush();
  const rows: unknown[] = [];
  for (let after = 0; ; ) {
    const page = await m.audit.list({ afterSeq: after, limit: 1000 });
    rows.push(...page);
    if (page.length < 1000) break;
    after = Number((page.at(-1) as { seq: number | bigint }).seq);
  }
  expect(rows.length).toBeGreaterThan(0);
  return dump(rows);
}

function writePack(name: string, manifest: Record<string, unknown>, script: string) {
  const dir = join(work, "packs", name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "skill.json"), JSON.stringify({ name: `${name} test pack`, class: "safe", executable: "run.sh", timeout: "10s", ...manifest }));
  writeFileSync(join(dir, "run.sh"), `#!/bin/bash\n${script}\n`);
  chmodSync(join(dir, "run.sh"), 0o755);
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "ongrid-secrets-"));
  writeFileSync(join(work, "planted.txt"), PLANTED);
  writePack(
    "leak_fail",
    { key: "leak_fail", description: "Fails on purpose, printing credentials to stderr; use it to test redaction.", params: {} },
    `cat >/dev/null\ncat ${JSON.stringify(join(work, "planted.txt"))} >&2\nexit 3`,
  );
  writePack(
    "leak_echo",
    {
      key: "leak_echo",
      description: "Echoes its params and prints credentials in its result; use it to test redaction.",
      params: { note: { type: "string", description: "free text", required: true } },
    },
    // The result holds the params back, the planted text, and a secret under a secret-like key.
    `read -r -d '' input\nplanted=$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' ${JSON.stringify(join(work, "planted.txt"))})\nprintf '{"output": {"params": %s, "text": %s, "db_password": "${PASSWORD}", "headers": [["Authorization", "Bearer ${BEARER_TOKEN}"]]}}' "$input" "$planted"`,
  );
  model = await startScriptedModel(Array.from({ length: 200 }, () => (body: any) => reply(body)));
  const sink = new Writable({
    write(chunk, _enc, done) {
      logText += String(chunk);
      done();
    },
  });
  const log = pino({ level: "trace", base: { svc: "ongrid-manager" } }, sink);
  m = await bootManager(
    {
      "packs.dirs": join(work, "packs"),
      "packs.watch": false,
      "model.base_url": model.url,
      "model.model": "secrets-test",
      "model.max_retries": 0,
      "model.timeout": "5s",
      "agent.max_steps": 3,
    },
    {},
    undefined,
    { log },
  );
  opToken = await makeUser(m, "oper", "operator");
  skills = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(opToken)] }));
}, 60_000);

afterAll(async () => {
  await m?.stop();
  await model?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Tool-call turns the model still makes (set by a test): each calls tools with the planted secrets in their arguments. */
let toolTurnsLeft = 0;

/** The model: every structured answer and every free-text reply carries the planted secrets. */
function reply(body: any): Reply {
  if (body.tools?.length && toolTurnsLeft > 0) {
    toolTurnsLeft--;
    return {
      toolCalls: [
        // An offered tool, a tool not offered, and arguments that are not even JSON: each shown as a tool_call event.
        { name: "host_load", arguments: { edge_id: "edge-nowhere", note: `password=${PASSWORD}` } },
        { name: "leak_echo", arguments: { note: PLANTED } },
        { name: "host_load", arguments: `{"edge_id": "edge-nowhere", "auth": "Authorization: Bearer ${BEARER_TOKEN}"` },
      ],
    };
  }
  const schema = body.response_format?.json_schema?.name ?? (JSON.stringify(body.messages).includes("route_choice") ? "route_choice" : undefined);
  if (schema === "route_choice") return { json: { is_oncall: true, skill_name: "host_resource_diagnosis", confidence: 0.9, reason: `login used password=${PASSWORD}` } };
  if (schema === "diagnosis_plan") return { json: { reason: `Authorization: Bearer ${BEARER_TOKEN}`, plan: [`try password=${PASSWORD}`, PLANTED] } };
  if (schema === "verdict") return { json: { verdict: "supported", unsupported_claims: [`password=${PASSWORD}`], notes: PLANTED } };
  return { content: `# Report\n\nThe service failed. Details:\n\n${PLANTED}\n\nAlso seen: Authorization: Bearer ${BEARER_TOKEN}` };
}

/** A diagnosis as the operator over RPC, its events collected; the model must really have been asked. */
async function diagnose(): Promise<Array<{ type: string }>> {
  const client = createClient(AgentService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(opToken)] }));
  const before = model.requests.length;
  const events: Array<{ type: string }> = [];
  for await (const ev of client.diagnose({ text: "the app cannot log in to its database" })) events.push(ev);
  expect(model.requests.length).toBeGreaterThan(before);
  return events;
}

describe("secrets never leak (S6)", () => {
  it("a failing pack's stderr: not in the caller's error, the audit table or the manager log", async () => {
    expect(m.registry.get("leak_fail")).toBeDefined();
    const res = await skills.executeSkill({ key: "leak_fail", input: { case: "paramsJson", value: "{}" } });
    expect(res.result?.success).toBe(false);
    expect(res.result?.error?.code).toBe("pack_exit_nonzero");
    // The error still says what happened, with the secrets masked.
    expect(res.result?.error?.message).toContain("exited with code 3");
    expect(res.result?.error?.message).toContain("[REDACTED");
    expectNoSecret("ExecuteSkill response", dump(res));
    expectNoSecret("audit rows", await auditText());
    expectNoSecret("manager log", logText);
    expect(logText).toContain("leak_fail"); // the log did record the call
  });

  it("skill params and results: not in the caller's response, the audit table or the manager log", async () => {
    const note = `${PLANTED}\ncurl -H 'Authorization: Bearer ${BEARER_TOKEN}' --password ${PASSWORD}`;
    const res = await skills.executeSkill({ key: "leak_echo", input: { case: "paramsJson", value: JSON.stringify({ note }) } });
    expect(res.result?.success, dump(res.result?.error)).toBe(true);
    const text = dump(res);
    expect(text).toContain("[REDACTED");
    expectNoSecret("ExecuteSkill response", text);
    expectNoSecret("audit rows", await auditText());
    expectNoSecret("manager log", logText);
  });

  it("a model's replies during a diagnosis: not in the event stream, the audit table or the manager log", async () => {
    const events = await diagnose();
    const text = dump(events);
    const types = (events as { type: string }[]).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["route", "report", "done"]));
    // The report is there, with the planted secrets masked rather than the report dropped.
    const report = dump((events as { type: string }[]).find((e) => e.type === "report"));
    expect(report).toContain("The service failed");
    expect(report).toContain("[REDACTED");
    expectNoSecret("Diagnose events", text);
    expectNoSecret("audit rows", await auditText());
    expectNoSecret("manager log", logText);
  });

  it("the arguments of a model's tool calls: masked in the event stream, the audit table and the manager log", async () => {
    toolTurnsLeft = 1;
    const events = await diagnose();
    expect(toolTurnsLeft).toBe(0); // the model was asked with tools and answered with the calls
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls.length).toBeGreaterThanOrEqual(3);
    const shown = dump(calls);
    // The calls are there, with their other arguments, and the secrets masked.
    expect(shown).toContain("edge-nowhere");
    expect(shown).toContain("[REDACTED");
    expectNoSecret("tool_call events", shown);
    expectNoSecret("Diagnose events", dump(events));
    expectNoSecret("audit rows", await auditText());
    expectNoSecret("manager log", logText);
  });
});
