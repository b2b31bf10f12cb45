/**
 * The plain-HTTP guard (guard.ts) on a real node:http server over a real identity store (PGlite):
 * each refusal (no token, a malformed, unknown or revoked one, a role too low) answers as /metrics
 * and the webhooks always did and writes its audit row; a flood of refusals of nobody is counted,
 * not written a row each; a good token is let through and writes nothing.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import type { AuditLog, AuditRecord } from "../audit/types.ts";
import { openDatabase, type Database } from "../db/client.ts";
import { createIdentityStore, type IdentityStore } from "../identity/store.ts";
import { HttpError, sendJson } from "./errors.ts";
import { createGuard, type GuardDeps, type GuardRule } from "./guard.ts";

const RULE: GuardRule = { name: "test.route", role: "operator", args: (req) => ({ path: (req.url ?? "").split("?")[0] }) };

let dir: string;
let database: Database;
let identity: IdentityStore;
const servers: Server[] = [];
let rows: AuditRecord[];
let logLines: string[];
/** The throttle's clock: each test starts in a window of its own. */
let t = 0;

const log = pino({ level: "info" }, new Writable({ write: (chunk, _enc, done) => (logLines.push(String(chunk)), done()) }));
const audit = { append: async (r: AuditRecord) => (rows.push(r), {}) } as unknown as AuditLog;

/** A server whose one route is behind a guard: it answers 200 with the admitted caller. */
async function serve(deps: Partial<GuardDeps> = {}, rule: GuardRule = RULE, route?: (guard: ReturnType<typeof createGuard>, req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<string> {
  const guard = createGuard({ identity, audit, log, throttle: { windowMs: 1000, burst: 3, now: () => t }, ...deps });
  const server = createServer((req, res) => {
    const done = route
      ? route(guard, req, res)
      : guard.admit(req, res, rule).then((who) => {
          if (who) sendJson(res, 200, who);
        });
    done.catch((err: Error) => sendJson(res, 500, { code: "internal", message: err.message }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/x?y=1`;
}

const get = (url: string, authorization?: string) => fetch(url, { headers: authorization ? { authorization } : {} });

let url: string;
let operator: string;
let viewer: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ongrid-guard-"));
  database = await openDatabase({ dataDir: dir });
  identity = createIdentityStore(database);
  await identity.createUser("olga", "operator");
  await identity.createUser("vic", "viewer");
  operator = (await identity.createToken("olga")).token;
  viewer = (await identity.createToken("vic")).token;
  url = await serve();
}, 120_000);

afterAll(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  await database?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  rows = [];
  logLines = [];
  t += 60_000;
});

/** Expects a 401 with the scheme named, a JSON body, and one audit row of nobody. */
async function expectUnauthenticated(res: Response, message: RegExp) {
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe('Bearer realm="ongrid"');
  expect(res.headers.get("content-type")).toBe("application/json");
  const body = (await res.json()) as { code: string; message: string; hint?: string };
  expect(body).toMatchObject({ code: "unauthenticated", message: expect.stringMatching(message), hint: expect.any(String) });
  expect(rows).toHaveLength(1);
  expect(rows[0]).toMatchObject({ toolName: "test.route", args: { path: "/hooks/x" }, decision: "deny", callerUserId: "", callerRole: "", decisionReason: `unauthenticated: ${body.message}`, error: `unauthenticated: ${body.message}` });
}

describe("the guard refuses", () => {
  it("no token: 401, audited", async () => {
    await expectUnauthenticated(await get(url), /^no API token/);
  });

  it("a malformed token (or another scheme): 401, audited", async () => {
    await expectUnauthenticated(await get(url, "Bearer not-a-token"), /malformed/);
    rows = [];
    await expectUnauthenticated(await get(url, `Basic ${Buffer.from("a:b").toString("base64")}`), /malformed/);
  });

  it("an unknown token: 401, audited", async () => {
    await expectUnauthenticated(await get(url, `Bearer ogu_000000000000_${"A".repeat(43)}`), /^unknown API token \(id 000000000000\)/);
  });

  it("a revoked token: 401, audited", async () => {
    const { token, info } = await identity.createToken("olga");
    expect((await get(url, `Bearer ${token}`)).status).toBe(200);
    await identity.revokeToken(info.id);
    rows = [];
    await expectUnauthenticated(await get(url, `Bearer ${token}`), new RegExp(`^API token ${info.id} was revoked at `));
  });

  it("a role below the route's: 403 naming the role, audited as the caller", async () => {
    const res = await get(url, `Bearer ${viewer}`);
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBeNull();
    const body = (await res.json()) as { message: string };
    expect(body).toEqual({ code: "permission_denied", message: 'test.route needs role operator or above; "vic" is viewer', hint: "ask an admin for the role" });
    expect(rows).toEqual([expect.objectContaining({ toolName: "test.route", decision: "deny", callerUserId: "vic", callerRole: "viewer", decisionReason: `permission_denied: ${body.message}` })]);
  });
});

describe("the guard admits", () => {
  it("a good token of the role or above, writing nothing", async () => {
    const res = await get(url, `Bearer ${operator}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ userId: "olga", role: "operator" });
    expect(rows).toEqual([]);
  });

  it("any authenticated caller when the route names no role", async () => {
    const open = await serve({}, { ...RULE, role: undefined });
    expect((await get(open, `Bearer ${viewer}`)).status).toBe(200);
    expect(rows).toEqual([]);
  });
});

describe("refusal rows", () => {
  it("of nobody are throttled per address, route and reason: a flood writes `burst` rows and counts the rest into the next", async () => {
    const other: GuardRule = { ...RULE, name: "test.other" };
    const two = await serve({}, RULE, async (guard, req, res) => {
      const who = await guard.admit(req, res, req.url?.startsWith("/other") ? other : RULE);
      if (who) sendJson(res, 200, who);
    });
    const answers = await Promise.all(Array.from({ length: 10 }, () => get(two).then((r) => r.status)));
    expect(answers).toEqual(Array(10).fill(401));
    expect(rows).toHaveLength(3);
    // Another route is another key: its rows are not held back by the flood.
    expect((await get(new URL("/other", two).href)).status).toBe(401);
    expect(rows).toHaveLength(4);
    expect(rows[3]).toMatchObject({ toolName: "test.other", args: { path: "/other" } });
    t += 1000; // the window has passed: the next row says how many were left out
    expect((await get(two)).status).toBe(401);
    expect(rows).toHaveLength(5);
    expect(rows[4]!.args).toEqual({ path: "/hooks/x", suppressed_since_last_row: 7 });
  });

  it("of an authenticated caller are all written", async () => {
    for (let i = 0; i < 6; i++) expect((await get(url, `Bearer ${viewer}`)).status).toBe(403);
    expect(rows).toHaveLength(6);
    expect(rows.every((r) => r.callerUserId === "vic")).toBe(true);
  });

  it("that cannot be written are logged, and the request is still refused", async () => {
    const broken = await serve({ audit: { append: () => Promise.reject(new Error("disk full")) } as unknown as AuditLog });
    const res = await get(broken);
    expect(res.status).toBe(401);
    expect(logLines.some((l) => l.includes("could not audit a refused HTTP request") && l.includes("disk full"))).toBe(true);
  });
});

describe("a route's rule", () => {
  it("sets the hints and the headers of its refusals", async () => {
    const custom = await serve({}, { ...RULE, hints: { unauthenticated: "send the scrape token", permission_denied: "use the operator's token" }, headers: { "cache-control": "no-store" } });
    let res = await get(custom);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toMatchObject({ code: "unauthenticated", hint: "send the scrape token" });
    res = await get(custom, `Bearer ${viewer}`);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toMatchObject({ code: "permission_denied", hint: "use the operator's token" });
  });
});

describe("refuse", () => {
  it("answers and audits a route's own refusal with the status of the HTTP error map, as its caller", async () => {
    const own = await serve({}, RULE, async (guard, req, res) => {
      const who = await guard.admit(req, res, RULE);
      if (who) await guard.refuse(req, res, RULE, new HttpError(405, "invalid_argument", "method: GET is not allowed (rule: POST)", "POST the payload."), who);
    });
    const res = await get(own, `Bearer ${operator}`);
    expect(res.status).toBe(405);
    expect(await res.json()).toEqual({ code: "invalid_argument", message: "method: GET is not allowed (rule: POST)", hint: "POST the payload." });
    expect(rows).toEqual([expect.objectContaining({ callerUserId: "olga", decisionReason: "invalid_argument: method: GET is not allowed (rule: POST)" })]);
  });
});

describe("a token that cannot be checked", () => {
  it("is thrown for the route's 500: not the caller's fault, and not audited", async () => {
    const down = await serve({ identity: { authenticate: () => Promise.reject(new Error("connection refused")) } });
    const res = await get(down, `Bearer ${operator}`);
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ code: "internal", message: "connection refused" });
    expect(rows).toEqual([]);
  });

  it("is told apart from a refusal by its type: an OngridError from the store is a refusal", async () => {
    const refusing = await serve({ identity: { authenticate: () => Promise.reject(new OngridError("unauthenticated", "user \"x\" is disabled")) } });
    expect((await get(refusing, `Bearer ${operator}`)).status).toBe(401);
    expect(rows).toHaveLength(1);
  });
});
