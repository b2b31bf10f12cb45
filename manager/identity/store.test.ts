import { createHash } from "node:crypto";
import { describe, expect, test } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { describeBothBackends } from "../../test/support/pg.ts";
import { createIdentityStore, ROLES, roleAtLeast } from "./store.ts";
import { rejection } from "../../test/support/rejection.ts";

const TOKEN_RE = /^ogu_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$/;


describe("roleAtLeast", () => {
  // have × min → allowed: each role is allowed what the ones before it are.
  const table: Array<[string, (typeof ROLES)[number], boolean]> = [];
  for (const [hi, have] of ROLES.entries()) {
    for (const [mi, min] of ROLES.entries()) table.push([have, min, hi >= mi]);
  }
  test.each(table)("%s at least %s → %s", (have, min, want) => {
    expect(roleAtLeast(have, min)).toBe(want);
  });

  test("unknown roles (system, empty, wrong case, prototype names) are below everything", () => {
    for (const role of ["system", "", "Admin", "ADMIN", "root", "constructor", "toString", "__proto__"]) {
      for (const min of ROLES) expect(roleAtLeast(role, min)).toBe(false);
    }
  });

  test("the order is viewer < operator < approver < admin", () => {
    expect([...ROLES]).toEqual(["viewer", "operator", "approver", "admin"]);
  });
});

describeBothBackends("identity store", (backend) => {
  test("records who created and who last changed an account, and who issued a token (separation of duties reads them)", async () => {
    const ids = createIdentityStore(await backend.open());
    const made = await ids.createUser("pam", "approver", "", "admin");
    expect(made).toMatchObject({ createdBy: "admin", changedBy: "", changedAt: null });
    const { info } = await ids.createToken("pam", { description: "t", by: "root-admin" });
    expect(info.createdBy).toBe("root-admin");
    const before = Date.now();
    const changed = await ids.updateUser("pam", { reach: "team=a" }, "olga");
    expect(changed).toMatchObject({ createdBy: "admin", changedBy: "olga" });
    expect(changed.changedAt!.getTime()).toBeGreaterThanOrEqual(before - 5);
    const p = await ids.provenance("pam", info.id);
    expect(p.user).toMatchObject({ id: "pam", createdBy: "admin", changedBy: "olga" });
    expect(p.token).toMatchObject({ id: info.id, createdBy: "root-admin" });
    expect((await ids.provenance("pam", "000000000000")).token).toBeUndefined();
    // A no-op update changes nothing, not even who changed it last.
    expect(await ids.updateUser("pam", {}, "mallory")).toMatchObject({ changedBy: "olga" });
  });

  test("createUser validates id, role and reach, refuses duplicates, and lists users by id", async () => {
    const ids = createIdentityStore(await backend.open());
    const alice = await ids.createUser("alice", "operator", "  team=payments  ");
    expect(alice).toMatchObject({ id: "alice", role: "operator", reach: "team=payments", disabledAt: null });
    expect(alice.createdAt).toBeInstanceOf(Date);

    for (const bad of ["Alice", "1alice", "", "al ice", "a".repeat(65), "-x", "alice!", "ålice"]) {
      const e = await rejection(ids.createUser(bad, "viewer"));
      expect(e.code).toBe("invalid_argument");
      expect(e.message).toMatch(/^id: .*is not a valid user id/);
    }
    expect(await ids.createUser("a".repeat(64), "viewer")).toMatchObject({ role: "viewer" }); // 64 is the maximum

    for (const bad of ["root", "Admin", "", "system"]) {
      const e = await rejection(ids.createUser("bob", bad));
      expect(e.code).toBe("invalid_argument");
      expect(e.message).toMatch(/^role: .* is not a role \(rule: enum viewer\|operator\|approver\|admin\)/);
    }

    for (const bad of ["team=a=b", "=x", "team=pay ments", "a=b,,=c", "!"]) {
      const e = await rejection(ids.createUser("bob", "viewer", bad));
      expect(e.code).toBe("invalid_argument");
      expect(e.message).toMatch(/^reach: clause/);
    }
    expect(await ids.getUser("bob")).toBeUndefined(); // nothing written by the refusals

    const dup = await rejection(ids.createUser("alice", "admin"));
    expect(dup.code).toBe("already_exists");
    expect(dup.message).toMatch(/user "alice" already exists/);
    expect(await ids.getUser("alice")).toMatchObject({ role: "operator" }); // unchanged

    await ids.createUser("bob", "approver");
    expect((await ids.listUsers()).map((u) => u.id)).toEqual(["a".repeat(64), "alice", "bob"]);
  });

  test("createToken returns ogu_<12 hex>_<43>, once; only its SHA-256 is stored", async () => {
    const store = await backend.fresh();
    const ids = createIdentityStore(await store.open());
    await ids.createUser("alice", "operator");
    const { token, info } = await ids.createToken("alice", { description: "laptop", reach: "env=prod" });
    const m = TOKEN_RE.exec(token);
    expect(m).not.toBeNull();
    expect(info.id).toBe(m![1]);
    expect(info).toMatchObject({ userId: "alice", description: "laptop", reach: "env=prod", expiresAt: null, revokedAt: null, lastUsedAt: null });
    expect(info).not.toHaveProperty("tokenHash");
    expect(JSON.stringify(info)).not.toContain(token.slice(17));

    const second = await ids.createToken("alice");
    expect(second.token).not.toBe(token);
    expect(second.info.id).not.toBe(info.id);

    const rows = await store.query<Record<string, unknown>>("select * from api_tokens order by created_at");
    expect(rows).toHaveLength(2);
    const row = rows.find((r) => r.id === info.id)!;
    expect(row.token_hash).toBe(createHash("sha256").update(token).digest("hex"));
    const secret = token.slice("ogu_".length + 12 + 1);
    for (const r of rows) {
      for (const [col, v] of Object.entries(r)) {
        const text = v instanceof Date ? v.toISOString() : String(v);
        expect(text, `column ${col}`).not.toContain(token);
        expect(text, `column ${col}`).not.toContain(secret);
        expect(text, `column ${col}`).not.toContain(second.token.slice(17));
      }
    }
    expect((await ids.listTokens("alice")).map((t) => t.id).sort()).toEqual([info.id, second.info.id].sort());
    for (const t of await ids.listTokens()) expect(t).not.toHaveProperty("tokenHash");

    expect((await rejection(ids.createToken("nobody"))).code).toBe("not_found");
    expect((await rejection(ids.createToken("alice", { ttlMs: -1 }))).code).toBe("invalid_argument");
    expect((await rejection(ids.createToken("alice", { reach: "team=a b" }))).code).toBe("invalid_argument");
  });

  test("authenticate: a good token gives the caller; missing, malformed and unknown tokens are refused without quoting them", async () => {
    const ids = createIdentityStore(await backend.open());
    await ids.createUser("alice", "approver", "team=payments");
    await ids.createUser("bob", "viewer");
    const a = await ids.createToken("alice", { reach: "env=prod" });
    const b = await ids.createToken("bob");

    const who = await ids.authenticate(a.token);
    expect(who.caller).toEqual({ userId: "alice", role: "approver", reach: ["team=payments", "env=prod"], tokenId: a.info.id });
    expect(who.user).toMatchObject({ id: "alice" });
    expect(who.token).toMatchObject({ id: a.info.id, userId: "alice" });
    expect(who.token).not.toHaveProperty("tokenHash");
    // No empty selectors: a user and token without reach reach everything.
    expect((await ids.authenticate(b.token)).caller).toEqual({ userId: "bob", role: "viewer", reach: [], tokenId: b.info.id });

    for (const missing of [undefined, ""]) {
      const e = await rejection(ids.authenticate(missing));
      expect(e.code).toBe("unauthenticated");
      expect(e.message).toMatch(/no API token/);
    }
    const malformed = [
      "malformed",
      a.token.slice(0, -1),
      `${a.token}x`,
      a.token.replace("ogu_", "ogt_"),
      a.token.toUpperCase(),
      ` ${a.token}`,
      `ogu_${"g".repeat(12)}_${"a".repeat(43)}`,
    ];
    for (const t of malformed) {
      const e = await rejection(ids.authenticate(t));
      expect(e.code).toBe("unauthenticated");
      expect(e.message).toBe("the API token is malformed");
    }
    // Well formed but never issued: an unknown id, and a known id with the wrong secret.
    const unknown = `ogu_${"0".repeat(12)}_${"A".repeat(43)}`;
    const wrongSecret = `ogu_${a.info.id}_${"B".repeat(43)}`;
    const swapped = `ogu_${b.info.id}_${a.token.slice(17)}`; // alice's secret under bob's id
    for (const t of [unknown, wrongSecret, swapped]) {
      const e = await rejection(ids.authenticate(t));
      expect(e.code).toBe("unauthenticated");
      expect(e.message).toMatch(/^unknown API token \(id [0-9a-f]{12}\)$/);
      expect(e.message).not.toContain(t.slice(17));
    }
  });

  test("authenticate refuses revoked tokens (naming when), expired tokens (by `now`) and disabled users", async () => {
    const ids = createIdentityStore(await backend.open());
    await ids.createUser("alice", "operator");
    const revoked = await ids.createToken("alice");
    const ended = await ids.revokeToken(revoked.info.id);
    expect(ended.revokedAt).toBeInstanceOf(Date);
    const r = await rejection(ids.authenticate(revoked.token));
    expect(r.code).toBe("unauthenticated");
    expect(r.message).toBe(`API token ${revoked.info.id} was revoked at ${ended.revokedAt!.toISOString()}`);

    const expiring = await ids.createToken("alice", { ttlMs: 60_000 });
    const expiresAt = expiring.info.expiresAt!;
    expect(expiresAt.getTime() - expiring.info.createdAt.getTime()).toBe(60_000);
    expect((await ids.authenticate(expiring.token, new Date(expiresAt.getTime() - 1))).caller.userId).toBe("alice");
    for (const at of [expiresAt.getTime(), expiresAt.getTime() + 3_600_000]) {
      const e = await rejection(ids.authenticate(expiring.token, new Date(at)));
      expect(e.code).toBe("unauthenticated");
      expect(e.message).toBe(`API token ${expiring.info.id} expired at ${expiresAt.toISOString()}`);
    }
    // ttl 0 means no expiry.
    const forever = await ids.createToken("alice", { ttlMs: 0 });
    expect(forever.info.expiresAt).toBeNull();
    expect((await ids.authenticate(forever.token, new Date(Date.now() + 100 * 365 * 86_400_000))).caller.userId).toBe("alice");

    const live = await ids.createToken("alice");
    await ids.updateUser("alice", { disabled: true });
    const d = await rejection(ids.authenticate(live.token));
    expect(d.code).toBe("unauthenticated");
    expect(d.message).toBe('user "alice" is disabled');
    expect((await rejection(ids.createToken("alice"))).code).toBe("failed_precondition");
    await ids.updateUser("alice", { disabled: false });
    expect((await ids.authenticate(live.token)).caller.userId).toBe("alice");
  });

  test("authenticate records last use", async () => {
    const ids = createIdentityStore(await backend.open());
    await ids.createUser("alice", "operator");
    const t = await ids.createToken("alice");
    const at = new Date(Date.now() + 5_000);
    await ids.authenticate(t.token, at);
    const [listed] = await ids.listTokens("alice");
    expect(listed!.lastUsedAt?.getTime()).toBe(at.getTime());
  });

  test("revokeToken: twice is failed_precondition, unknown is not_found", async () => {
    const ids = createIdentityStore(await backend.open());
    await ids.createUser("alice", "operator");
    const t = await ids.createToken("alice");
    const first = await ids.revokeToken(t.info.id);
    expect(first).toMatchObject({ id: t.info.id, userId: "alice" });
    expect(first).not.toHaveProperty("tokenHash");
    const again = await rejection(ids.revokeToken(t.info.id));
    expect(again.code).toBe("failed_precondition");
    expect(again.message).toBe(`token "${t.info.id}" was already revoked at ${first.revokedAt!.toISOString()}`);
    const unknown = await rejection(ids.revokeToken("000000000000"));
    expect(unknown.code).toBe("not_found");
    expect(unknown.message).toMatch(/unknown token "000000000000"/);
    // Revoking one token leaves the others working.
    const other = await ids.createToken("alice");
    expect((await ids.authenticate(other.token)).caller.tokenId).toBe(other.info.id);
  });

  test("updateUser changes role, reach and disabled, validating each, and the next authentication sees it", async () => {
    const ids = createIdentityStore(await backend.open());
    await ids.createUser("alice", "viewer");
    const t = await ids.createToken("alice");

    expect(await ids.updateUser("alice", { role: "approver" })).toMatchObject({ role: "approver", reach: "" });
    expect((await ids.authenticate(t.token)).caller.role).toBe("approver");
    expect(await ids.updateUser("alice", { reach: " env=prod,!canary " })).toMatchObject({ role: "approver", reach: "env=prod,!canary" });
    expect((await ids.authenticate(t.token)).caller.reach).toEqual(["env=prod,!canary"]);
    expect(await ids.updateUser("alice", { reach: "" })).toMatchObject({ reach: "" });
    expect((await ids.authenticate(t.token)).caller.reach).toEqual([]);

    const disabled = await ids.updateUser("alice", { disabled: true });
    expect(disabled.disabledAt).toBeInstanceOf(Date);
    expect((await ids.updateUser("alice", { disabled: false })).disabledAt).toBeNull();

    expect(await ids.updateUser("alice", {})).toMatchObject({ id: "alice", role: "approver" }); // nothing to change
    expect((await rejection(ids.updateUser("alice", { role: "root" }))).code).toBe("invalid_argument");
    expect((await rejection(ids.updateUser("alice", { reach: "x==y=" }))).code).toBe("invalid_argument");
    expect((await rejection(ids.updateUser("nobody", { role: "admin" }))).code).toBe("not_found");
    expect(await ids.getUser("alice")).toMatchObject({ role: "approver", reach: "", disabledAt: null });
  });

  test("token cache: a revoke, a role change and disabling the user through this store apply at the next request; expiry is checked on every request", async () => {
    const ids = createIdentityStore(await backend.open(), { tokenCacheMs: 3_600_000 });
    await ids.createUser("alice", "viewer");
    const t = await ids.createToken("alice", { ttlMs: 600_000 });
    expect((await ids.authenticate(t.token)).caller.role).toBe("viewer");

    await ids.updateUser("alice", { role: "operator", reach: "env=prod" });
    expect((await ids.authenticate(t.token)).caller).toMatchObject({ role: "operator", reach: ["env=prod"] });
    await ids.updateUser("alice", { disabled: true });
    expect((await rejection(ids.authenticate(t.token))).message).toBe('user "alice" is disabled');
    await ids.updateUser("alice", { disabled: false });
    expect((await ids.authenticate(t.token)).caller.userId).toBe("alice");

    // The kept row still carries the expiry: a request past it is refused.
    const e = await rejection(ids.authenticate(t.token, new Date(t.info.expiresAt!.getTime())));
    expect(e.message).toBe(`API token ${t.info.id} expired at ${t.info.expiresAt!.toISOString()}`);

    const revoked = await ids.revokeToken(t.info.id);
    expect((await rejection(ids.authenticate(t.token))).message).toBe(`API token ${t.info.id} was revoked at ${revoked.revokedAt!.toISOString()}`);
  });

  test("token cache: a revoke made through another store (another manager) applies once the cache time has passed, and at once without a cache", async () => {
    const store = await backend.fresh();
    const one = await store.open();
    const two = backend.kind === "postgres" ? await store.open() : one;
    const admin = createIdentityStore(two);
    await admin.createUser("alice", "operator");
    const t = await admin.createToken("alice");
    let now = 0;
    const cached = createIdentityStore(one, { tokenCacheMs: 1_000, clock: () => now });
    const uncached = createIdentityStore(one, { tokenCacheMs: 0 });
    expect((await cached.authenticate(t.token)).caller.userId).toBe("alice");
    expect((await uncached.authenticate(t.token)).caller.userId).toBe("alice");

    await admin.revokeToken(t.info.id);
    expect((await rejection(uncached.authenticate(t.token))).message).toMatch(/was revoked at/);
    // Within the cache time the other store still answers from its lookup (the documented lag)…
    now = 999;
    expect((await cached.authenticate(t.token)).caller.userId).toBe("alice");
    // …and once it has passed, it asks the database again.
    now = 1_000;
    expect((await rejection(cached.authenticate(t.token))).message).toMatch(/was revoked at/);
  });

  test("token cache: a token unknown when first asked is found once issued (refusals are not kept); requests reusing a lookup each get their own caller", async () => {
    const store = await backend.fresh();
    const ids = createIdentityStore(await store.open(), { tokenCacheMs: 3_600_000 });
    await ids.createUser("alice", "operator");
    // A token issued elsewhere (another manager) between two requests that carry it.
    const token = `ogu_${"a".repeat(12)}_${"Q".repeat(43)}`;
    expect((await rejection(ids.authenticate(token))).message).toBe(`unknown API token (id ${"a".repeat(12)})`);
    await store.query("insert into api_tokens (id, user_id, token_hash, created_at) values ($1, $2, $3, now())", ["a".repeat(12), "alice", createHash("sha256").update(token).digest("hex")]);
    expect((await ids.authenticate(token)).caller.tokenId).toBe("a".repeat(12));

    const all = await Promise.all(Array.from({ length: 20 }, () => ids.authenticate(token)));
    for (const who of all) expect(who.caller).toEqual(all[0]!.caller);
    expect(new Set(all.map((w) => w.caller)).size).toBe(20);
    // Two queries so far (the refusal was not kept); the 20 reused the second one's.
    expect(ids.tokenLookups()).toEqual({ database: 2, reused: 20 });
  });

  test("token cache: concurrent first requests with one token share one query; without a cache each request asks", async () => {
    const store = await backend.fresh();
    const db = await store.open();
    const admin = createIdentityStore(db);
    await admin.createUser("alice", "operator");
    const t = await admin.createToken("alice");
    const cached = createIdentityStore(db, { tokenCacheMs: 60_000 });
    const all = await Promise.all(Array.from({ length: 20 }, () => cached.authenticate(t.token)));
    expect(all.every((w) => w.caller.userId === "alice")).toBe(true);
    expect(cached.tokenLookups()).toEqual({ database: 1, reused: 19 });
    const uncached = createIdentityStore(db, { tokenCacheMs: 0 });
    await Promise.all(Array.from({ length: 3 }, () => uncached.authenticate(t.token)));
    expect(uncached.tokenLookups()).toEqual({ database: 3, reused: 0 });
  });

  test("bootstrap creates admin only on an empty users table, with a token that authenticates as admin", async () => {
    const ids = createIdentityStore(await backend.open());
    const first = await ids.bootstrap();
    expect(first).toBeDefined();
    expect(first!.userId).toBe("admin");
    expect(first!.token).toMatch(TOKEN_RE);
    const who = await ids.authenticate(first!.token);
    expect(who.caller).toMatchObject({ userId: "admin", role: "admin", reach: [] });
    expect(who.token.description).toBe("created on first start");
    expect(await ids.bootstrap()).toBeUndefined();
    expect((await ids.listUsers()).map((u) => u.id)).toEqual(["admin"]);
    expect(await ids.listTokens()).toHaveLength(1);
  });

  test("bootstrap does nothing when any user exists", async () => {
    const ids = createIdentityStore(await backend.open());
    await ids.createUser("alice", "viewer");
    expect(await ids.bootstrap()).toBeUndefined();
    expect((await ids.listUsers()).map((u) => u.id)).toEqual(["alice"]);
    expect(await ids.listTokens()).toEqual([]);
  });

  test("two concurrent bootstraps on one database create exactly one admin and one token", async () => {
    const store = await backend.fresh();
    const one = await store.open();
    // Two connections (two managers) on PostgreSQL; PGlite is single-connection, so two stores share it.
    const two = backend.kind === "postgres" ? await store.open() : one;
    const a = createIdentityStore(one);
    const b = createIdentityStore(two);
    const results = await Promise.all([a.bootstrap(), b.bootstrap(), a.bootstrap(), b.bootstrap()]);
    const made = results.filter((r) => r !== undefined);
    expect(made).toHaveLength(1);
    expect((await a.authenticate(made[0]!.token)).caller.role).toBe("admin");
    expect((await a.listUsers()).map((u) => u.id)).toEqual(["admin"]);
    expect(await a.listTokens()).toHaveLength(1);
  });
});
