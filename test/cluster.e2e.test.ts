/**
 * Scale-out (M2, issue 31): three managers on one real PostgreSQL, compiled edges held by two of
 * them. Any manager lists the whole fleet and runs calls and fan-outs on any edge (forwarded to
 * the holder over the peer service); the entry manager writes the one audit row; cancellation
 * crosses the hop; an unreachable holder is a clear `unavailable` naming it; an approval filed on
 * one manager is seen and voted on another and runs wherever its edge is held; a manager that
 * starts while another runs an approved call leaves that call alone; the peer service refuses
 * anything but the cluster credential.
 */
import { execSync } from "node:child_process";
import http2 from "node:http2";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { EdgeService } from "../proto/gen/ongrid/v1/edge_service_pb.ts";
import { ApprovalService, ApprovalState, type WatchResponse } from "../proto/gen/ongrid/v1/approval_service_pb.ts";
import { PeerService } from "../proto/gen/ongrid/v1/peer_service_pb.ts";
import { AgentService } from "../proto/gen/ongrid/v1/agent_service_pb.ts";
import { PlaybookService } from "../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { BODY_SECTIONS } from "../manager/playbooks/parse.ts";
import { writePack } from "./support/packs.ts";
import { approvals, edges as edgesTable, managers } from "../manager/db/schema/index.ts";
import { peerHeaders } from "../manager/fleet/peer-auth.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { startEdge, waitFor, type TestEdge } from "./support/edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { createTestDatabase, pgUnavailableReason, type TestDatabase } from "./support/pg.ts";
import { refusal } from "./support/rejection.ts";
import { freePort } from "./support/free-port.ts";
import { makeTestPki, type TestPki } from "./support/tls.ts";

const reason = await pgUnavailableReason();
const requirePg = process.env.CI === "true";

type Clients = { skills: Client<typeof SkillService>; edges: Client<typeof EdgeService>; approvals: Client<typeof ApprovalService> };

describe.skipIf(reason !== null && !requirePg)(`three managers on one database${reason ? ` (skipped: PostgreSQL not reachable: ${reason})` : ""}`, () => {
  let pg: TestDatabase;
  const ms: TestManager[] = [];
  const fleet: TestEdge[] = [];
  let dir: string;
  const as = new Map<string, Clients>();
  const client = (m: TestManager, user: string): Clients => {
    const key = `${m.url} ${user}`;
    let c = as.get(key);
    if (!c) {
      const t = createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(tokens[user])] });
      as.set(key, (c = { skills: createClient(SkillService, t), edges: createClient(EdgeService, t), approvals: createClient(ApprovalService, t) }));
    }
    return c;
  };
  const tokens: Record<string, string> = {};
  const [A, B, C] = [0, 1, 2];

  beforeAll(async () => {
    if (reason !== null) throw new Error(`PostgreSQL is required when CI=true: ${reason}`);
    dir = mkdtempSync(join(tmpdir(), "ongrid-cluster-"));
    pg = await createTestDatabase();
    mkdirSync(join(dir, "playbooks"));
    // One playbook directory for all three (as one image or one mount would give them), not watched.
    for (let i = 0; i < 3; i++) ms.push(await bootManager({ database_url: pg.url, "server.presence_poll": "200ms", "approvals.ttl": "10m", "playbooks.dirs": join(dir, "playbooks"), "playbooks.watch": false }));
    fleet.push(await startEdge(ms[A], "edge-on-a", { labels: { team: "pay" } }));
    fleet.push(await startEdge(ms[B], "edge-on-b", { labels: { team: "pay" } }));
    tokens.olga = await makeUser(ms[A], "olga", "operator");
    tokens.alice = await makeUser(ms[A], "alice", "approver");
    tokens.admin = ms[A].adminToken;
    // Every manager sees both edges before the tests start.
    for (const m of ms) expect(await waitFor(() => Boolean(m.hub.session("edge-on-a") && m.hub.session("edge-on-b")), 15_000)).toBe(true);
  }, 180_000);
  afterAll(async () => {
    await Promise.all(fleet.map((e) => e.stop()));
    for (const m of ms.reverse()) await m.stop().catch(() => undefined);
    await pg?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const auditRows = async (m: TestManager, filter: (r: { toolName: string; deviceId: string; args: unknown }) => boolean) => {
    for (const x of ms) await x.audit.flush();
    return (await m.audit.list({ limit: 1000 })).filter(filter);
  };

  test("every manager lists every edge online and names its holder", async () => {
    for (const m of ms) {
      const { edges } = await client(m, "admin").edges.listEdges({});
      const byId = new Map(edges.map((e) => [e.id, e]));
      expect(byId.get("edge-on-a")).toMatchObject({ online: true, managerId: ms[A].lease.id, labels: { team: "pay" } });
      expect(byId.get("edge-on-b")).toMatchObject({ online: true, managerId: ms[B].lease.id });
      const one = await client(m, "admin").edges.getEdge({ id: "edge-on-b" });
      expect(one.edge!.skills.map((s) => s.key)).toContain("exec");
    }
  });

  test("ExecuteSkill through any manager runs on the holder's tunnel, with one audit row written by the entry manager", async () => {
    for (const m of ms) {
      for (const edgeId of ["edge-on-a", "edge-on-b"]) {
        const marker = `cluster-${m.lease.id}-${edgeId}`;
        const res = await client(m, "olga").skills.executeSkill({ key: "exec", edgeId, input: { case: "params", value: { command: `echo ${marker}` } as never } });
        expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
        expect(JSON.stringify(res.result?.output)).toContain(marker);
        expect(res.result?.edgeId).toBe(edgeId);
        const rows = await auditRows(m, (r) => r.toolName === "exec" && JSON.stringify(r.args).includes(marker));
        expect(rows.length).toBe(1);
        expect(rows[0]).toMatchObject({ deviceId: edgeId, callerUserId: "olga", decision: "allow" });
      }
    }
  });

  test("a fan-out through one manager reaches the edges every manager holds: one merged stream, one summary", async () => {
    for (const m of [ms[C], ms[A]]) {
      const results: string[] = [];
      let summary: { targeted: number; succeeded: number } | undefined;
      for await (const ev of client(m, "olga").skills.fanOutSkill({ key: "exec", selector: "team=pay", input: { case: "params", value: { command: "echo fan" } as never } })) {
        if (ev.event.case === "edgeResult") results.push(`${ev.event.value.edgeId}:${ev.event.value.result?.success}`);
        if (ev.event.case === "edgeResults") for (const r of ev.event.value.results) results.push(`${r.edgeId}:${r.result?.success}`);
        if (ev.event.case === "summary") summary = ev.event.value;
      }
      expect(results.sort()).toEqual(["edge-on-a:true", "edge-on-b:true"]);
      expect(summary).toMatchObject({ targeted: 2, succeeded: 2 });
    }
  });

  test("forwarded fan-out results reach callers of every protocol and codec alike, batched or not, each with its one row", async () => {
    // Through C, which holds no edge (both shares forwarded, their results encoded by A and B), and
    // through A (its own edge's result encoded here, in the same messages as B's bytes).
    for (const m of [ms[C], ms[A]]) {
    const opts = { baseUrl: m.url, interceptors: [bearer(tokens.olga)] };
    const transports = {
      grpc: createGrpcTransport(opts),
      "grpc-web": createGrpcWebTransport({ ...opts, httpVersion: "1.1" }),
      "grpc-web+json": createGrpcWebTransport({ ...opts, httpVersion: "1.1", useBinaryFormat: false }),
      "connect+proto": createConnectTransport({ ...opts, httpVersion: "2" }),
      "connect+json": createConnectTransport({ ...opts, httpVersion: "1.1", useBinaryFormat: false }),
    };
    for (const [name, transport] of Object.entries(transports)) {
      for (const batchResults of [false, true]) {
        const marker = `codec-${m.lease.id}-${name}-${batchResults}`;
        const got = new Map<string, { success?: boolean; output?: unknown; edgeId?: string; auditSeq: bigint }>();
        let summary: { targeted: number; succeeded: number } | undefined;
        for await (const ev of createClient(SkillService, transport).fanOutSkill({ key: "exec", selector: "team=pay", batchResults, input: { case: "params", value: { command: `echo ${marker}` } as never } })) {
          const results = ev.event.case === "edgeResult" ? [ev.event.value] : ev.event.case === "edgeResults" ? ev.event.value.results : [];
          for (const r of results) got.set(r.edgeId, { success: r.result?.success, output: r.result?.output && toJson(ValueSchema, r.result.output), edgeId: r.result?.edgeId, auditSeq: r.auditSeq });
          if (ev.event.case === "summary") summary = ev.event.value;
        }
        expect([...got.keys()].sort(), marker).toEqual(["edge-on-a", "edge-on-b"]);
        expect(summary, marker).toMatchObject({ targeted: 2, succeeded: 2 });
        const rows = await auditRows(m, (r) => r.toolName === "exec" && JSON.stringify(r.args).includes(marker));
        expect(rows.map((r) => r.deviceId).sort(), marker).toEqual(["edge-on-a", "edge-on-b"]);
        for (const row of rows) {
          const r = got.get(row.deviceId)!;
          expect(r, marker).toMatchObject({ success: true, edgeId: row.deviceId, auditSeq: BigInt(row.seq) });
          expect(JSON.stringify(r.output), marker).toContain(marker);
          expect(r.output, marker).toEqual((row.result as { output: unknown }).output);
        }
      }
    }
    expect((await m.audit.verify()).ok).toBe(true);
    }
  });

  test("cancelling a forwarded call cancels it on the edge behind the holder", async () => {
    const ctl = new AbortController();
    const started = Date.now();
    const call = client(ms[C], "olga").skills.executeSkill({ key: "exec", edgeId: "edge-on-a", timeoutMs: 60_000, input: { case: "params", value: { command: "sleep 41.5" } as never } }, { signal: ctl.signal });
    // The sleep runs on the edge before the caller gives up.
    expect(await waitFor(() => execSync("ps -eo args").toString().includes("sleep 41.5"), 10_000)).toBe(true);
    ctl.abort();
    const err = await refusal(call);
    expect(err.code).toBe(Code.Canceled);
    // The edge kills the command once the cancel reaches it through both managers.
    expect(await waitFor(() => !execSync("ps -eo args").toString().includes("sleep 41.5"), 10_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  test("an unreachable holder is a clear unavailable naming it", async () => {
    const db = ms[C].database.db;
    const port = await freePort();
    const at = new Date();
    await db.insert(managers).values({ id: "ghost-manager", advertiseUrl: `http://127.0.0.1:${port}`, startedAt: at, renewedAt: at, leaseUntil: new Date(at.getTime() + 60_000) });
    await ms[C].edges.enroll("edge-on-ghost", { labels: { team: "ghost" } });
    const [model] = await db.select().from(edgesTable).where(eq(edgesTable.id, "edge-on-a"));
    await db.update(edgesTable).set({ online: true, managerId: "ghost-manager", skills: model.skills, skillsDigest: model.skillsDigest, presenceAt: new Date() }).where(eq(edgesTable.id, "edge-on-ghost"));
    await ms[C].cluster.refresh();
    expect(ms[C].cluster.holderOf("edge-on-ghost")).toBe("ghost-manager");
    const err = await refusal(client(ms[C], "olga").skills.executeSkill({ key: "exec", edgeId: "edge-on-ghost", input: { case: "params", value: { command: "echo never" } as never } }));
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toContain('manager "ghost-manager"');
    expect(err.rawMessage).toContain(`127.0.0.1:${port}`);
    // Still audited, once, by the entry manager.
    const rows = await auditRows(ms[C], (r) => r.deviceId === "edge-on-ghost" && JSON.stringify(r.args).includes("echo never"));
    expect(rows.length).toBe(1);
    await db.delete(managers).where(eq(managers.id, "ghost-manager"));
    await db.update(edgesTable).set({ online: false, presenceAt: new Date() }).where(eq(edgesTable.id, "edge-on-ghost"));
  });

  test("an approval filed on A is seen on B as it happens, voted on C, and runs on the edge B holds", async () => {
    const target = join(dir, "approved-touch");
    const seen: WatchResponse[] = [];
    const ctl = new AbortController();
    const watching = (async () => {
      try {
        for await (const ev of client(ms[B], "alice").approvals.watch({}, { signal: ctl.signal })) seen.push(ev);
      } catch (err) {
        if (!ctl.signal.aborted) throw err;
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    const parked = await client(ms[A], "olga").skills.executeSkill({ key: "exec", edgeId: "edge-on-b", input: { case: "params", value: { command: `touch ${target}` } as never } });
    const id = parked.approval?.id;
    expect(id, JSON.stringify(parked.result)).toBeTruthy();
    expect(await waitFor(() => seen.some((e) => e.approval?.id === id && e.approval?.state === ApprovalState.PENDING), 10_000)).toBe(true);
    await client(ms[C], "alice").approvals.approve({ id: id! });
    expect(await waitFor(async () => (await client(ms[B], "alice").approvals.getApproval({ id: id! })).approval!.state === ApprovalState.EXECUTED, 20_000)).toBe(true);
    expect(existsSync(target)).toBe(true);
    // B's watcher saw it run and end; C ran it.
    expect(await waitFor(() => seen.some((e) => e.approval?.id === id && e.approval?.state === ApprovalState.EXECUTED), 10_000)).toBe(true);
    const [row] = await ms[A].database.db.select().from(approvals).where(eq(approvals.id, id!));
    expect(row.runningManager).toBe(ms[C].lease.id);
    ctl.abort();
    await watching;
  });

  test("a manager starting while another runs an approved call leaves that call running", async () => {
    const target = join(dir, "slow-touch");
    const parked = await client(ms[A], "olga").skills.executeSkill({ key: "exec", edgeId: "edge-on-a", timeoutMs: 30_000, input: { case: "params", value: { command: `sleep 4 && touch ${target}` } as never } });
    const id = parked.approval?.id;
    expect(id, JSON.stringify(parked.result)).toBeTruthy();
    await client(ms[B], "alice").approvals.approve({ id: id! });
    expect(await waitFor(async () => (await client(ms[A], "alice").approvals.getApproval({ id: id! })).approval!.state === ApprovalState.RUNNING, 10_000)).toBe(true);
    const late = await bootManager({ database_url: pg.url, "server.presence_poll": "200ms" });
    try {
      expect((await client(ms[A], "alice").approvals.getApproval({ id: id! })).approval!.state).toBe(ApprovalState.RUNNING);
      expect(await waitFor(async () => (await client(ms[A], "alice").approvals.getApproval({ id: id! })).approval!.state === ApprovalState.EXECUTED, 20_000)).toBe(true);
      expect(existsSync(target)).toBe(true);
    } finally {
      await late.stop();
    }
  });

  test("one audit chain under three concurrent writers: every call has exactly one row and the chain verifies", async () => {
    const run = `chain-${Date.now()}`;
    const calls: Array<Promise<unknown>> = [];
    for (const m of ms) for (let i = 0; i < 40; i++) {
      const edgeId = i % 2 ? "edge-on-a" : "edge-on-b";
      calls.push(client(m, "olga").skills.executeSkill({ key: "exec", edgeId, input: { case: "params", value: { command: `echo ${run}-${m.lease.id}-${i}` } as never } }));
    }
    const settled = await Promise.allSettled(calls);
    expect(settled.filter((r) => r.status === "rejected")).toEqual([]);
    const rows = await auditRows(ms[B], (r) => r.toolName === "exec" && JSON.stringify(r.args).includes(run));
    expect(rows.length).toBe(120);
    expect(new Set(rows.map((r) => JSON.stringify(r.args))).size).toBe(120);
    for (const m of ms) expect((await m.audit.verify()).ok).toBe(true);
  });

  test("an edge's pack rescan reaches every manager: the new skill is listed and runs through any of them", async () => {
    const packs = join(dir, "edge-packs");
    mkdirSync(packs);
    const edge = await startEdge(ms[C], "edge-packs-on-c", { labels: { team: "packs" }, args: ["--pack-dir", packs] });
    fleet.push(edge);
    writePack(packs, "late", "pack_cluster_late");
    for (const m of ms) {
      const listed = async () => (await client(m, "olga").skills.listSkills({ edgeId: "edge-packs-on-c" })).skills.some((s) => s.key === "pack_cluster_late");
      expect(await waitFor(listed, 15_000), `listed through ${m.lease.id}`).toBe(true);
      const res = await client(m, "olga").skills.executeSkill({ key: "pack_cluster_late", edgeId: "edge-packs-on-c", input: { case: "paramsJson", value: '{"word":"cluster"}' } });
      expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
    }
  });

  test("a playbook reload asked through one manager reloads every manager", async () => {
    const name = "cluster_reload_check";
    mkdirSync(join(dir, "playbooks", name));
    writeFileSync(join(dir, "playbooks", name, "SKILL.md"), `---\nname: ${name}\ndescription: test playbook for the cluster reload\n---\n${BODY_SECTIONS.map((x) => `## ${x}\ntext\n`).join("")}`);
    const listed = async (m: TestManager) => (await createClient(PlaybookService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(tokens.admin)] })).listPlaybooks({})).playbooks.some((p) => p.name === name);
    for (const m of ms) expect(await listed(m)).toBe(false);
    const r = await createClient(PlaybookService, createConnectTransport({ baseUrl: ms[A].url, httpVersion: "1.1", interceptors: [bearer(tokens.admin)] })).reload({});
    expect(r.added).toContain(name);
    for (const m of ms) expect(await waitFor(() => listed(m), 10_000), `listed on ${m.lease.id}`).toBe(true);
  });

  test("a diagnosis served by any manager runs its steps on an edge another manager holds", async () => {
    // No model: the playbook's fallback steps run, through the dispatcher, on edge-on-a (held by A).
    for (const m of [ms[B], ms[C]]) {
      const agent = createClient(AgentService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(tokens.olga)] }));
      const events: Array<{ type: string; sessionId: string; data: Record<string, unknown> }> = [];
      for await (const ev of agent.diagnose({ text: "edge-on-a is slow, load is high", edgeId: "edge-on-a" })) events.push({ type: ev.type, sessionId: ev.sessionId, data: (ev.data ?? {}) as Record<string, unknown> });
      const results = events.filter((e) => e.type === "tool_result");
      expect(results.length, JSON.stringify(events.map((e) => e.type))).toBeGreaterThan(0);
      expect(results.some((e) => e.data.success === true), JSON.stringify(results).slice(0, 2000)).toBe(true);
      expect(events.at(-1)?.type).toBe("done");
      // Each step ran on edge-on-a (held by A) and was audited once, by the manager serving the diagnosis.
      const sessionId = events[0].sessionId;
      const rows = await auditRows(m, (r) => (r as { sessionId?: string }).sessionId === sessionId && r.deviceId !== "");
      expect(rows.length).toBe(results.length);
      expect(new Set(rows.map((r) => r.deviceId))).toEqual(new Set(["edge-on-a"]));
    }
  });

  test("the peer service takes the cluster credential only: no proof, a user's token, or a wrong secret are refused", async () => {
    const peer = (headers: Record<string, string>) =>
      createClient(PeerService, createGrpcTransport({ baseUrl: ms[A].url, interceptors: [(next) => (req) => (Object.entries(headers).forEach(([k, v]) => req.header.set(k, v)), next(req))] }));
    const req = { paramsJson: ['{"command":"touch /tmp/ongrid-peer-forged"}'], calls: [{ edgeId: "edge-on-a", key: "exec", paramsIndex: 0, timeoutMs: 5000 }] };
    const drain = async (h: Record<string, string>) => {
      for await (const _ of peer(h).execute(req)) void _;
    };
    for (const h of [{}, { authorization: `Bearer ${tokens.admin}` }, peerHeaders("not-the-secret-of-this-cluster-0123456789", ms[B].lease.id)]) {
      const err = await refusal(drain(h));
      expect(err).toBeInstanceOf(ConnectError);
      expect(err.code).toBe(Code.Unauthenticated);
    }
    // Link, the managers' own path, refuses the same way before reading a frame.
    for (const h of [{}, { authorization: `Bearer ${tokens.admin}` }, peerHeaders("not-the-secret-of-this-cluster-0123456789", ms[B].lease.id)]) {
      const session = http2.connect(ms[A].url);
      const status = await new Promise<string>((done, fail) => {
        const stream = session.request({ ":method": "POST", ":path": "/ongrid.v1.PeerService/Link", "content-type": "application/grpc+proto", te: "trailers", ...h });
        stream.on("response", (r) => r["grpc-status"] !== undefined && done(String(r["grpc-status"])));
        stream.on("trailers", (t) => done(String(t["grpc-status"])));
        stream.on("error", fail);
        stream.resume();
      });
      session.close();
      expect(status).toBe(String(Code.Unauthenticated));
    }
    expect(existsSync("/tmp/ongrid-peer-forged")).toBe(false);
    // Refused like any unauthenticated request: audited (throttled per RPC), the reason named.
    const refusedRows = await auditRows(ms[A], (r) => r.toolName.startsWith("ongrid.v1.PeerService/"));
    expect(refusedRows.length).toBeGreaterThanOrEqual(2);
    expect(refusedRows.map((r) => r.toolName).sort()).toEqual(expect.arrayContaining(["ongrid.v1.PeerService/Execute", "ongrid.v1.PeerService/Link"]));
    for (const r of refusedRows) expect(r).toMatchObject({ decision: "deny", callerUserId: "" });
  });
});

describe.skipIf(reason !== null && !requirePg)(`forwarding over TLS${reason ? ` (skipped: PostgreSQL not reachable: ${reason})` : ""}`, () => {
  let pg: TestDatabase;
  let pki: TestPki;
  let other: TestPki;
  const ms: TestManager[] = [];
  let edge: TestEdge | undefined;
  beforeAll(async () => {
    if (reason !== null) throw new Error(`PostgreSQL is required when CI=true: ${reason}`);
    pg = await createTestDatabase();
    pki = makeTestPki();
    other = makeTestPki();
    const tls = { "server.tls_cert": pki.serverCert, "server.tls_key": pki.serverKey, "server.presence_poll": "200ms" };
    // The second manager trusts the managers' CA explicitly; the third trusts another CA only.
    ms.push(await bootManager({ database_url: pg.url, ...tls }));
    ms.push(await bootManager({ database_url: pg.url, ...tls, "server.peer_ca": pki.caCert }));
    ms.push(await bootManager({ database_url: pg.url, ...tls, "server.peer_ca": other.caCert }));
    edge = await startEdge(ms[0], "edge-tls-peer", { args: ["--ca", pki.caCert] });
    for (const m of ms) expect(await waitFor(() => Boolean(m.hub.session("edge-tls-peer")), 15_000)).toBe(true);
  }, 120_000);
  afterAll(async () => {
    await edge?.stop();
    for (const m of ms.reverse()) await m.stop().catch(() => undefined);
    await pg?.drop();
    for (const p of [pki, other]) if (p) rmSync(p.dir, { recursive: true, force: true });
  });

  test("a manager forwards over https to the holder, verifying its certificate; one trusting another CA refuses it, naming the holder", async () => {
    expect(ms[0].url).toMatch(/^https:/);
    const via = (m: TestManager) =>
      createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "2", nodeOptions: { ca: pki.caPem }, interceptors: [bearer(m.adminToken)] })).executeSkill({ key: "exec", edgeId: "edge-tls-peer", input: { case: "params", value: { command: "echo over-tls" } as never } });
    const res = await via(ms[1]);
    expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
    expect(JSON.stringify(res.result?.output)).toContain("over-tls");
    const err = await refusal(via(ms[2]));
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toContain(`manager "${ms[0].lease.id}"`);
    expect(err.rawMessage).toMatch(/certificate/i);
  });
});
