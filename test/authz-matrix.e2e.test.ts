/**
 * Issue 11: every RPC × every role × every token state (valid, expired, revoked, forged, absent),
 * enumerated from the generated descriptors so a new RPC is covered without touching this file;
 * then fuzzing of Connect and gRPC request bodies against every unary method.
 */
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import http2 from "node:http2";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { sql } from "drizzle-orm";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { RPC_RULES } from "../manager/identity/rules.ts";
import { ROLES, roleAtLeast, type Role } from "../manager/identity/store.ts";
import { TUNNEL_PATH } from "../manager/fleet/hub.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { makeUser } from "./support/auth.ts";
import { processFaults } from "./support/process-faults.ts";

// ---------------------------------------------------------------------------------------------
// The RPCs, from the generated code.

const GEN = fileURLToPath(new URL("../proto/gen/ongrid/v1/", import.meta.url));
const GEN_FILES = readdirSync(GEN).filter((f) => f.endsWith("_pb.ts")).sort();
const SERVICES: DescService[] = [];
for (const f of GEN_FILES) {
  const mod = (await import(new URL(`../proto/gen/ongrid/v1/${f}`, import.meta.url).href)) as Record<string, unknown>;
  for (const v of Object.values(mod)) {
    if (v && typeof v === "object" && (v as { kind?: unknown }).kind === "service") SERVICES.push(v as DescService);
  }
}

interface Rpc {
  /** "ongrid.v1.Service/Method", as the auth interceptor and RPC_RULES name it. */
  path: string;
  service: DescService;
  method: DescMethod;
}
const ALL_RPCS: Rpc[] = SERVICES.flatMap((service) => service.methods.map((method) => ({ path: `${service.typeName}/${method.name}`, service, method })));
/** The edge tunnel is served raw by the hub (edge tokens), not by the Connect router (user tokens). */
const TUNNEL_RPCS = ALL_RPCS.filter((r) => `/${r.path}` === TUNNEL_PATH);
/** The managers' own service (its own router, the cluster credential only): refused to every user identity. */
const PEER_RPCS = ALL_RPCS.filter((r) => r.service.typeName === "ongrid.v1.PeerService");
/** Every RPC a user calls: the ones RPC_RULES must cover. */
const RPCS = ALL_RPCS.filter((r) => `/${r.path}` !== TUNNEL_PATH && !PEER_RPCS.includes(r));
const UNARY = RPCS.filter((r) => r.method.methodKind === "unary");

// ---------------------------------------------------------------------------------------------
// Who calls.

type TokenState = "absent" | "forged" | "forged-known-id" | "expired" | "revoked" | "valid";
interface Identity {
  name: string;
  state: TokenState;
  /** The role of the token's user (valid tokens only; the bad tokens belong to an admin or nobody). */
  role?: Role;
  userId?: string;
  token?: string;
  /** What the refusal message says, for bad tokens. */
  refusal?: RegExp;
}

const IDENTITIES: Identity[] = [
  { name: "absent", state: "absent", refusal: /^no API token was sent; send one in the `authorization` header, as `Bearer` followed by the token \(hint: ask an admin for a token \(`ongrid tokens create --user NAME`\)\)$/ },
  { name: "forged", state: "forged", refusal: /^unknown API token \(id [0-9a-f]{12}\)/ },
  { name: "forged-known-id", state: "forged-known-id", refusal: /^unknown API token \(id [0-9a-f]{12}\)/ },
  { name: "expired", state: "expired", refusal: /^API token [0-9a-f]{12} expired at / },
  { name: "revoked", state: "revoked", refusal: /^API token [0-9a-f]{12} was revoked at / },
  ...ROLES.map((role): Identity => ({ name: role, state: "valid", role, userId: `mx-${role}` })),
];
const identity = (name: string) => IDENTITIES.find((i) => i.name === name)!;
/** The part of an API token that is secret (ogu_<12 hex id>_<43 characters>; the secret may itself hold "_"). */
const secretOf = (token: string) => token.slice("ogu_".length + 12 + 1);

// ---------------------------------------------------------------------------------------------
// The manager.

let m: TestManager;
let connect: Transport;
let grpc: Transport;
/** The audit rows already looked at. */
let seenSeq = 0;

beforeAll(async () => {
  m = await bootManager();
  for (const id of IDENTITIES) {
    if (id.state === "valid") id.token = await makeUser(m, id.userId!, id.role!);
  }
  // The bad tokens belong to an admin, so a gate that let them through would let them do anything.
  const admin = identity("admin");
  const expired = await m.identity.createToken(admin.userId!, { description: "expires at once", ttlMs: 1 });
  const revoked = await m.identity.createToken(admin.userId!, { description: "revoked" });
  await m.identity.revokeToken(revoked.info.id);
  identity("expired").token = expired.token;
  identity("revoked").token = revoked.token;
  identity("forged").token = `ogu_${randomBytes(6).toString("hex")}_${randomBytes(32).toString("base64url")}`;
  // The id of a real, valid admin token with another secret.
  identity("forged-known-id").token = `ogu_${admin.token!.split("_")[1]}_${randomBytes(32).toString("base64url")}`;
  await new Promise((r) => setTimeout(r, 10));
  connect = createConnectTransport({ baseUrl: m.url, httpVersion: "2" });
  grpc = createGrpcTransport({ baseUrl: m.url });
  seenSeq = await latestSeq();
});
afterAll(async () => {
  await m?.stop();
});

async function latestSeq(): Promise<number> {
  await m.audit.flush();
  const rows = await m.audit.list({ newestFirst: true, limit: 1 });
  return rows[0]?.seq ?? 0;
}

/** Audit rows written since the last look. */
async function newRows() {
  await m.audit.flush();
  const rows = await m.audit.list({ afterSeq: seenSeq, limit: 1000 });
  if (rows.length) seenSeq = rows.at(-1)!.seq;
  return rows;
}

/** How long a streaming call that got past the gate is left running before the test hangs up. */
const STREAM_WAIT_MS = 1000;

interface Outcome {
  code: Code | "ok";
  message: string;
}

/** Calls one RPC with an empty request, with `token` as the bearer token (none when undefined). */
async function call(rpc: Rpc, token: string | undefined, transport: Transport = connect): Promise<Outcome> {
  const client = createClient(rpc.service, transport) as unknown as Record<string, (input: unknown, opts: object) => unknown>;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), rpc.method.methodKind === "unary" ? 15_000 : STREAM_WAIT_MS);
  const opts = { headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, signal: ac.signal };
  const fn = client[rpc.method.localName].bind(client);
  try {
    switch (rpc.method.methodKind) {
      case "unary":
        await fn({}, opts);
        break;
      case "server_streaming":
        for await (const _ of fn({}, opts) as AsyncIterable<unknown>) void _;
        break;
      case "client_streaming":
        await fn((async function* () { yield {}; })(), opts);
        break;
      case "bidi_streaming":
        for await (const _ of fn((async function* () { yield {}; })(), opts) as AsyncIterable<unknown>) void _;
        break;
    }
    return { code: "ok", message: "" };
  } catch (e) {
    const err = ConnectError.from(e);
    return { code: err.code, message: err.rawMessage };
  } finally {
    clearTimeout(timer);
  }
}

/** A refusal row written by the auth interceptor (not by a service, which may also deny). */
const GATE_REASON = /^unauthenticated: |^permission_denied: ongrid\.v1\.\w+\/\w+ (needs role \w+ or above|has no authorisation rule)/;
const gateRows = (rows: Awaited<ReturnType<typeof newRows>>, rpc: Rpc) =>
  rows.filter((r) => r.decision === "deny" && (r.args as { rpc?: string } | null)?.rpc === rpc.path && GATE_REASON.test(r.decisionReason));

/** How many refusals the matrix expects the gate to have audited. */
let refusalsAudited = 0;

// ---------------------------------------------------------------------------------------------

describe("the RPC inventory", () => {
  it("enumerates every service of proto/gen/ongrid/v1 and finds a rule for every user RPC", () => {
    expect(SERVICES.length).toBeGreaterThanOrEqual(8);
    expect(RPCS.length).toBeGreaterThanOrEqual(30);
    expect(new Set(ALL_RPCS.map((r) => r.path)).size).toBe(ALL_RPCS.length);
    expect(RPCS.filter((r) => !Object.hasOwn(RPC_RULES, r.path)).map((r) => r.path)).toEqual([]);
    expect(Object.keys(RPC_RULES).filter((p) => !RPCS.some((r) => r.path === p))).toEqual([]);
    // The edge tunnel is the one RPC outside RPC_RULES: it takes edge tokens, never user tokens.
    expect(TUNNEL_RPCS.map((r) => r.path)).toEqual([TUNNEL_PATH.slice(1)]);
    expect(Object.hasOwn(RPC_RULES, TUNNEL_PATH.slice(1))).toBe(false);
    // The peer service takes the cluster credential, never a user token.
    expect(PEER_RPCS.map((r) => r.path).sort()).toEqual(["ongrid.v1.PeerService/Execute", "ongrid.v1.PeerService/Link"]);
    for (const r of PEER_RPCS) expect(Object.hasOwn(RPC_RULES, r.path)).toBe(false);
  });
});

/** One matrix cell. */
interface Cell {
  rpc: Rpc;
  who: Identity;
  expect: "unauthenticated" | "permission_denied" | "allowed";
}
const CELLS: Cell[] = [];
// Refusals first (bad tokens, then roles below the rule), the allowed calls last: an allowed empty
// request that did damage could not hide a refusal that should have happened before it.
for (const who of IDENTITIES.filter((i) => i.state !== "valid")) for (const rpc of RPCS) CELLS.push({ rpc, who, expect: "unauthenticated" });
for (const who of IDENTITIES.filter((i) => i.state === "valid")) {
  for (const rpc of RPCS) if (!roleAtLeast(who.role!, RPC_RULES[rpc.path] ?? "admin")) CELLS.push({ rpc, who, expect: "permission_denied" });
}
for (const who of IDENTITIES.filter((i) => i.state === "valid")) {
  for (const rpc of RPCS) if (Object.hasOwn(RPC_RULES, rpc.path) && roleAtLeast(who.role!, RPC_RULES[rpc.path])) CELLS.push({ rpc, who, expect: "allowed" });
}

describe("authorisation matrix: every RPC × every role × every token state, over Connect (HTTP/2)", () => {
  it("covers every RPC with every identity exactly once", () => {
    expect(CELLS.length).toBe(RPCS.length * IDENTITIES.length);
    for (const rpc of RPCS) expect(CELLS.filter((c) => c.rpc === rpc).length, rpc.path).toBe(IDENTITIES.length);
  });

  it.each(CELLS.map((c) => [`${c.rpc.path} as ${c.who.name} → ${c.expect}`, c] as const))("%s", async (_name, cell) => {
    const { rpc, who } = cell;
    await newRows();
    const out = await call(rpc, who.token);
    const rows = await newRows();
    const audited = gateRows(rows, rpc);
    const where = `${rpc.path} as ${who.name}: ${String(out.code)} ${out.message}`;
    if (who.token) {
      expect(out.message, where).not.toContain(who.token);
      expect(out.message, where).not.toContain(secretOf(who.token));
      expect(JSON.stringify(rows), where).not.toContain(secretOf(who.token));
    }
    if (cell.expect === "unauthenticated") {
      expect(out.code, where).toBe(Code.Unauthenticated);
      expect(out.message, where).toMatch(who.refusal!);
      expect(audited.length, `${where}: one audited refusal`).toBe(1);
      expect(audited[0], where).toMatchObject({ decision: "deny", callerUserId: "", callerRole: "", result: null });
      expect(audited[0].decisionReason, where).toMatch(/^unauthenticated: /);
      refusalsAudited++;
    } else if (cell.expect === "permission_denied") {
      const min = RPC_RULES[rpc.path];
      expect(out.code, where).toBe(Code.PermissionDenied);
      expect(out.message, where).toContain(`${rpc.path} needs role ${min} or above; "${who.userId}" is ${who.role}`);
      expect(audited.length, `${where}: one audited refusal`).toBe(1);
      expect(audited[0], where).toMatchObject({ decision: "deny", callerUserId: who.userId, callerRole: who.role });
      expect(audited[0].decisionReason, where).toMatch(/^permission_denied: .* needs role /);
      refusalsAudited++;
    } else {
      expect(out.code, where).not.toBe(Code.Unauthenticated);
      if (out.code === Code.PermissionDenied) expect(out.message, where).not.toMatch(/needs role \w+ or above|has no authorisation rule/);
      // Past the gate, an empty request may be refused by the service, never by a crash.
      expect(out.code, where).not.toBe(Code.Internal);
      expect(out.code, where).not.toBe(Code.Unknown);
      expect(audited, `${where}: no refusal by the gate`).toEqual([]);
    }
  });

  it.each(PEER_RPCS.flatMap((rpc) => IDENTITIES.map((who) => [`${rpc.path} as ${who.name} → unauthenticated (the cluster credential only)`, rpc, who] as const)))("%s", async (_name, rpc, who) => {
    // The peer service speaks gRPC (Link is served straight on the HTTP/2 stream, like the tunnel).
    const out = await call(rpc, who.token, grpc);
    expect(out.code, `${rpc.path} as ${who.name}: ${out.message}`).toBe(Code.Unauthenticated);
    expect(out.message).toBe("not a manager of this cluster");
  });

  it("left every identity's token as it was: no empty admin request revoked, expired or disabled anything", async () => {
    const whoAmI = RPCS.find((r) => r.path === "ongrid.v1.IdentityService/WhoAmI")!;
    for (const who of IDENTITIES) {
      const out = await call(whoAmI, who.token);
      expect(out.code, who.name).toBe(who.state === "valid" ? "ok" : Code.Unauthenticated);
    }
    expect((await m.identity.listUsers()).filter((u) => u.disabledAt).map((u) => u.id)).toEqual([]);
  });

  it("audited each refusal once and never stored a token in the audit log", async () => {
    const refusals = CELLS.filter((c) => c.expect !== "allowed").length;
    expect(refusalsAudited).toBe(refusals);
    await m.audit.flush();
    const raw = JSON.stringify(await m.database.db.execute(sql`select * from tool_calls`));
    const stored = (raw.match(/"decision":"deny"/g) ?? []).length;
    expect(stored).toBeGreaterThanOrEqual(refusals);
    for (const who of IDENTITIES) if (who.token) expect(raw, who.name).not.toContain(secretOf(who.token));
    expect((await m.audit.verify()).ok).toBe(true);
  });
});

describe("the edge tunnel (gRPC, edge tokens only)", () => {
  it.each(IDENTITIES.map((who) => [who.name, who] as const))("%s: a user token never opens EdgeTunnelService/Connect", async (_name, who) => {
    for (const rpc of TUNNEL_RPCS) {
      const out = await call(rpc, who.token, grpc);
      expect(out.code, `${rpc.path} as ${who.name}: ${out.message}`).toBe(Code.Unauthenticated);
      if (who.token) expect(out.message).not.toContain(secretOf(who.token));
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Fuzzing.

const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 30);
const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20_110_611);
const fuzzOptions = { numRuns: FUZZ_RUNS, seed: FUZZ_SEED, endOnFailure: true };

/** The Connect protocol's HTTP status per error code. */
const CONNECT_STATUS: Record<string, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};
/** What a valid admin may be answered for a bad body: anything but a crash or an authentication failure. */
const BAD_CODES = new Set(["internal", "unknown", "data_loss", "unauthenticated"]);
/** gRPC status numbers of the same. */
const BAD_GRPC = new Set([Code.Internal, Code.Unknown, Code.DataLoss, Code.Unauthenticated]);
/** The longest piece of the body an error message may quote. */
const MAX_ECHO = 96;

/** Unhandled rejections and uncaught exceptions seen in this process (the manager runs in it). */
const faults = processFaults({ exceptions: true });

/** Whether `message` quotes more than MAX_ECHO characters of `body`. */
function echoes(message: string, body: string): string | undefined {
  if (message.length <= MAX_ECHO || body.length <= MAX_ECHO) return undefined;
  for (let i = 0; i + MAX_ECHO < message.length; i++) {
    const piece = message.slice(i, i + MAX_ECHO + 1);
    if (body.includes(piece)) return piece;
  }
  return undefined;
}

const admin = () => identity("admin").token!;

/** POSTs a Connect unary request as the admin. */
async function post(rpc: Rpc, body: Uint8Array | string, contentType: string | undefined) {
  const headers: Record<string, string> = { authorization: `Bearer ${admin()}` };
  if (contentType !== undefined) headers["content-type"] = contentType;
  const res = await fetch(`${m.url}/${rpc.path}`, { method: "POST", headers, body });
  return { status: res.status, contentType: res.headers.get("content-type") ?? "", text: await res.text() };
}

/** Checks one Connect unary answer to a bad body (fails the test on a wrong one). */
function checkConnectAnswer(rpc: Rpc, res: Awaited<ReturnType<typeof post>>, body: string, allow415: boolean): void {
  const where = `${rpc.path} → HTTP ${res.status} ${res.text.slice(0, 300)}`;
  if (res.status === 200) return; // the body decoded to some request and the service answered it
  if (res.status === 415) {
    expect(allow415, `${where}: 415 for a supported content type`).toBe(true);
    return;
  }
  expect(res.contentType, where).toMatch(/^application\/json/);
  const err = JSON.parse(res.text) as { code?: unknown; message?: unknown };
  expect(typeof err.code, where).toBe("string");
  const code = err.code as string;
  const message = typeof err.message === "string" ? err.message : "";
  expect(Object.keys(CONNECT_STATUS), where).toContain(code);
  expect(res.status, `${where}: HTTP status of ${code}`).toBe(CONNECT_STATUS[code]);
  expect(BAD_CODES.has(code), `${where}: ${code} is not an acceptable answer to a bad body`).toBe(false);
  if (code === "permission_denied") expect(message, where).not.toMatch(/needs role|has no authorisation rule/);
  expect(echoes(message, body), `${where}: the message quotes the body`).toBeUndefined();
}

async function stillServing() {
  expect(faults.seen, "unhandled rejections / uncaught exceptions").toEqual([]);
  const res = await post(RPCS.find((r) => r.path === "ongrid.v1.SkillService/ListSkills")!, "{}", "application/json");
  expect(res.status).toBe(200);
  expect((JSON.parse(res.text) as { skills: unknown[] }).skills.length).toBeGreaterThan(0);
}

/** A JSON object using the request message's own field names (so values reach the decoder's field checks and the service). */
function shapedJson(rpc: Rpc) {
  const names = rpc.method.input.fields.flatMap((f) => [f.jsonName, f.name]);
  const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ maxLength: 64 }), fc.integer(), fc.boolean(), fc.constant(null));
  return names.length ? fc.dictionary(fc.constantFrom(...names), value, { maxKeys: 4 }) : fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 2 });
}

const byService = new Map<string, Rpc[]>();
for (const rpc of UNARY) byService.set(rpc.service.typeName, [...(byService.get(rpc.service.typeName) ?? []), rpc]);
const SERVICE_GROUPS = [...byService.entries()].map(([name, rpcs]) => [name.replace(/^ongrid\.v1\./, ""), rpcs] as const);

describe("fuzzing Connect unary requests (valid admin token)", () => {
  beforeAll(() => {
    faults.start();
  });
  afterAll(() => {
    faults.stop();
  });

  it("every unary RPC is in one fuzzed group", () => {
    expect(SERVICE_GROUPS.flatMap(([, rpcs]) => rpcs).length).toBe(UNARY.length);
    expect(UNARY.length).toBeGreaterThanOrEqual(25);
  });

  it.each(SERVICE_GROUPS)("%s: random bytes as application/proto get a well-formed Connect error or an answer", async (_s, rpcs) => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...rpcs), fc.uint8Array({ maxLength: 512 }), async (rpc, bytes) => {
        const res = await post(rpc, bytes, "application/proto");
        checkConnectAnswer(rpc, res, Buffer.from(bytes).toString("utf8"), false);
      }),
      { ...fuzzOptions, examples: rpcs.map((r) => [r, new Uint8Array([0x0a, 0xff, 0xff])] as [Rpc, Uint8Array]) },
    );
    await stillServing();
  });

  it.each(SERVICE_GROUPS)("%s: random JSON values (raw and shaped like the request) get a well-formed Connect error or an answer", async (_s, rpcs) => {
    const arb = fc.constantFrom(...rpcs).chain((rpc) => fc.tuple(fc.constant(rpc), fc.oneof(fc.jsonValue(), shapedJson(rpc)).map((v) => JSON.stringify(v) ?? "null")));
    await fc.assert(
      fc.asyncProperty(arb, async ([rpc, body]) => {
        const res = await post(rpc, body, "application/json");
        checkConnectAnswer(rpc, res, body, false);
      }),
      { ...fuzzOptions, examples: rpcs.map((r) => [[r, "[]"]] as [[Rpc, string]]) },
    );
    await stillServing();
  });

  it.each(SERVICE_GROUPS)("%s: malformed JSON gets invalid_argument", async (_s, rpcs) => {
    const malformed = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.jsonValue().map((v) => JSON.stringify(v) ?? "").filter((s) => s.length > 1).chain((s) => fc.integer({ min: 1, max: s.length - 1 }).map((n) => s.slice(0, n))),
      fc.string({ maxLength: 200 }).map((s) => `{"${s}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...rpcs), malformed, async (rpc, body) => {
        let valid = true;
        try {
          JSON.parse(body);
        } catch {
          valid = false;
        }
        const res = await post(rpc, body, "application/json");
        checkConnectAnswer(rpc, res, body, false);
        if (!valid) {
          expect(res.status, `${rpc.path} ${JSON.stringify(body)}`).toBe(400);
          expect((JSON.parse(res.text) as { code: string }).code).toBe("invalid_argument");
        }
      }),
      { ...fuzzOptions, examples: rpcs.map((r) => [r, '{"a": '] as [Rpc, string]) },
    );
    await stillServing();
  });

  it.each(SERVICE_GROUPS)("%s: an unsupported content type gets 415 (or a well-formed error)", async (_s, rpcs) => {
    const contentType = fc.oneof(
      fc.constantFrom("text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data", "application/octet-stream", "application/json; charset=latin1", "application/connect+json", "application/protobuf", "image/png"),
      fc.stringMatching(/^[a-z]{1,12}\/[a-z0-9.+-]{1,24}$/),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...rpcs), contentType, fc.string({ maxLength: 100 }), async (rpc, ct, body) => {
        const res = await post(rpc, body, ct);
        checkConnectAnswer(rpc, res, body, true);
        if (!/^application\/(json|proto)(;|$)/.test(ct)) expect(res.status, `${rpc.path} as ${ct}`).toBe(415);
      }),
      { ...fuzzOptions, examples: rpcs.map((r) => [r, "text/plain", "{}"] as [Rpc, string, string]) },
    );
    await stillServing();
  });
});

/** Sends one gRPC request over a raw HTTP/2 stream; resolves with the HTTP status and the gRPC status. */
function grpcPost(session: http2.ClientHttp2Session, rpc: Rpc, body: Buffer): Promise<{ status: number; grpcStatus: number; grpcMessage: string }> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": `/${rpc.path}`, "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${admin()}` });
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    req.on("response", (h) => (headers = h));
    req.on("trailers", (t) => (trailers = t));
    req.on("data", () => {});
    req.on("error", reject);
    req.on("end", () => {
      const st = trailers["grpc-status"] ?? headers["grpc-status"];
      const msg = String(trailers["grpc-message"] ?? headers["grpc-message"] ?? "");
      resolve({ status: Number(headers[":status"]), grpcStatus: st === undefined ? -1 : Number(st), grpcMessage: decodeURIComponent(msg) });
    });
    req.end(body);
  });
}

/** A gRPC length-prefixed message (uncompressed). */
const frame = (payload: Uint8Array) => {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
};

describe("fuzzing gRPC requests (valid admin token)", () => {
  let session: http2.ClientHttp2Session;
  beforeAll(() => {
    session = http2.connect(m.url);
    faults.start();
  });
  afterAll(() => {
    session?.close();
    faults.stop();
  });

  const FEW = ["SkillService/ListSkills", "SkillService/GetSkill", "SkillService/ExecuteSkill", "AuditService/ListToolCalls", "IdentityService/CreateUser", "CredentialService/PutCredential", "PlaybookService/Route", "AgentService/CallTool"].map(
    (p) => UNARY.find((r) => r.path === `ongrid.v1.${p}`)!,
  );

  it("random bytes, gRPC-framed, get a well-formed gRPC status that is not a crash", async () => {
    expect(FEW.every(Boolean)).toBe(true);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...FEW), fc.uint8Array({ maxLength: 512 }), async (rpc, bytes) => {
        const res = await grpcPost(session, rpc, frame(bytes));
        const where = `${rpc.path} → HTTP ${res.status} grpc-status ${res.grpcStatus} ${res.grpcMessage}`;
        expect(res.status, where).toBe(200);
        expect(res.grpcStatus, where).toBeGreaterThanOrEqual(0);
        expect(res.grpcStatus, where).toBeLessThanOrEqual(16);
        expect(BAD_GRPC.has(res.grpcStatus), `${where}: not an acceptable answer to a bad body`).toBe(false);
        expect(echoes(res.grpcMessage, Buffer.from(bytes).toString("utf8")), where).toBeUndefined();
      }),
      { ...fuzzOptions, numRuns: FUZZ_RUNS * 2, examples: FEW.map((r) => [r, new Uint8Array([0x0a, 0xff, 0xff])] as [Rpc, Uint8Array]) },
    );
    await stillServing();
  });

  it("a protobuf body that does not parse is invalid_argument on Connect (unary and streaming), gRPC and gRPC-Web — connect-es alone says internal", async () => {
    const getSkill = UNARY.find((r) => r.path === "ongrid.v1.SkillService/GetSkill")!;
    const bad = new Uint8Array([0x0a, 0xff, 0xff]);
    const viaConnect = await post(getSkill, bad, "application/proto");
    expect(viaConnect.status).toBe(400);
    expect(JSON.parse(viaConnect.text)).toEqual({ code: "invalid_argument", message: "parse binary: premature EOF" });
    const viaGrpc = await grpcPost(session, getSkill, frame(bad));
    expect(viaGrpc).toMatchObject({ status: 200, grpcStatus: Code.InvalidArgument, grpcMessage: "parse binary: premature EOF" });
    const viaWeb = await fetch(`${m.url}/${getSkill.path}`, { method: "POST", headers: { "content-type": "application/grpc-web+proto", authorization: `Bearer ${admin()}` }, body: frame(bad) });
    const webText = Buffer.from(await viaWeb.arrayBuffer()).toString("latin1");
    expect(webText).toMatch(/grpc-status: 3\r\n/);
    expect(webText).toMatch(/grpc-message: parse%20binary%3A%20premature%20EOF/);
    // A server-streaming method over the Connect protocol: the error is the end-of-stream frame.
    const viaStream = await fetch(`${m.url}/ongrid.v1.ApprovalService/Watch`, { method: "POST", headers: { "content-type": "application/connect+proto", authorization: `Bearer ${admin()}` }, body: frame(bad) });
    const streamText = Buffer.from(await viaStream.arrayBuffer()).toString("latin1");
    expect(streamText).toContain('{"error":{"code":"invalid_argument","message":"parse binary: premature EOF"}}');
    // Other errors are left as they were: malformed JSON is invalid_argument, as connect-es makes it.
    const badJson = await post(getSkill, "{", "application/json");
    expect(badJson.status).toBe(400);
    expect(JSON.parse(badJson.text).code).toBe("invalid_argument");
    await stillServing();
  });
});
