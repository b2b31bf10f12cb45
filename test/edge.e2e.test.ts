/** Real compiled edges ↔ a real manager: host skills, distinct errors, fan-out, liveness, cancellation. */
import net from "node:net";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { SkillClass, SkillScope } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { ApprovalState } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, stopChild, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { freeStablePort } from "./support/free-port.ts";

const HEARTBEAT_MS = 400;
let m: TestManager;
let edges: TestEdge[] = [];
let skills: ReturnType<typeof createClient<typeof SkillService>>;
let root: string;
/** An ordinary caller (role operator): runs the skills in this file. */
let opToken: string;
/** An EdgeService client with the given token (the admin's unless another is given). */
const edgeClientOf = (token = m.adminToken) => createClient(EdgeService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(token)] }));

beforeAll(async () => {
  m = await bootManager({ "tunnel.heartbeat_interval": `${HEARTBEAT_MS}ms` });
  opToken = await makeUser(m, "oper", "operator");
  skills = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(opToken)] }));
  root = mkdtempSync(join(tmpdir(), "ongrid-edge-root-"));
  // edge-a1 serves most tests in this file; others start their own edges
  edges.push(await startEdge(m, "edge-a1", { labels: { team: "a", zone: "z1" }, roots: [root] }));
});
afterAll(async () => {
  await Promise.all(edges.map((e) => e.stop()));
  await m?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Pids whose command line matches (pgrep -f); empty when none. */
function pgrep(pattern: string): number[] {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The audit row a refused call wrote (its seq travels in the error's metadata). */
async function auditRowOf(err: ConnectError) {
  const seq = Number(err.metadata.get("ongrid-audit-seq"));
  expect(seq).toBeGreaterThan(0);
  await m.audit.flush();
  const [row] = await m.audit.list({ afterSeq: seq - 1, limit: 1 });
  expect(row.seq).toBe(seq);
  return row;
}

function output(res: { result?: { output?: unknown } }): any {
  return res.result?.output ? toJson(ValueSchema, res.result.output as never) : null;
}

async function run(key: string, edgeId: string, params: Record<string, unknown>, timeoutMs = 0, signal?: AbortSignal) {
  return skills.executeSkill({ key, edgeId, input: { case: "params", value: params as never }, timeoutMs }, { signal });
}

describe("host skills through the tunnel", () => {

  it("lists the edge's skills with scope host and its id, and the edge as online", async () => {
    const list = await skills.listSkills({});
    const tcp = list.skills.find((s) => s.key === "probe_tcp");
    expect(tcp?.scope).toBe(SkillScope.HOST);
    expect(tcp?.edgeIds).toEqual(["edge-a1"]);
    const byEdge = await skills.listSkills({ edgeId: "edge-a1" });
    expect(byEdge.skills.every((s) => s.edgeIds.includes("edge-a1"))).toBe(true);
    expect(byEdge.skills.map((s) => s.key)).not.toContain("web_search");
    const edgeClient = edgeClientOf(opToken);
    const e = (await edgeClient.getEdge({ id: "edge-a1" })).edge!;
    expect(e).toMatchObject({ id: "edge-a1", online: true, labels: { team: "a", zone: "z1" } });
    expect(e.skills.map((s) => s.key)).toContain("probe_tcp");
  });

  it("runs probe_tcp against a loopback listener and audits it with the edge as device", async () => {
    const server = net.createServer((s) => s.end("SSH-2.0-ongrid-test\r\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const res = await run("probe_tcp", "edge-a1", { host: "127.0.0.1", port });
      expect(res.result?.success).toBe(true);
      expect(res.result?.edgeId).toBe("edge-a1");
      expect(output(res)).toMatchObject({ host: "127.0.0.1", port, connected: true });
      expect(output(res).banner).toContain("SSH-2.0-ongrid-test");
      await m.audit.flush();
      const [row] = await m.audit.list({ afterSeq: Number(res.auditSeq) - 1, limit: 1 });
      expect(row).toMatchObject({ toolName: "probe_tcp", deviceId: "edge-a1", decision: "allow", error: "" });
    } finally {
      server.close();
    }
  });

  it("answers each dispatch failure with its own code, and audits each with the targeted edge", async () => {
    await m.edges.enroll("edge-offline");
    const cases: Array<[string, string, Record<string, unknown>, Code, RegExp]> = [
      ["probe_tcp", "edge-nope", { host: "127.0.0.1", port: 1 }, Code.NotFound, /unknown edge "edge-nope"/],
      ["probe_tcp", "edge-offline", { host: "127.0.0.1", port: 1 }, Code.Unavailable, /edge "edge-offline" is offline \(never connected\)/],
      ["web_search_nope", "edge-a1", {}, Code.NotFound, /unknown skill "web_search_nope"/],
      ["probe_tcp", "", { host: "127.0.0.1", port: 1 }, Code.InvalidArgument, /edge_id: is required for the host skill "probe_tcp"/],
      ["probe_tcp", "edge-a1", { host: "127.0.0.1", port: 99999 }, Code.InvalidArgument, /param "port": must be <= 65535 \(rule: maximum\)/],
    ];
    for (const [key, edgeId, params, code, message] of cases) {
      const err = (await run(key, edgeId, params).catch((e) => e)) as ConnectError;
      expect(err, `${key}@${edgeId}`).toBeInstanceOf(ConnectError);
      expect(err.code, `${key}@${edgeId}: ${err.rawMessage}`).toBe(code);
      expect(err.rawMessage).toMatch(message);
      const row = await auditRowOf(err);
      expect(row.toolName).toBe(key);
      expect(row.deviceId).toBe(edgeId);
      expect(row.error).toMatch(message);
    }
  });
});

describe("the tunnel is plain gRPC: a grpc-js client acting as an edge", () => {
  it("says hello, is welcomed, serves a call, and is refused a skill it does not offer", async () => {
    const { answerEchoText, connectGrpcEdge, ECHO_TEXT_METADATA } = await import("./support/grpc-edge.ts");
    const { token } = await m.edges.enroll("grpcjs-edge");
    const edge = connectGrpcEdge(`127.0.0.1:${m.port}`, token, answerEchoText("echo")); // answers "echo:<text>"
    try {
      edge.send({
        frame: {
          case: "hello",
          value: {
            edgeId: "grpcjs-edge",
            version: "grpcjs-test",
            hostname: "fake",
            os: "linux/x64",
            labels: { impl: "grpc-js" },
            skills: [
              ECHO_TEXT_METADATA,
            ],
          },
        },
      });
      expect(await waitFor(() => Boolean(m.hub.session("grpcjs-edge")), 10_000)).toBe(true);
      expect(await waitFor(() => edge.received.length > 0, 5000)).toBe(true);
      expect(edge.received[0]?.frame.case).toBe("welcome");
      const res = await run("echo_text", "grpcjs-edge", { text: "hi" });
      expect(res.result?.success).toBe(true);
      expect(output(res)).toBe("echo:hi");
      const bad = (await run("echo_text", "grpcjs-edge", {}).catch((e) => e)) as ConnectError;
      expect(bad.code).toBe(Code.InvalidArgument);
      const notOffered = (await run("probe_tcp", "grpcjs-edge", { host: "127.0.0.1", port: 1 }).catch((e) => e)) as ConnectError;
      expect(notOffered.code).toBe(Code.FailedPrecondition);
      expect(notOffered.rawMessage).toMatch(/edge "grpcjs-edge" does not offer skill "probe_tcp"/);
    } finally {
      edge.close();
    }
  });

  it("a fan-out checks params against each edge's own definition of a key: edges whose echo_text takes another type get their own refusal", async () => {
    const { answerEchoText, connectGrpcEdge, ECHO_TEXT_METADATA } = await import("./support/grpc-edge.ts");
    // Same key, same metadata on s1 and s2 (one Skill object on the manager), an integer `text` on i1.
    const intText = { ...ECHO_TEXT_METADATA, params: { fields: [{ name: "text", type: 2, description: "a number this time", required: true }] } };
    const fleet: Array<{ id: string; meta: object }> = [
      { id: "shared-s1", meta: ECHO_TEXT_METADATA },
      { id: "shared-i1", meta: intText },
      { id: "shared-s2", meta: ECHO_TEXT_METADATA },
    ];
    const edges = [];
    try {
      for (const { id, meta } of fleet) {
        // Selectors use the labels given at enrolment; the hello reports the same.
        const { token } = await m.edges.enroll(id, { labels: { shared: "yes" } });
        const edge = connectGrpcEdge(`127.0.0.1:${m.port}`, token, answerEchoText(id));
        edges.push(edge);
        edge.send({ frame: { case: "hello", value: { edgeId: id, version: "t", hostname: id, os: "linux/x64", labels: { shared: "yes" }, skills: [meta as never] } } });
      }
      expect(await waitFor(() => fleet.every(({ id }) => Boolean(m.hub.session(id))), 10_000)).toBe(true);
      const byEdge = new Map<string, { ok: boolean; text: string; seq: bigint }>();
      for await (const ev of skills.fanOutSkill({ key: "echo_text", selector: "shared=yes", input: { case: "params", value: { text: "hi" } } })) {
        if (ev.event.case !== "edgeResult") continue;
        const r = ev.event.value;
        byEdge.set(r.edgeId, { ok: Boolean(r.result?.success), text: r.result?.output ? String(toJson(ValueSchema, r.result.output)) : `${r.error?.code}: ${r.error?.message}`, seq: r.auditSeq });
      }
      expect(byEdge.get("shared-s1")).toMatchObject({ ok: true, text: "shared-s1:hi" });
      expect(byEdge.get("shared-s2")).toMatchObject({ ok: true, text: "shared-s2:hi" });
      expect(byEdge.get("shared-i1")).toMatchObject({ ok: false, text: expect.stringMatching(/invalid_argument: invalid params for skill "echo_text": param "text": must be integer/) });
      // One row per edge, each with the params as sent.
      for (const [id, r] of byEdge) {
        const [row] = await m.audit.list({ afterSeq: Number(r.seq) - 1, limit: 1 });
        expect(row).toMatchObject({ deviceId: id, args: { text: "hi" } });
      }
    } finally {
      for (const e of edges) e.close();
    }
  });

  it("keeps the heartbeats of many edges on one timer, and each edge still gets one every interval", async () => {
    const { connectGrpcEdge } = await import("./support/grpc-edge.ts");
    // Interval timers the hub sets (the grpc-js clients in this process set their own).
    const real = globalThis.setInterval;
    const fromHub: string[] = [];
    const intervals = vi.spyOn(globalThis, "setInterval").mockImplementation(((fn: () => void, ms?: number) => {
      const stack = new Error().stack ?? "";
      if (stack.includes("manager/fleet/")) fromHub.push(stack);
      return real(fn, ms);
    }) as typeof setInterval);
    const edges: Array<ReturnType<typeof connectGrpcEdge>> = [];
    try {
      for (let i = 0; i < 30; i++) {
        const id = `beat-${i}`;
        const { token } = await m.edges.enroll(id);
        const edge = connectGrpcEdge(`127.0.0.1:${m.port}`, token);
        edge.send({ frame: { case: "hello", value: { edgeId: id, version: "t", skills: [] } } });
        edges.push(edge);
      }
      expect(await waitFor(() => edges.every((_, i) => Boolean(m.hub.session(`beat-${i}`))), 10_000)).toBe(true);
      // A timer per edge would be 30 calls; the hub's one wheel is started at most once.
      expect(fromHub.length, fromHub.join("\n\n")).toBeLessThanOrEqual(1);
      const since = edges.map((e) => e.received.length);
      await new Promise((r) => setTimeout(r, 2 * HEARTBEAT_MS + 100));
      for (const [i, e] of edges.entries()) {
        expect(e.received.slice(since[i]).some((f) => f.frame.case === "heartbeat"), `edge beat-${i} got a heartbeat`).toBe(true);
      }
    } finally {
      intervals.mockRestore();
      for (const e of edges) e.close();
    }
  });

  it("refuses a wrong token, a revoked token, and a token used for another edge's id", async () => {
    const { connectGrpcEdge } = await import("./support/grpc-edge.ts");
    const hello = (id: string) => ({ frame: { case: "hello" as const, value: { edgeId: id, version: "t", skills: [] } } });

    const wrong = connectGrpcEdge(`127.0.0.1:${m.port}`, "ogt_not-a-real-token");
    wrong.send(hello("edge-x"));
    expect((await wrong.ended).code).toBe(16); // UNAUTHENTICATED
    wrong.close();

    const before = m.hub.session("edge-a1");
    expect(before).toBeDefined();
    const { token: tokB } = await m.edges.enroll("edge-b-owner");
    const takeover = connectGrpcEdge(`127.0.0.1:${m.port}`, tokB);
    takeover.send(hello("edge-a1"));
    const st = await takeover.ended;
    expect(st.code).toBe(7); // PERMISSION_DENIED
    expect(st.details).toMatch(/enrolled for edge "edge-b-owner", not "edge-a1"/);
    takeover.close();
    expect(m.hub.session("edge-a1")).toBe(before); // the real edge-a1 kept its session

    const { token: tokR } = await m.edges.enroll("edge-revoked");
    await m.edges.revoke("edge-revoked");
    const revoked = connectGrpcEdge(`127.0.0.1:${m.port}`, tokR);
    revoked.send(hello("edge-revoked"));
    expect((await revoked.ended).code).toBe(16);
    revoked.close();

    const noHello = connectGrpcEdge(`127.0.0.1:${m.port}`, (await m.edges.enroll("edge-rude")).token);
    noHello.send({ frame: { case: "heartbeat", value: { sentAtUnixMs: 1n } } });
    const st2 = await noHello.ended;
    expect(st2.code).toBe(3); // INVALID_ARGUMENT
    expect(st2.details).toMatch(/first frame must be hello/);
    noHello.close();
  });
});

describe("token re-check of live edges", () => {
  it("notices a revocation made behind the hub's back (another process on the same database) at its periodic, batched re-check", async () => {
    const { connectGrpcEdge } = await import("./support/grpc-edge.ts");
    const { createEdgeStore } = await import("../manager/fleet/edge-store.ts");
    const ids = ["edge-elsewhere-1", "edge-elsewhere-2", "edge-elsewhere-3"];
    const tunnels = [];
    for (const id of ids) {
      const { token } = await m.edges.enroll(id);
      // Answers the manager's heartbeats, so only the revocation can end it.
      const t = connectGrpcEdge(`127.0.0.1:${m.port}`, token, (f, edge) => f.frame.case === "heartbeat" && edge.send({ frame: { case: "heartbeat", value: { sentAtUnixMs: 1n } } }));
      t.send({ frame: { case: "hello", value: { edgeId: id, version: "t", skills: [] } } });
      tunnels.push(t);
    }
    expect(await waitFor(() => ids.every((id) => Boolean(m.hub.session(id))), 10_000)).toBe(true);
    // As `ongrid edge revoke` run by another process on a shared database would: this hub is not told.
    const elsewhere = createEdgeStore(m.database, "another-manager");
    await elsewhere.revoke(ids[0]!);
    await elsewhere.enroll(ids[1]!); // rotation: the live token is no longer the enrolled one
    for (const t of tunnels.slice(0, 2)) {
      const st = await t.ended;
      expect(st.code).toBe(16); // UNAUTHENTICATED
      expect(st.details).toMatch(/the edge's token was revoked or rotated/);
    }
    expect(m.hub.session(ids[0]!)).toBeUndefined();
    expect(m.hub.session(ids[1]!)).toBeUndefined();
    expect(m.hub.session(ids[2]!)).toBeDefined(); // its token is still the enrolled one
    for (const t of tunnels) t.close();
  }, 30_000);
});

describe("fan-out", () => {
  /** The loopback listener the fan-outs probe. */
  const banner = net.createServer((s) => s.end("hello\n"));
  let port = 0;
  beforeAll(async () => {
    edges.push(...(await Promise.all([
      startEdge(m, "edge-a2", { labels: { team: "a", zone: "z2" } }),
      startEdge(m, "edge-a3", { labels: { team: "a", zone: "z2" } }),
      startEdge(m, "edge-b1", { labels: { team: "b" } }),
    ])));
    await new Promise<void>((r) => banner.listen(0, "127.0.0.1", r));
    port = (banner.address() as net.AddressInfo).port;
  });
  afterAll(() => {
    banner.close();
  });

  it("targets three edges by label, streams each result, then a summary; each call is audited", async () => {
    const events = [];
    for await (const ev of skills.fanOutSkill({ key: "probe_tcp", selector: "team=a", input: { case: "params", value: { host: "127.0.0.1", port } }, sessionId: "fan-1" })) {
      events.push(ev);
    }
    const results = events.filter((e) => e.event.case === "edgeResult").map((e) => e.event.value as { edgeId: string; result?: { success: boolean }; auditSeq: bigint });
    expect(results.map((r) => r.edgeId).sort()).toEqual(["edge-a1", "edge-a2", "edge-a3"]);
    expect(results.every((r) => r.result?.success)).toBe(true);
    expect(events.at(-1)?.event.case).toBe("summary");
    expect(events.at(-1)?.event.value).toMatchObject({ targeted: 3, succeeded: 3, failed: 0, timedOut: 0 });
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: "fan-1", limit: 10 });
    expect(rows.map((r) => r.deviceId).sort()).toEqual(["edge-a1", "edge-a2", "edge-a3"]);
    expect(new Set(results.map((r) => Number(r.auditSeq)))).toEqual(new Set(rows.map((r) => r.seq)));
  });

  it("with batch_results, sends the same results in edge_results messages (each edge once, none as a single edge_result), then the summary", async () => {
    const events = [];
    for await (const ev of skills.fanOutSkill({ key: "probe_tcp", selector: "team=a", input: { case: "params", value: { host: "127.0.0.1", port } }, sessionId: "fan-batch", batchResults: true })) {
      events.push(ev);
    }
    expect(events.filter((e) => e.event.case === "edgeResult")).toHaveLength(0);
    const batches = events.filter((e) => e.event.case === "edgeResults").map((e) => (e.event.value as { results: Array<{ edgeId: string; result?: { success: boolean }; auditSeq: bigint }> }).results);
    expect(batches.length).toBeGreaterThanOrEqual(1);
    expect(batches.every((b) => b.length > 0)).toBe(true);
    const results = batches.flat();
    expect(results.map((r) => r.edgeId).sort()).toEqual(["edge-a1", "edge-a2", "edge-a3"]);
    expect(results.every((r) => r.result?.success)).toBe(true);
    expect(events.at(-1)?.event.case).toBe("summary");
    expect(events.at(-1)?.event.value).toMatchObject({ targeted: 3, succeeded: 3, failed: 0 });
    await m.audit.flush();
    const rows = await m.audit.list({ sessionId: "fan-batch", limit: 10 });
    expect(new Set(results.map((r) => Number(r.auditSeq)))).toEqual(new Set(rows.map((r) => r.seq)));
  });

  it("reports an unknown edge id among the targets as an error event, and refuses a bad selector", async () => {
    const events = [];
    for await (const ev of skills.fanOutSkill({ key: "probe_tcp", edgeIds: ["edge-b1", "edge-ghost"], input: { case: "params", value: { host: "127.0.0.1", port: 1, read_banner: false } } })) {
      events.push(ev);
    }
    const ghost = events.find((e) => e.event.case === "edgeResult" && e.event.value.edgeId === "edge-ghost")!.event.value as { error?: { code: string } };
    expect(ghost.error?.code).toBe("not_found");
    expect(events.at(-1)?.event.value).toMatchObject({ targeted: 2, succeeded: 0, failed: 2 });
    const err = await (async () => {
      for await (const _ of skills.fanOutSkill({ key: "probe_tcp", selector: "team=a,=b", input: { case: "params", value: {} } })) void _;
    })().catch((e) => e);
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/selector: clause "=b" is not key=value/);
  });
});

describe("liveness", () => {
  it("reconnects after a manager restart within the backoff bound", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-restart-"));
    const MAX_BACKOFF_MS = 1000;
    // Started again on the same port: one below the ephemeral range (see freeStablePort).
    const port = await freeStablePort();
    let m1: TestManager | undefined = await bootManager({ "tunnel.heartbeat_interval": `${HEARTBEAT_MS}ms`, "server.port": port }, {}, dir);
    const edge = await startEdge(m1, "edge-restart", { args: ["--max-backoff", `${MAX_BACKOFF_MS}ms`] });
    let m2: TestManager | undefined;
    try {
      await m1.stop();
      m1 = undefined;
      m2 = await bootManager({ "tunnel.heartbeat_interval": `${HEARTBEAT_MS}ms`, "server.port": port }, {}, dir);
      // Bound: the edge notices the loss (stream reset, or at worst 3 silent heartbeats) and waits at most one backoff.
      const bound = 3 * HEARTBEAT_MS + MAX_BACKOFF_MS + 5000;
      expect(await waitFor(() => Boolean(m2!.hub.session("edge-restart")), bound), edge.output()).toBe(true);
      expect(edge.output()).toMatch(/tunnel lost; redialling/);
    } finally {
      await edge.stop();
      await m1?.stop();
      await m2?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("marks an edge offline when its tunnel closes, and a revoked edge is disconnected", async () => {
    const e = await startEdge(m, "edge-revoke-me");
    edges.push(e);
    // RevokeEdge needs role admin: an operator is refused (audited) and the edge stays connected
    const refused = (await edgeClientOf(opToken).revokeEdge({ id: "edge-revoke-me" }).catch((x) => x)) as ConnectError;
    expect(refused).toBeInstanceOf(ConnectError);
    expect(refused.code).toBe(Code.PermissionDenied);
    expect(refused.rawMessage).toMatch(/ongrid\.v1\.EdgeService\/RevokeEdge needs role admin or above; "oper" is operator/);
    expect(m.hub.session("edge-revoke-me")).toBeDefined();
    expect((await m.edges.get("edge-revoke-me"))?.revokedAt).toBeFalsy();
    const res = await edgeClientOf().revokeEdge({ id: "edge-revoke-me" });
    expect(res.disconnected).toBe(true);
    expect(m.hub.session("edge-revoke-me")).toBeUndefined();
    // it keeps trying with its revoked token and is refused every time
    expect(await waitFor(() => (e.output().match(/unknown or revoked/g) ?? []).length >= 2, 15_000), e.output()).toBe(true);
    expect(m.hub.session("edge-revoke-me")).toBeUndefined();
    await e.stop();
    const err = (await run("probe_tcp", "edge-revoke-me", { host: "127.0.0.1", port: 1 }).catch((x) => x)) as ConnectError;
    expect(err.code).toBe(Code.NotFound);
  });
});

describe("liveness without a closed socket", () => {
  it("a frozen edge (SIGSTOP) is declared dead after three silent heartbeats; its call fails UNAVAILABLE", async () => {
    const frozen = await startEdge(m, "edge-frozen");
    edges.push(frozen);
    const marker = `sleep 31.${Date.now() % 100000}`;
    const pending = run("exec", "edge-frozen", { command: marker }).catch((e) => e);
    expect(await waitFor(() => pgrep(marker).length > 0, 10_000)).toBe(true);
    frozen.child.kill("SIGSTOP");
    try {
      const err = (await pending) as ConnectError;
      expect(err.code).toBe(Code.Unavailable);
      expect(err.rawMessage, err.rawMessage).toMatch(/no heartbeat from the edge/);
      expect(m.hub.session("edge-frozen")).toBeUndefined();
    } finally {
      frozen.child.kill("SIGCONT");
      for (const pid of pgrep(marker)) process.kill(pid, "SIGKILL");
    }
  });

  it("notices a revocation written straight to the database (another manager or the CLI) and closes the tunnel", async () => {
    const e = await startEdge(m, "edge-db-revoked");
    edges.push(e);
    await m.edges.revoke("edge-db-revoked"); // the store only: no hub.disconnect
    expect(m.hub.session("edge-db-revoked")).toBeDefined();
    expect(await waitFor(() => !m.hub.session("edge-db-revoked"), 12 * HEARTBEAT_MS + 5000)).toBe(true);
  });

  it("a second connection with the same id supersedes the first", async () => {
    const first = await startEdge(m, "edge-twice");
    edges.push(first);
    const s1 = m.hub.session("edge-twice")!;
    const { spawnEdge } = await import("./support/edge.ts");
    const second = spawnEdge(["--manager", m.url, "--token", first.token, "--id", "edge-twice", "--max-backoff", "3s"]);
    edges.push({ ...first, child: second.child, output: second.output, stop: () => stopChild(second.child) });
    expect(await waitFor(() => m.hub.session("edge-twice") !== undefined && m.hub.session("edge-twice") !== s1, 15_000)).toBe(true);
    expect(await waitFor(() => /superseded by a newer connection/.test(first.output()), 10_000), first.output()).toBe(true);
  });
});

describe("TLS between edge and manager", () => {
  it("connects when the edge trusts the manager's CA, and refuses to when it does not", async () => {
    const { makeTestPki } = await import("./support/tls.ts");
    const { spawnEdge } = await import("./support/edge.ts");
    const pki = makeTestPki();
    const tm = await bootManager({ "server.tls_cert": pki.serverCert, "server.tls_key": pki.serverKey, "tunnel.heartbeat_interval": `${HEARTBEAT_MS}ms` });
    try {
      expect(tm.url).toMatch(/^https:/);
      const good = await startEdge(tm, "edge-tls", { args: ["--ca", pki.caCert] });
      edges.push(good);
      const res = await createClient(SkillService, createConnectTransport({ baseUrl: tm.url, httpVersion: "2", nodeOptions: { ca: pki.caPem }, interceptors: [bearer(tm.adminToken)] })).listSkills({ edgeId: "edge-tls" });
      expect(res.skills.length).toBeGreaterThan(0);
      await good.stop();

      const { token } = await tm.edges.enroll("edge-untrusting");
      const bad = spawnEdge(["--manager", tm.url, "--token", token, "--id", "edge-untrusting", "--max-backoff", "500ms"]);
      try {
        expect(await waitFor(() => /certificate|self[- ]signed|unable to verify/i.test(bad.output()), 15_000), bad.output()).toBe(true);
        expect(tm.hub.session("edge-untrusting")).toBeUndefined();
      } finally {
        await stopChild(bad.child);
      }
    } finally {
      await tm.stop();
      rmSync(pki.dir, { recursive: true, force: true });
    }
  });
});

describe("the compiled binary", () => {
  it("runs where no node (or bun) can be executed, and is enrolled with the CLI's token", async () => {
    const { runOngrid } = await import("./support/cli.ts");
    const { EDGE_BIN } = await import("./global-setup.ts");
    const { spawn } = await import("node:child_process");
    // EnrollEdge needs role admin: the CLI with an operator's token is refused, naming the role.
    const refused = await runOngrid(["edge", "enroll", "edge-nonode", "--manager", m.url], { ONGRID_TOKEN: opToken });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/permission_denied: .*EnrollEdge needs role admin or above; "oper" is operator/);
    expect(await m.edges.get("edge-nonode")).toBeUndefined();
    // The CLI enrolls through the running manager (as an admin) and prints the token on its last line.
    const enroll = await runOngrid(["edge", "enroll", "edge-nonode", "--manager", m.url], { ONGRID_TOKEN: m.adminToken });
    expect(enroll.code, enroll.stderr).toBe(0);
    const token = enroll.stdout.trim().split("\n").at(-1)!;
    expect(token).toMatch(/^ogt_[A-Za-z0-9_-]{40,}$/);
    // A private mount namespace where /usr/bin/node is an empty, unexecutable file; bun is not on PATH at all.
    const script = `mount --bind /dev/null /usr/bin/node || exit 90; if node -e 0 2>/dev/null; then exit 91; fi; if command -v bun >/dev/null; then exit 92; fi; exec "$0" "$@"`;
    const child = spawn("unshare", ["--mount", "sh", "-c", script, EDGE_BIN, "--manager", m.url, "--token", token, "--id", "edge-nonode"], {
      env: { PATH: "/usr/bin:/bin" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    try {
      expect(await waitFor(() => Boolean(m.hub.session("edge-nonode")) || child.exitCode !== null, 20_000), out).toBe(true);
      expect(child.exitCode, out).toBeNull();
      const res = await run("host_load", "edge-nonode", {});
      expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
      expect(output(res).cpus).toBeGreaterThan(0);
    } finally {
      await stopChild(child);
    }
    const list = await runOngrid(["edge", "list", "--json", "--manager", m.url], { ONGRID_TOKEN: opToken });
    expect(list.code, list.stderr).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<{ id: string; online: boolean }>;
    expect(rows.find((r) => r.id === "edge-nonode")).toMatchObject({ id: "edge-nonode" });
  });
});

describe("exec: dynamic risk, deadlines, cancellation, a dying edge", () => {
  let ex: TestEdge;
  beforeAll(async () => {
    ex = await startEdge(m, "edge-exec");
    edges.push(ex);
  });

  it("runs a safe command, parks a mutating one for approval (audited ask), and refuses a dangerous one without a signed SOP (audited deny); neither runs", async () => {
    const ok = await run("exec", "edge-exec", { command: "df -h /" });
    expect(ok.result?.success, JSON.stringify(ok.result?.error)).toBe(true);
    expect(output(ok).stdout).toMatch(/Filesystem/);
    await m.audit.flush();
    const [okRow] = await m.audit.list({ afterSeq: Number(ok.auditSeq) - 1, limit: 1 });
    expect(okRow).toMatchObject({ toolName: "exec", deviceId: "edge-exec", decision: "allow", decisionReason: 'safe: "exec" is safe', callerUserId: "oper" });

    // Commands with a visible effect on the edge's host, so "nothing ran" can be checked.
    const scratch = mkdtempSync(join(tmpdir(), "ongrid-exec-gate-"));
    const marker = join(scratch, "written-by-exec");
    const victim = join(scratch, "victim");
    mkdirSync(join(victim, "sub"), { recursive: true });
    try {
      for (const command of ["systemctl restart nginx", `echo ran > ${marker}`]) {
        const res = await run("exec", "edge-exec", { command });
        expect(res.result, command).toBeUndefined();
        expect(res.approval?.state, command).toBe(ApprovalState.PENDING);
        expect(res.approval).toMatchObject({ key: "exec", edgeId: "edge-exec", effectiveClass: SkillClass.MUTATING, requesterUserId: "oper", requesterRole: "operator" });
        await m.audit.flush();
        const [row] = await m.audit.list({ afterSeq: Number(res.auditSeq) - 1, limit: 1 });
        expect(row.seq).toBe(Number(res.auditSeq));
        expect(row).toMatchObject({ toolName: "exec", deviceId: "edge-exec", decision: "ask", approvalId: res.approval!.id, result: null, error: "" });
        expect(row.decisionReason).toMatch(/^approval_required: "exec" is mutating/);
        expect((await m.approvals.get(res.approval!.id))?.state).toBe("pending");
      }
      for (const command of ["mkfs.ext4 /dev/sdz", `rm -rf ${victim}`]) {
        const err = (await run("exec", "edge-exec", { command }).catch((e) => e)) as ConnectError;
        expect(err, command).toBeInstanceOf(ConnectError);
        expect(err.code, command).toBe(Code.PermissionDenied);
        expect(err.rawMessage).toMatch(/"exec" is dangerous for these params and needs a signed SOP covering it/);
        const row = await auditRowOf(err);
        expect(row).toMatchObject({ toolName: "exec", deviceId: "edge-exec", decision: "deny", approvalId: "", result: null });
        expect(row.decisionReason).toMatch(/^sop_missing: /);
      }
      // nothing ran: give a (wrongly) dispatched command time to act, then look
      await new Promise((r) => setTimeout(r, 500));
      expect(existsSync(marker)).toBe(false);
      expect(existsSync(join(victim, "sub"))).toBe(true);
      await m.audit.flush();
      const rows = await m.audit.list({ edgeId: "edge-exec", toolName: "exec", limit: 1000 });
      expect(rows.filter((r) => r.decision === "allow").map((r) => (r.args as { command: string }).command)).toEqual(["df -h /"]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it("ends a call past its deadline with deadline_exceeded and leaves no process behind", async () => {
    const marker = `sleep 41.${Date.now() % 100000}`;
    const res = await run("exec", "edge-exec", { command: marker }, 800);
    expect(res.result?.success).toBe(false);
    expect(res.result?.error?.code).toBe("deadline_exceeded");
    expect(await waitFor(() => pgrep(marker).length === 0, 5000)).toBe(true);
  });

  it("a cancelled `exec sleep 60` leaves no process behind", async () => {
    const marker = `sleep 60.${Date.now() % 100000}`;
    const ctl = new AbortController();
    const pending = run("exec", "edge-exec", { command: marker }, 0, ctl.signal).catch((e) => e);
    expect(await waitFor(() => pgrep(marker).length > 0, 10_000)).toBe(true);
    const pids = pgrep(marker);
    ctl.abort();
    const gone = (pid: number) => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    };
    // gone entirely: killed and reaped by the edge (no zombie left either)
    expect(await waitFor(() => pids.every(gone), 5000), `still present: ${pids.filter((p) => !gone(p))}`).toBe(true);
    const err = (await pending) as ConnectError;
    expect(err.code).toBe(Code.Canceled); // the client gave up; the manager audits the cancellation
    const audited = async () => {
      await m.audit.flush();
      return (await m.audit.list({ edgeId: "edge-exec", toolName: "exec", limit: 1000 })).some((r) => r.error.startsWith("cancelled") && JSON.stringify(r.args).includes(marker));
    };
    expect(await waitFor(audited, 5000)).toBe(true);
  });

  it("kill -9 of an edge mid-call ends the call with UNAVAILABLE within the heartbeat bound, audited", async () => {
    const victim = await startEdge(m, "edge-victim");
    edges.push(victim);
    const marker = `sleep 30.${Date.now() % 100000}`;
    const pending = run("exec", "edge-victim", { command: marker }).catch((e) => e);
    expect(await waitFor(() => pgrep(marker).length > 0, 10_000)).toBe(true);
    const killedAt = Date.now();
    victim.child.kill("SIGKILL");
    const err = (await pending) as ConnectError;
    const took = Date.now() - killedAt;
    expect(err).toBeInstanceOf(ConnectError);
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toMatch(/edge "edge-victim" went away during the call/);
    // The bound: three missed heartbeats (plus slack for a loaded machine); a closed socket is noticed sooner.
    expect(took).toBeLessThan(3 * HEARTBEAT_MS + 5000);
    expect((await auditRowOf(err)).error).toMatch(/^unavailable: edge "edge-victim" went away/);
    expect(m.hub.session("edge-victim")).toBeUndefined();
    // the orphaned sleep belonged to the killed edge's group: clean it up for the machine's sake
    for (const pid of pgrep(marker)) process.kill(pid, "SIGKILL");
  });
});

describe("tail_file through the tunnel stays inside the allowed roots", () => {
  it("reads a file inside the edge's root and refuses a path or symlink outside it", async () => {
    const logs = join(root, "logs");
    mkdirSync(logs, { recursive: true });
    writeFileSync(join(logs, "app.log"), Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join("\n") + "\n");
    const outside = mkdtempSync(join(tmpdir(), "ongrid-outside-"));
    writeFileSync(join(outside, "secret.txt"), "top secret\n");
    symlinkSync(join(outside, "secret.txt"), join(logs, "escape.log"));
    try {
      const ok = await run("tail_file", "edge-a1", { path: join(logs, "app.log"), lines: 3 });
      expect(ok.result?.success, JSON.stringify(ok.result?.error)).toBe(true);
      expect(output(ok).lines).toEqual(["line 48", "line 49", "line 50"]);
      for (const path of [join(outside, "secret.txt"), join(logs, "..", "..", "..", outside, "secret.txt"), join(logs, "escape.log")]) {
        const res = await run("tail_file", "edge-a1", { path });
        expect(res.result?.success, path).toBe(false);
        expect(res.result?.error?.code, path).toBe("path_not_allowed");
        expect(JSON.stringify(output(res))).not.toContain("top secret");
      }
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

describe("host_netns_inspect through the tunnel", () => {
  it("reports a namespace created with ip netns add, with its interface and address", async () => {
    const ns = `ongrid-e2e-${process.pid}`;
    const ip = (...a: string[]) => execFileSync("ip", a, { stdio: "pipe" });
    ip("netns", "add", ns);
    try {
      ip("-n", ns, "link", "add", "og0", "type", "veth", "peer", "name", "og1");
      ip("-n", ns, "addr", "add", "10.231.7.1/24", "dev", "og0");
      ip("-n", ns, "link", "set", "og0", "up");
      const res = await run("host_netns_inspect", "edge-a1", { namespace: ns });
      expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
      const found = output(res).namespaces.find((n: { name: string }) => n.name === ns);
      const og0 = found.interfaces.find((i: { name: string }) => i.name === "og0");
      expect(og0.addresses).toContain("10.231.7.1/24");
      expect(found.routes.some((r: { dst: string; dev: string }) => r.dst === "10.231.7.0/24" && r.dev === "og0")).toBe(true);
    } finally {
      ip("netns", "del", ns);
    }
  });
});
