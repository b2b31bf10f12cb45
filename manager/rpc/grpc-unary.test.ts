/**
 * The unary gRPC fast path (grpc-unary.ts) against connect's own handler: the same service and
 * interceptor behind two front doors, one with the fast path and one without, called by
 * connect's gRPC client and by hand-made HTTP/2 requests. What a client sees (messages, codes,
 * error text, headers, trailers, metadata) and what the service sees (headers, context values,
 * its signal at a deadline, a cancel and the end of a call) must be the same.
 */
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createContextKey, type Interceptor, type Client } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ExecuteSkillRequestSchema, SkillService } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { listen, type Listener } from "./listen.ts";
import { rpcAdapter } from "./adapter.ts";
import { grpcUnaryHandlers } from "./grpc-unary.ts";
import { streamContextValues } from "./undecoded-audit.ts";
import { grpcFrame as frame } from "../../test/support/grpc-frame.ts";

const kUser = createContextKey<string>("", { description: "test user" });
const READ_MAX = 1024;

/** What the service and the fast path saw, per server. */
interface Seen {
  taken: number;
  declined: number;
  undecodable: string[];
  /** Each call's signal: the reason it fired with (code name), "" until it fires. */
  signals: Array<{ key: string; reason: string }>;
}

const auth: Interceptor = (next) => async (req) => {
  const h = req.header.get("authorization");
  if (h !== "Bearer good") throw new ConnectError("bad token", Code.Unauthenticated);
  req.contextValues.set(kUser, "alice");
  return next(req);
};

function reasonName(reason: unknown): string {
  if (reason instanceof ConnectError) return Code[reason.code]!;
  return (reason as Error)?.name ?? String(reason);
}

async function server(fast: boolean): Promise<{ l: Listener; seen: Seen; url: string }> {
  const seen: Seen = { taken: 0, declined: 0, undecodable: [], signals: [] };
  const rpc = rpcAdapter({
    routes: (r) =>
      r.service(SkillService, {
        async executeSkill(req, ctx) {
          const entry = { key: req.key, reason: "" };
          seen.signals.push(entry);
          ctx.signal.addEventListener("abort", () => (entry.reason = reasonName(ctx.signal.reason)));
          if (req.key === "fail") throw new ConnectError("no skill called fail", Code.NotFound, { "ongrid-audit-seq": "42" });
          if (req.key === "slow") {
            await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
            throw new ConnectError("stopped", Code.Aborted);
          }
          ctx.responseHeader.set("x-echo", ctx.requestHeader.get("x-custom") ?? "");
          ctx.responseTrailer.set("x-trailer", "done");
          return { auditSeq: 7n, result: { success: true, edgeId: `${ctx.values.get(kUser)}:${req.key}:${req.edgeId}:${ctx.timeoutMs() === undefined ? "no-deadline" : "deadline"}` } };
        },
        async getSkill() {
          throw new Error("a bug: not a ConnectError");
        },
        async listSkills() {
          return {};
        },
        async *fanOutSkill() {},
        async rescanPacks() {
          return {};
        },
      }),
    interceptors: [auth],
    readMaxBytes: READ_MAX,
    fallback: (_req, res) => {
      res.writeHead(404);
      res.end();
    },
  });
  const streams: Record<string, (s: http2.ServerHttp2Stream, h: http2.IncomingHttpHeaders) => boolean> = {};
  if (fast) {
    const handlers = grpcUnaryHandlers(rpc.specs, {
      interceptors: [auth],
      readMaxBytes: READ_MAX,
      contextValues: streamContextValues,
      onUndecodable: (path, err) => seen.undecodable.push(`${path} ${Code[err.code]}`),
    });
    for (const [path, h] of Object.entries(handlers)) {
      streams[path] = (s, hs) => {
        const taken = h(s, hs);
        if (taken) seen.taken++;
        else seen.declined++;
        return taken;
      };
    }
  }
  const l = await listen(rpc, { host: "127.0.0.1", port: 0, streams });
  return { l, seen, url: l.url };
}

let fastServer: Awaited<ReturnType<typeof server>>;
let connectServer: Awaited<ReturnType<typeof server>>;
beforeAll(async () => {
  fastServer = await server(true);
  connectServer = await server(false);
});
afterAll(async () => {
  await fastServer.l.close();
  await connectServer.l.close();
});

function grpcClient(url: string, token = "good"): Client<typeof SkillService> {
  return createClient(SkillService, createGrpcTransport({ baseUrl: url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] }));
}

async function outcome<T>(p: Promise<T>): Promise<{ ok?: T; code?: string; message?: string; metadata?: Record<string, string> }> {
  try {
    return { ok: await p };
  } catch (e) {
    const err = ConnectError.from(e);
    const metadata: Record<string, string> = {};
    err.metadata.forEach((v, k) => {
      if (k.startsWith("ongrid-") || k.startsWith("x-")) metadata[k] = v;
    });
    return { code: Code[err.code], message: err.rawMessage, metadata };
  }
}

/** A hand-made gRPC call: raw body bytes, extra headers; resolves with grpc-status, grpc-message and the body. */
function rawCall(url: string, path: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; grpcStatus?: string; grpcMessage?: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", authorization: "Bearer good", ...headers });
    const chunks: Buffer[] = [];
    let status = 0;
    let grpcStatus: string | undefined;
    let grpcMessage: string | undefined;
    const read = (h: http2.IncomingHttpHeaders) => {
      if (h[":status"]) status = Number(h[":status"]);
      if (h["grpc-status"] !== undefined) grpcStatus = String(h["grpc-status"]);
      if (h["grpc-message"] !== undefined) grpcMessage = decodeURIComponent(String(h["grpc-message"]));
    };
    req.on("response", read);
    req.on("trailers", read);
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      session.close();
      resolve({ status, grpcStatus, grpcMessage, body: Buffer.concat(chunks) });
    });
    req.on("error", reject);
    req.end(body);
  });
}


const EXECUTE = "/ongrid.v1.SkillService/ExecuteSkill";
const good = toBinary(ExecuteSkillRequestSchema, create(ExecuteSkillRequestSchema, { key: "echo", edgeId: "e1" }));

describe.each([
  ["fast path", () => fastServer],
  ["connect", () => connectServer],
])("unary gRPC through %s", (_name, get) => {
  it("answers the message, with the headers and trailers the service set, after the interceptor ran", async () => {
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const res = await grpcClient(get().url).executeSkill({ key: "echo", edgeId: "e1" }, { headers: { "x-custom": "hello" }, onHeader: (h) => (header = h), onTrailer: (t) => (trailer = t) });
    expect(res.auditSeq).toBe(7n);
    expect(res.result?.edgeId).toBe("alice:echo:e1:no-deadline");
    expect(header?.get("x-echo")).toBe("hello");
    expect(trailer?.get("x-trailer")).toBe("done");
  });

  it("gives the service the client's deadline", async () => {
    const res = await grpcClient(get().url).executeSkill({ key: "echo", edgeId: "e2" }, { timeoutMs: 5000 });
    expect(res.result?.edgeId).toBe("alice:echo:e2:deadline");
  });

  it("answers the service's error with its code, message and metadata", async () => {
    expect(await outcome(grpcClient(get().url).executeSkill({ key: "fail" }))).toEqual({ code: "NotFound", message: "no skill called fail", metadata: { "ongrid-audit-seq": "42" } });
  });

  it("answers the interceptor's refusal, and the service never runs", async () => {
    const before = get().seen.signals.length;
    expect(await outcome(grpcClient(get().url, "bad").executeSkill({ key: "echo" }))).toMatchObject({ code: "Unauthenticated", message: "bad token" });
    expect(get().seen.signals.length).toBe(before);
  });

  it("answers an error that is not a ConnectError as internal, without its text", async () => {
    expect(await outcome(grpcClient(get().url).getSkill({ key: "x" }))).toMatchObject({ code: "Internal", message: "internal error" });
  });

  it("fires the call's signal when the call ends", async () => {
    await grpcClient(get().url).executeSkill({ key: "echo", edgeId: "end" });
    const entry = get().seen.signals.at(-1)!;
    expect(entry.key).toBe("echo");
    expect(entry.reason).not.toBe("");
  });

  it("answers DeadlineExceeded at the deadline, and fires the call's signal", async () => {
    const before = get().seen.signals.length;
    const out = await outcome(grpcClient(get().url).executeSkill({ key: "slow", edgeId: "deadline" }, { timeoutMs: 150 }));
    expect(out.code).toBe("DeadlineExceeded");
    await expect.poll(() => get().seen.signals.slice(before).find((s) => s.key === "slow")?.reason).not.toBe("");
  });

  it("fires the call's signal when the client cancels", async () => {
    const before = get().seen.signals.length;
    const ac = new AbortController();
    const call = outcome(grpcClient(get().url).executeSkill({ key: "slow", edgeId: "cancel" }, { signal: ac.signal }));
    await expect.poll(() => get().seen.signals.length).toBeGreaterThan(before);
    const entry = get().seen.signals[before]!;
    expect(entry.reason).toBe("");
    ac.abort();
    expect((await call).code).toBe("Canceled");
    await expect.poll(() => entry.reason).not.toBe("");
  });

  it.each([
    ["a message over readMaxBytes", frame(Buffer.alloc(READ_MAX + 1)), "8", `message size ${READ_MAX + 1} is larger than configured readMaxBytes ${READ_MAX}`],
    ["an envelope announcing more than it holds", frame(good, 0, good.length + 10), "3", "protocol error: incomplete envelope"],
    ["no message", Buffer.alloc(0), "12", "protocol error: missing input message for unary method"],
    ["two messages", Buffer.concat([frame(good), frame(good)]), "12", "protocol error: received extra input message for unary method"],
    ["bytes that are not the message", frame(Buffer.from([0x0a, 0xff, 0xff, 0xff])), "3", /^parse binary: /],
  ])("refuses %s with grpc-status %s", async (_what, body, status, message) => {
    const res = await rawCall(get().url, EXECUTE, body);
    expect(res.status).toBe(200);
    expect(res.grpcStatus).toBe(status);
    expect(res.grpcMessage).toMatch(message);
    // and keeps serving
    expect((await grpcClient(get().url).executeSkill({ key: "echo" })).auditSeq).toBe(7n);
  });

  it("refuses a bad grpc-timeout", async () => {
    const res = await rawCall(get().url, EXECUTE, frame(good), { "grpc-timeout": "soon" });
    expect(res.grpcStatus).toBe("3");
    expect(res.grpcMessage).toBe("protocol error: invalid grpc timeout value: soon");
  });
});

describe("what the fast path takes and what it leaves to connect", () => {
  it("takes plain unary gRPC calls, and reports the ones refused before decoding", async () => {
    const { seen, url } = fastServer;
    const taken = seen.taken;
    await grpcClient(url).executeSkill({ key: "echo" });
    expect(seen.taken).toBe(taken + 1);
    const refusedBefore = seen.undecodable.length;
    await rawCall(url, EXECUTE, frame(Buffer.alloc(READ_MAX + 1)));
    expect(seen.undecodable.slice(refusedBefore)).toEqual([`${EXECUTE} ResourceExhausted`]);
  });

  it.each([
    ["a gzip-compressed gRPC call", (url: string) => createGrpcTransport({ baseUrl: url, sendCompression: compressionGzip, compressMinBytes: 1 })],
    ["a gRPC-Web call", (url: string) => createGrpcWebTransport({ baseUrl: url, httpVersion: "2" })],
    ["a Connect call over HTTP/2", (url: string) => createConnectTransport({ baseUrl: url, httpVersion: "2" })],
    ["a gRPC call in JSON", (url: string) => createGrpcTransport({ baseUrl: url, useBinaryFormat: false })],
  ])("leaves %s to connect, which answers it", async (_what, transport) => {
    const { seen, url } = fastServer;
    const taken = seen.taken;
    const client = createClient(SkillService, transport(url));
    const res = await client.executeSkill({ key: "echo", edgeId: "x" }, { headers: { authorization: "Bearer good" } });
    expect(res.result?.edgeId).toBe("alice:echo:x:no-deadline");
    expect(seen.taken).toBe(taken);
  });

  it("gives the call's signal the reason: DeadlineExceeded at the deadline, Canceled when the client goes", async () => {
    const { seen, url } = fastServer;
    let before = seen.signals.length;
    // By hand, with grpc-timeout and no deadline of the client's own: a client that gives up at
    // its deadline resets the stream, which may reach the server first (then the reason is Canceled).
    const slow = frame(toBinary(ExecuteSkillRequestSchema, create(ExecuteSkillRequestSchema, { key: "slow" })));
    const res = await rawCall(url, EXECUTE, slow, { "grpc-timeout": "100m" });
    expect(res.grpcStatus).toBe("4");
    expect(seen.signals[before]?.reason).toBe("DeadlineExceeded");
    before = seen.signals.length;
    const ac = new AbortController();
    const call = outcome(grpcClient(url).executeSkill({ key: "slow" }, { signal: ac.signal }));
    await expect.poll(() => seen.signals.length).toBeGreaterThan(before);
    ac.abort();
    await call;
    await expect.poll(() => seen.signals[before]?.reason).toBe("Canceled");
  });

  it("refuses a compressed message sent without a grpc-encoding", async () => {
    const res = await rawCall(fastServer.url, EXECUTE, frame(good, 1));
    expect(res.grpcStatus).toBe("3");
    expect(res.grpcMessage).toBe("protocol error: compressed message without a grpc-encoding");
  });
});
