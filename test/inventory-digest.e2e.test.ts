/**
 * Hello by inventory digest (tunnel.proto Hello.inventory_digest, InventoryRequest, Welcome.inventory_digest):
 * edges of one version share an inventory, so after the first of them the manager takes the
 * skills it already holds under the digest instead of reading them again from every hello. The
 * manager computes digests itself and never takes an edge's word for one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { MetadataSchema } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { ConnectRequestSchema, ConnectResponseSchema, type ConnectRequest, type ConnectResponse, type Welcome } from "../proto/gen/ongrid/v1/tunnel_pb.ts";
import { inventoryDigest } from "../skill/proto.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { answerEchoText, connectGrpcEdge, ECHO_TEXT_METADATA, type GrpcEdge } from "./support/grpc-edge.ts";
import { bearer, makeUser } from "./support/auth.ts";
import { spawnEdge, startEdge, stopChild, waitFor } from "./support/edge.ts";

let m: TestManager;
let skills: ReturnType<typeof createClient<typeof SkillService>>;
const open: GrpcEdge[] = [];

beforeAll(async () => {
  m = await bootManager();
  skills = createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", interceptors: [bearer(await makeUser(m, "oper", "operator"))] }));
});
afterAll(async () => {
  for (const e of open) e.close();
  await m?.stop();
});

/** A hand-written edge (grpc-js) that answers echo_text calls with "<id>:<text>". */
async function fakeEdge(id: string): Promise<GrpcEdge> {
  const { token } = await m.edges.enroll(id);
  const edge = connectGrpcEdge(`127.0.0.1:${m.port}`, token, answerEchoText(id));
  open.push(edge);
  return edge;
}

async function inventoryRequested(edge: GrpcEdge): Promise<void> {
  expect(await waitFor(() => edge.received.some((f) => f.frame.case === "inventoryRequest"), 10_000)).toBe(true);
}

async function welcomeOf(edge: GrpcEdge): Promise<Welcome> {
  let w: ConnectResponse | undefined;
  expect(await waitFor(() => Boolean((w = edge.received.find((f) => f.frame.case === "welcome"))), 10_000)).toBe(true);
  return w!.frame.value as Welcome;
}

async function echo(edgeId: string): Promise<string> {
  const res = await skills.executeSkill({ key: "echo_text", edgeId, input: { case: "params", value: { text: "hi" } } });
  expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
  return String(toJson(ValueSchema, res.result!.output!));
}

const hello = (id: string, extra: Record<string, unknown>) => ({ frame: { case: "hello" as const, value: { edgeId: id, version: "t", hostname: id, os: "linux/x64", skills: [], ...extra } } });

describe("hello by inventory digest", () => {
  const echoDigest = inventoryDigest([create(MetadataSchema, ECHO_TEXT_METADATA)]);

  it("asks an edge naming a digest it does not hold for its inventory, and welcomes and admits it when the inventory arrives", async () => {
    const e = await fakeEdge("dig-1");
    e.send(hello("dig-1", { inventoryDigest: echoDigest }));
    await inventoryRequested(e);
    // Not welcomed, not admitted: no call can reach an edge whose skills are unknown.
    await new Promise((r) => setTimeout(r, 200));
    expect(e.received.some((f) => f.frame.case === "welcome")).toBe(false);
    expect(m.hub.session("dig-1")).toBeUndefined();
    e.send({ frame: { case: "inventory", value: { skills: [ECHO_TEXT_METADATA] } } });
    const w = await welcomeOf(e);
    expect(w.edgeId).toBe("dig-1");
    expect(w.inventoryDigest).toBe(echoDigest);
    // Welcomed means admitted.
    expect(m.hub.session("dig-1")).toBeDefined();
    expect(await echo("dig-1")).toBe("dig-1:hi");
  });

  it("admits the next edge naming that digest at once, with the same skills, acknowledging the digest", async () => {
    const e = await fakeEdge("dig-2");
    e.send(hello("dig-2", { inventoryDigest: echoDigest }));
    const w = await welcomeOf(e);
    expect(w.inventoryDigest).toBe(echoDigest);
    expect(e.received.some((f) => f.frame.case === "inventoryRequest")).toBe(false);
    expect(m.hub.session("dig-2")).toBeDefined();
    expect([...m.hub.session("dig-2")!.skills.keys()]).toEqual(["echo_text"]);
    expect(await echo("dig-2")).toBe("dig-2:hi");
    // The edges table records the skills for this edge too.
    const listed = (await m.edges.list()).find((r) => r.id === "dig-2") as { skills?: Array<{ key: string }> } | undefined;
    expect(listed?.skills?.map((s) => s.key)).toEqual(["echo_text"]);
  });

  it("acknowledges a full hello with the digest it computed over the skills, not the one the edge claims, and never serves the claimed one", async () => {
    const other = { ...ECHO_TEXT_METADATA, description: "Use when testing the tunnel: a variant of echo." };
    const claimed = "f".repeat(64);
    const liar = await fakeEdge("dig-liar");
    liar.send(hello("dig-liar", { skills: [other], inventoryDigest: claimed }));
    const w = await welcomeOf(liar);
    expect(w.inventoryDigest).toBe(inventoryDigest([create(MetadataSchema, other)]));
    expect(w.inventoryDigest).not.toBe(claimed);
    expect(m.hub.session("dig-liar")).toBeDefined();
    // Another edge naming the claimed digest is not given the liar's skills.
    const next = await fakeEdge("dig-3");
    next.send(hello("dig-3", { inventoryDigest: claimed }));
    await inventoryRequested(next);
    await new Promise((r) => setTimeout(r, 200));
    expect(m.hub.session("dig-3")).toBeUndefined();
  });

  it("ends a stream half-closed before the inventory it was asked for, saying so", async () => {
    const e = await fakeEdge("dig-quit");
    e.send(hello("dig-quit", { inventoryDigest: "1".repeat(64) }));
    await inventoryRequested(e);
    e.close();
    const st = await e.ended;
    expect(st.code).toBe(3); // INVALID_ARGUMENT
    expect(st.details).toBe("the stream ended before the inventory the manager asked for");
    expect(m.hub.session("dig-quit")).toBeUndefined();
  });

  it("refuses a defective inventory sent on request, naming the fault", async () => {
    const e = await fakeEdge("dig-bad");
    e.send(hello("dig-bad", { inventoryDigest: "0".repeat(64) }));
    await inventoryRequested(e);
    e.send({ frame: { case: "inventory", value: { skills: [ECHO_TEXT_METADATA, ECHO_TEXT_METADATA] } } });
    const st = await e.ended;
    expect(st.code).toBe(3); // INVALID_ARGUMENT
    expect(st.details).toBe('inventory refused: skill "echo_text" is offered twice');
    expect(m.hub.session("dig-bad")).toBeUndefined();
  });

  it("real edges: the first is asked for its inventory, the second (same digest, computed by the edge) is admitted at welcome", async () => {
    const first = await startEdge(m, "dig-real-1");
    const second = await startEdge(m, "dig-real-2");
    try {
      for (const id of ["dig-real-1", "dig-real-2"]) expect(await waitFor(() => (m.hub.session(id)?.skills.size ?? 0) > 0, 10_000)).toBe(true);
      // The first sent its skills; the second's digest (computed by the edge) was the one the
      // manager computed over the first's skills, so it sent none. Both share the skills built once.
      expect(await waitFor(() => /"msg":"connected to the manager"/.test(first.output()) && /"msg":"connected to the manager"/.test(second.output()), 10_000)).toBe(true);
      expect(first.output()).toMatch(/"inventory":"sent on request".*"msg":"connected to the manager"/);
      expect(second.output()).toMatch(/"inventory":"known to the manager".*"msg":"connected to the manager"/);
      expect(m.hub.session("dig-real-2")!.skills).toBe(m.hub.session("dig-real-1")!.skills);
      const res = await skills.executeSkill({ key: "host_load", edgeId: "dig-real-2", input: { case: "params", value: {} } });
      expect(res.result?.success, JSON.stringify(res.result?.error)).toBe(true);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  it("a real edge facing a manager that predates digests sends its skills right after the welcome", async () => {
    // The old manager: a plain grpc-js server that welcomes whatever hello comes, without a digest.
    const frames: ConnectRequest[] = [];
    const server = new grpc.Server();
    server.addService(
      {
        connect: {
          path: "/ongrid.v1.EdgeTunnelService/Connect",
          requestStream: true,
          responseStream: true,
          requestSerialize: (m: ConnectRequest) => Buffer.from(toBinary(ConnectRequestSchema, m)),
          requestDeserialize: (b: Buffer) => fromBinary(ConnectRequestSchema, b),
          responseSerialize: (m: MessageInitShape<typeof ConnectResponseSchema>) => Buffer.from(toBinary(ConnectResponseSchema, create(ConnectResponseSchema, m))),
          responseDeserialize: (b: Buffer) => fromBinary(ConnectResponseSchema, b),
        },
      },
      {
        connect: (call: grpc.ServerDuplexStream<ConnectRequest, MessageInitShape<typeof ConnectResponseSchema>>) => {
          call.on("data", (f: ConnectRequest) => {
            frames.push(f);
            if (f.frame.case === "hello") call.write({ frame: { case: "welcome", value: { edgeId: f.frame.value.edgeId, managerVersion: "old", heartbeatIntervalMs: 5000 } } });
          });
          call.on("error", () => undefined);
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    const edge = spawnEdge(["--manager", `http://127.0.0.1:${port}`, "--token", "ogt_old-manager-test", "--id", "dig-old", "--log-level", "debug"]);
    try {
      expect(await waitFor(() => frames.some((f) => f.frame.case === "inventory"), 20_000), edge.output()).toBe(true);
      const hello = frames.find((f) => f.frame.case === "hello")!.frame.value as { skills: unknown[]; inventoryDigest: string };
      expect(hello.skills).toEqual([]);
      expect(hello.inventoryDigest).toMatch(/^[0-9a-f]{64}$/);
      const inv = frames.find((f) => f.frame.case === "inventory")!.frame.value as { skills: Array<{ key: string }> };
      expect(inv.skills.map((k) => k.key)).toContain("host_load");
      expect(inventoryDigest(inv.skills as never)).toBe(hello.inventoryDigest);
      expect(frames.findIndex((f) => f.frame.case === "inventory")).toBeGreaterThan(frames.findIndex((f) => f.frame.case === "hello"));
      expect(edge.output()).toMatch(/"inventory":"sent after welcome"/);
    } finally {
      await stopChild(edge.child);
      server.forceShutdown();
    }
  });
});

describe("tunnel.hello_timeout", () => {
  let short: TestManager;
  beforeAll(async () => {
    short = await bootManager({ "tunnel.hello_timeout": "300ms" });
  });
  afterAll(async () => {
    await short?.stop();
  });

  it("ends a tunnel that sends no hello within it, INVALID_ARGUMENT naming the time", async () => {
    const { token } = await short.edges.enroll("mute-1");
    const e = connectGrpcEdge(`127.0.0.1:${short.port}`, token);
    open.push(e);
    const end = await e.ended;
    expect(end.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(end.details).toBe("no hello within 300ms");
    expect(short.hub.session("mute-1")).toBeUndefined();
  });

  it("ends a tunnel asked for its inventory that does not send it within it; the edge is never admitted", async () => {
    const { token } = await short.edges.enroll("mute-2");
    const e = connectGrpcEdge(`127.0.0.1:${short.port}`, token);
    open.push(e);
    e.send(hello("mute-2", { inventoryDigest: "f".repeat(64) }));
    const end = await e.ended;
    expect(e.received.map((f) => f.frame.case)).toEqual(["inventoryRequest"]);
    expect(end.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(end.details).toBe("no inventory within 300ms of the inventory request");
    expect(short.hub.session("mute-2")).toBeUndefined();
    expect((await short.edges.get("mute-2"))?.online ?? false).toBe(false);
  });
});
