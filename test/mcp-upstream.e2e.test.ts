/**
 * M3 end to end: a real manager whose config file names real upstream MCP servers — the reference
 * server-everything over stdio (twice: untrusted, and trusted behind a start gate) and over
 * streamable HTTP, a small SDK server over HTTP (test/support/mcp-http-server.ts) that wants a credential in a header,
 * and a hostile SDK server over stdio (test/support/mcp-fixture-server.mjs). Every call goes
 * through ExecuteSkill: the gate, approvals, validation, audit and redaction of any skill.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { ApprovalService, ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { SkillClass, SkillScope } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { isRunning, processRef, type ProcessRef } from "../manager/mcp/upstream/process-tree.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { waitFor } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { refusal } from "./support/rejection.ts";
import { freePort } from "./support/free-port.ts";
import { startMcpHttpServer, type McpHttpServer } from "./support/mcp-http-server.ts";
import { ROOT, runOngrid } from "./support/cli.ts";

const EVERYTHING = join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const FIXTURE = join(ROOT, "test/support/mcp-fixture-server.mjs");
/** The credential the HTTP upstream wants as its bearer token, and the one the hostile server gets in its env. */
const HTTP_SECRET = `s3cr3t-http-${randomBytes(8).toString("hex")}`;
const ENV_SECRET = `s3cr3t-env-${randomBytes(8).toString("hex")}`;
/** A plain (not secret) env value of the hostile upstream: kept out of the logs all the same. */
const ENV_PLAIN = `plain-env-${randomBytes(8).toString("hex")}`;

let work: string;
let block: string;
let m: TestManager;
let everythingHttp: ChildProcess;
/** The small SDK server over streamable HTTP that wants the credential (test/support/mcp-http-server.ts). */
let web: McpHttpServer;
const logLines: string[] = [];
type Clients = { skills: Client<typeof SkillService>; approvals: Client<typeof ApprovalService> };
const as: Record<string, Clients> = {};

/** server-everything in its streamable HTTP mode, on a free port. */
async function startEverythingHttp(): Promise<number> {
  const port = await freePort();
  everythingHttp = spawn(process.execPath, [EVERYTHING, "streamableHttp"], { env: { PATH: process.env.PATH, PORT: String(port) }, stdio: "ignore" });
  const up = await waitFor(() => fetch(`http://127.0.0.1:${port}/mcp`).then(() => true, () => false), 30_000);
  if (!up) throw new Error("server-everything (streamableHttp) did not start listening");
  return port;
}

function clientsFor(token: string): Clients {
  const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] });
  return { skills: createClient(SkillService, t), approvals: createClient(ApprovalService, t) };
}

const outputOf = (r: { output?: unknown } | undefined): any => (r?.output ? toJson(ValueSchema, r.output as never) : null);
const status = (name: string) => m.upstreams.status().find((s) => s.name === name)!;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "ongrid-mcp-upstream-"));
  block = join(work, "block");
  const everythingPort = await startEverythingHttp();
  web = await startMcpHttpServer();
  const q = JSON.stringify;
  writeFileSync(
    join(work, "ongrid.yaml"),
    `mcp:
  upstreams:
    - name: everything
      command: [${q(process.execPath)}, ${q(EVERYTHING)}, stdio]
    - name: trusted
      # server-everything behind a gate: while $BLOCK exists it cannot start (exit 3)
      command: ["/bin/sh", "-c", 'test -e "$BLOCK" && exit 3; exec "$0" "$@"', ${q(process.execPath)}, ${q(EVERYTHING)}, stdio]
      env: { BLOCK: ${q(block)} }
      trust_annotations: true
    - name: everything_http
      url: http://127.0.0.1:${everythingPort}/mcp
      trust_annotations: true
    - name: web
      url: ${web.url}
      credential: web_token
      headers: { X-Team: sre }
      classes: { whoami: safe }
    - name: hostile
      command: [${q(process.execPath)}, ${q(FIXTURE)}]
      env: { FIXTURE_SECRET: { credential: env_token }, FIXTURE_PLAIN: ${q(ENV_PLAIN)} }
      classes: { wait: safe, cancellations: safe, pids: safe, leak: safe, big: safe }
    - name: disabled
      command: ["/nonexistent"]
      enabled: false
`,
  );
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  m = await bootManager({}, { ONGRID_CONFIG: join(work, "ongrid.yaml"), ONGRID_CREDENTIALS_KEY: randomBytes(32).toString("base64") }, undefined, { log: pino({ level: "trace" }, sink) });
  // The credentials are stored after the manager started: the upstreams needing them stay down
  // (retried with backoff) until they can be read.
  await m.credentials.put("web_token", HTTP_SECRET, "bearer token of the web upstream");
  await m.credentials.put("env_token", ENV_SECRET, "env of the hostile upstream");
  for (const [id, role] of [["olga", "operator"], ["bob", "approver"]] as const) as[id] = clientsFor(await makeUser(m, id, role));
  const up = await waitFor(() => m.upstreams.status().every((s) => s.state === "up"), 60_000);
  if (!up) throw new Error(`upstreams not up: ${JSON.stringify(m.upstreams.status().map((s) => [s.name, s.state, s.reason]))}`);
}, 120_000);

afterAll(async () => {
  await m?.stop().catch(() => undefined);
  everythingHttp?.kill();
  await web?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("upstream MCP servers as manager skills", () => {
  it("server-everything's echo is mcp_everything_echo: listed like any manager skill, mutating by default, parked, run once approved, audited", async () => {
    const listed = (await as.olga.skills.listSkills({ scope: SkillScope.MANAGER })).skills;
    const echo = listed.find((s) => s.key === "mcp_everything_echo")!;
    expect(echo).toMatchObject({ class: SkillClass.MUTATING, scope: SkillScope.MANAGER, category: "mcp" });
    expect(echo.description).toMatch(/^Echoes back the input string \(MCP tool "echo" of the upstream server "everything"\.\)$/);
    expect(JSON.parse(echo.rawJsonSchema)).toMatchObject({ type: "object", properties: { message: { type: "string" } }, required: ["message"] });
    // server-everything marks echo readOnlyHint: believed only where the config trusts it.
    expect(listed.find((s) => s.key === "mcp_trusted_echo")?.class).toBe(SkillClass.SAFE);
    expect(listed.some((s) => s.key.startsWith("mcp_disabled_"))).toBe(false);
    const cli = await runOngrid(["skills", "list", "--manager", m.url, "--json"], { ONGRID_TOKEN: m.adminToken });
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ key: "mcp_everything_echo", category: "mcp" })]));

    const parked = await as.olga.skills.executeSkill({ key: "mcp_everything_echo", input: { case: "paramsJson", value: '{"message":"hello upstream"}' } });
    expect(parked.result).toBeUndefined();
    const id = parked.approval!.id;
    await as.bob.approvals.approve({ id, paramsHash: parked.approval!.paramsHash });
    let done: Awaited<ReturnType<Clients["approvals"]["getApproval"]>>["approval"];
    expect(await waitFor(async () => (done = (await as.olga.approvals.getApproval({ id })).approval)!.state === ApprovalState.EXECUTED, 30_000)).toBe(true);
    expect(done!.result?.success).toBe(true);
    expect(outputOf(done!.result)).toBe("Echo: hello upstream");
    await m.audit.flush();
    const rows = (await m.audit.list({ limit: 1000 })).filter((r) => r.approvalId === id && r.toolName === "mcp_everything_echo");
    expect(rows.map((r) => r.decision)).toEqual(["ask", "allow"]);
    expect(rows[1]).toMatchObject({ toolName: "mcp_everything_echo", callerUserId: "olga", approvedBy: "bob", error: "" });
    expect(JSON.stringify(rows[1]!.result)).toContain("Echo: hello upstream");
  });

  it("a trusted upstream's read-only tool runs at once, audited as allowed; over streamable HTTP too", async () => {
    const res = await as.olga.skills.executeSkill({ key: "mcp_trusted_echo", input: { case: "paramsJson", value: '{"message":"hi"}' } });
    expect(res.result?.success).toBe(true);
    expect(outputOf(res.result)).toBe("Echo: hi");
    await m.audit.flush();
    const [row] = await m.audit.list({ afterSeq: Number(res.auditSeq) - 1, limit: 1 });
    expect(row).toMatchObject({ toolName: "mcp_trusted_echo", decision: "allow", callerUserId: "olga" });
    const http = await as.olga.skills.executeSkill({ key: "mcp_everything_http_get_structured_content", input: { case: "paramsJson", value: '{"location":"Chicago"}' } });
    expect(http.result?.success).toBe(true);
    expect(outputOf(http.result)).toMatchObject({ temperature: expect.any(Number), conditions: expect.any(String) });
  });

  it("bad params are refused by the upstream's own schema before any call, naming the field; and audited", async () => {
    let err = await refusal(as.olga.skills.executeSkill({ key: "mcp_trusted_echo", input: { case: "paramsJson", value: '{"message":5}' } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/invalid params for skill "mcp_trusted_echo": param "message": must be string \(rule: type\)/);
    err = await refusal(as.olga.skills.executeSkill({ key: "mcp_trusted_get_structured_content", input: { case: "paramsJson", value: '{"location":"Paris"}' } }));
    expect(err.rawMessage).toMatch(/param "location": must be one of "New York", "Chicago", "Los Angeles"/);
    await m.audit.flush();
    const rows = await m.audit.list({ limit: 1000 });
    expect(rows[rows.length - 1]).toMatchObject({ toolName: "mcp_trusted_get_structured_content" });
    expect(rows[rows.length - 1]!.error).toMatch(/^invalid_argument: /);
  });

  it("the long-running operation ends with its deadline, and a cancelled call is cancelled upstream (the server sees it)", async () => {
    // One hour of work asked for: the call ending at all shows the deadline stopped it.
    const long = await as.olga.skills.executeSkill({ key: "mcp_trusted_trigger_long_running_operation", timeoutMs: 1500, input: { case: "paramsJson", value: '{"duration":3600,"steps":2}' } });
    expect(long.result).toMatchObject({ success: false, error: { code: "deadline_exceeded" } });
    expect(outputOf((await as.olga.skills.executeSkill({ key: "mcp_trusted_echo", input: { case: "paramsJson", value: '{"message":"still here"}' } })).result)).toBe("Echo: still here");

    const cancellations = async () => outputOf((await as.olga.skills.executeSkill({ key: "mcp_hostile_cancellations", input: { case: "paramsJson", value: "{}" } })).result) as { count: number; waiting: number; cancelled: Array<{ reason: string }> };
    const abort = new AbortController();
    const call = as.olga.skills.executeSkill({ key: "mcp_hostile_wait", input: { case: "paramsJson", value: '{"seconds":3600}' } }, { signal: abort.signal }).catch((e: Error) => e);
    expect(await waitFor(async () => (await cancellations()).waiting === 1, 20_000)).toBe(true);
    abort.abort();
    expect(await call).toBeInstanceOf(Error);
    let seen = await cancellations();
    expect(await waitFor(async () => (seen = await cancellations()).count === 1, 20_000)).toBe(true);
    expect(seen).toMatchObject({ waiting: 0, cancelled: [{ reason: "the ongrid call was cancelled" }] });
    await m.audit.flush();
    const row = (await m.audit.list({ limit: 1000 })).find((r) => r.toolName === "mcp_hostile_wait")!;
    expect(row.error).toMatch(/^cancelled: /);
  });

  it("the HTTP upstream gets its bearer token from the credential store; the secret is in no result, audit row or log line", async () => {
    const res = await as.olga.skills.executeSkill({ key: "mcp_web_whoami", input: { case: "paramsJson", value: "{}" } });
    expect(res.result?.success).toBe(true);
    // What the server received is the real value; what comes back names the credential.
    expect(web.seen.at(-1)).toEqual({ authorization: `Bearer ${HTTP_SECRET}`, team: "sre" });
    expect(outputOf(res.result)).toBe("scheme Bearer, value [credential:web_token]; x-team: sre");
    const leak = await as.olga.skills.executeSkill({ key: "mcp_hostile_leak", input: { case: "paramsJson", value: "{}" } });
    expect(outputOf(leak.result)).toBe("my secret is [credential:env_token]");
    await m.audit.flush();
    const audit = JSON.stringify(await m.audit.list({ limit: 1000 }));
    expect(audit).toContain("mcp_web_whoami");
    expect(logLines.some((l) => l.includes('"upstream":"web"'))).toBe(true);
    // The hostile server printed its env on stderr; the manager logged that line without the values
    // (FIXTURE_SECRET=… is masked by the redaction rules as well; FIXTURE_PLAIN only by the scrub).
    expect(logLines.some((l) => l.includes('"upstream":"hostile"') && l.includes("FIXTURE_PLAIN=[credential:env.fixture_plain]"))).toBe(true);
    for (const secret of [HTTP_SECRET, ENV_SECRET, ENV_PLAIN]) {
      expect(audit).not.toContain(secret);
      expect(logLines.filter((l) => l.includes(secret))).toEqual([]);
    }
  });

  it("a hostile upstream: readOnlyHint on everything still gives mutating; colliding, unmappable and broken tools are left out, the rest work", async () => {
    const hostile = (await as.olga.skills.listSkills({ scope: SkillScope.MANAGER })).skills.filter((s) => s.key.startsWith("mcp_hostile_"));
    const cls = Object.fromEntries(hostile.map((s) => [s.key, s.class]));
    expect(cls).toMatchObject({ mcp_hostile_wipe_disk: SkillClass.MUTATING, mcp_hostile_destroy: SkillClass.MUTATING, mcp_hostile_fail: SkillClass.MUTATING, mcp_hostile_pids: SkillClass.SAFE });
    expect(Object.keys(cls).sort()).toEqual(["mcp_hostile_big", "mcp_hostile_cancellations", "mcp_hostile_destroy", "mcp_hostile_fail", "mcp_hostile_huge_description", "mcp_hostile_leak", "mcp_hostile_mutate", "mcp_hostile_pids", "mcp_hostile_wait", "mcp_hostile_wipe_disk"]);
    expect(hostile.find((s) => s.key === "mcp_hostile_huge_description")!.description.length).toBeLessThan(1200);
    expect(status("hostile").problems.join("\n")).toMatch(/tools "Get-Data", "get_data", "get\.data": skipped/);
    // An output over skills.output_cap_bytes is cut like any skill's.
    const big = await as.olga.skills.executeSkill({ key: "mcp_hostile_big", input: { case: "paramsJson", value: "{}" } });
    expect(big.result).toMatchObject({ success: true, truncated: true });
    expect(String(outputOf(big.result))).toMatch(/…\[truncated: \d+ of 300000 bytes shown\]$/);
    expect(String(outputOf(big.result)).length).toBeLessThan(70_000);
    // Mutating: parked for a person, whatever the server claimed.
    const parked = await as.olga.skills.executeSkill({ key: "mcp_hostile_wipe_disk", input: { case: "paramsJson", value: "{}" } });
    expect(parked.result).toBeUndefined();
    expect(parked.approval?.state).toBe(ApprovalState.PENDING);
  });

  it("a crash: the server killed, calls answer unavailable naming it and why while it cannot start, then it is restarted and its tools answer again", async () => {
    const before = status("trusted").pid!;
    writeFileSync(block, "");
    process.kill(before, "SIGKILL");
    expect(await waitFor(() => status("trusted").failures >= 2, 30_000)).toBe(true);
    const down = await as.olga.skills.executeSkill({ key: "mcp_trusted_echo", input: { case: "paramsJson", value: '{"message":"anyone?"}' } });
    expect(down.result).toMatchObject({ success: false, error: { code: "unavailable" } });
    expect(down.result!.error!.message).toMatch(/^the upstream MCP server "trusted" is unavailable: it could not be started: its process exited with code 3/);
    expect(down.result!.error!.hint).toMatch(/ongrid starts it again in about \d+ s \(failure \d+\)/);
    rmSync(block);
    expect(await waitFor(() => status("trusted").state === "up", 60_000)).toBe(true);
    const back = await as.olga.skills.executeSkill({ key: "mcp_trusted_echo", input: { case: "paramsJson", value: '{"message":"back"}' } });
    expect(outputOf(back.result)).toBe("Echo: back");
    expect(status("trusted")).toMatchObject({ restarts: 1 });
    expect(status("trusted").pid).not.toBe(before);
  });

  it("shutting the manager down stops every stdio upstream and what they started: no process is left", async () => {
    const pids = (await as.olga.skills.executeSkill({ key: "mcp_hostile_pids", input: { case: "paramsJson", value: "{}" } })).result;
    const { helper } = outputOf(pids) as { pid: number; helper: number };
    const refs = [...m.upstreams.status().map((s) => s.pid).filter((p): p is number => p !== undefined), helper].map(processRef);
    expect(refs).toHaveLength(4);
    expect(refs.every((r) => r !== undefined)).toBe(true);
    await m.stop();
    expect((refs as ProcessRef[]).filter(isRunning)).toEqual([]);
    expect(m.upstreams.status().map((s) => s.state)).toEqual(["closed", "closed", "closed", "closed", "closed"]);
    expect(m.registry.list().filter((s) => s.meta.key.startsWith("mcp_"))).toEqual([]);
  });
});

