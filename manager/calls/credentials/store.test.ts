import { randomBytes } from "node:crypto";
import { expect, test } from "vitest";
import { OngridError } from "../../../skill/errors.ts";
import { describeBothBackends } from "../../../test/support/pg.ts";
import { credentialKeyId } from "./crypto.ts";
import { createCredentialStore } from "./store.ts";
import { rejection } from "../../../test/support/rejection.ts";

const SECRET = "glpat-Very5ecretValue_9000";


describeBothBackends("credential store", (backend) => {
  test("put, list, resolve, replace and delete; the table holds only ciphertext", async () => {
    const store = await backend.fresh();
    const database = await store.open();
    const key = randomBytes(32);
    const creds = createCredentialStore(database, key);
    expect(creds.configured).toBe(true);
    expect(creds.keyId).toBe(credentialKeyId(key));

    const stored = await creds.put("prom.token", SECRET, "Prometheus read token", "alice");
    expect(stored).toEqual({ name: "prom.token", description: "Prometheus read token", createdAt: expect.any(Date), updatedAt: expect.any(Date), updatedBy: "alice" });
    expect(stored).not.toHaveProperty("ciphertext");
    await creds.put("http-basic", "user:pa55word", "", "bob");
    expect(await creds.resolve("prom.token")).toBe(SECRET);
    expect(await creds.resolve("http-basic")).toBe("user:pa55word");

    const list = await creds.list();
    expect(list.map((c) => c.name)).toEqual(["http-basic", "prom.token"]);
    for (const c of list) expect(Object.keys(c).sort()).toEqual(["createdAt", "description", "name", "updatedAt", "updatedBy"]);
    expect(JSON.stringify(list)).not.toContain(SECRET);

    const rows = await store.query<{ name: string; ciphertext: string; key_id: string }>("select name, ciphertext, key_id from credentials order by name");
    expect(rows.map((r) => r.name)).toEqual(["http-basic", "prom.token"]);
    for (const r of rows) {
      expect(r.key_id).toBe(credentialKeyId(key));
      expect(r.ciphertext).not.toContain(SECRET);
      expect(r.ciphertext).not.toContain("pa55word");
      expect(Buffer.from(r.ciphertext, "base64").toString("latin1")).not.toContain(SECRET);
    }
    const dump = await store.query("select * from credentials");
    expect(JSON.stringify(dump)).not.toContain(SECRET);

    // Replacing keeps created_at, moves updated_at, replaces value, description and updated_by.
    await new Promise((r) => setTimeout(r, 5));
    const replaced = await creds.put("prom.token", "new-value", "rotated", "carol");
    expect(replaced.createdAt).toEqual(stored.createdAt);
    expect(replaced.updatedAt.getTime()).toBeGreaterThan(stored.updatedAt.getTime());
    expect(replaced).toMatchObject({ description: "rotated", updatedBy: "carol" });
    expect(await creds.resolve("prom.token")).toBe("new-value");

    expect(await creds.delete("prom.token")).toBe(true);
    expect(await creds.delete("prom.token")).toBe(false);
    const gone = await rejection(creds.resolve("prom.token"));
    expect(gone.code).toBe("not_found");
    expect(gone.message).toBe('credential "prom.token" does not exist');
  });

  test("refuses bad names and values without quoting the value", async () => {
    const creds = createCredentialStore(await backend.open(), randomBytes(32));
    for (const bad of ["Prom", "1x", "a b", "", "x".repeat(65), "a/b"]) {
      const e = await rejection(creds.put(bad, SECRET));
      expect(e.code).toBe("invalid_argument");
      expect(e.message).toMatch(/^name: .* is not a valid credential name \(rule: pattern \^\[a-z\]\[a-z0-9_\.-\]\{0,63\}\$\)$/);
    }
    expect((await rejection(creds.put("ok", ""))).message).toMatch(/^value: must not be empty/);
    const big = await rejection(creds.put("ok", "x".repeat(64 * 1024 + 1)));
    expect(big.message).toMatch(/^value: is 65537 bytes, more than 65536/);
    expect(big.message).not.toContain("xxxx");
    await creds.put("ok", "é".repeat(32 * 1024)); // exactly 64 KiB of UTF-8
    expect(await creds.resolve("ok")).toHaveLength(32 * 1024);
    expect((await rejection(creds.put("ok", "v", "d".repeat(1025)))).message).toMatch(/^description:/);
  });

  test("without a key: list and delete work, put and resolve say how to configure one", async () => {
    const store = await backend.fresh();
    const database = await store.open();
    await createCredentialStore(database, randomBytes(32)).put("kept", SECRET, "d");
    const creds = createCredentialStore(database, undefined);
    expect(creds.configured).toBe(false);
    expect(creds.keyId).toBe("");
    expect((await creds.list()).map((c) => c.name)).toEqual(["kept"]);
    for (const p of [creds.put("new", "v"), creds.resolve("kept")]) {
      const e = await rejection(p);
      expect(e.code).toBe("failed_precondition");
      expect(e.message).toBe(
        "the credential store is not configured: set credentials.key_file (or ONGRID_CREDENTIALS_KEY) to a file holding base64 of 32 random bytes",
      );
      expect(e.hint).toMatch(/openssl rand -base64 32 >/);
    }
    expect(await creds.delete("kept")).toBe(true);
  });

  test("a row stored under another key, or tampered with, fails to resolve naming key ids, not values", async () => {
    const store = await backend.fresh();
    const database = await store.open();
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    await createCredentialStore(database, k1).put("alpha", SECRET);
    await createCredentialStore(database, k1).put("beta", "beta-value");

    const other = await rejection(createCredentialStore(database, k2).resolve("alpha"));
    expect(other.code).toBe("failed_precondition");
    expect(other.message).toBe(`credential "alpha" was encrypted under key id ${credentialKeyId(k1)}, but the configured key has id ${credentialKeyId(k2)}`);

    // A ciphertext copied onto another name does not decrypt (the name is the associated data).
    await store.query("update credentials set ciphertext = (select ciphertext from credentials where name = 'beta') where name = 'alpha'");
    const swapped = await rejection(createCredentialStore(database, k1).resolve("alpha"));
    expect(swapped.code).toBe("failed_precondition");
    expect(swapped.message).toBe('cannot decrypt credential "alpha" (wrong key or tampered row)');

    // A flipped bit anywhere fails authentication.
    const [row] = await store.query<{ ciphertext: string }>("select ciphertext from credentials where name = 'beta'");
    const raw = Buffer.from(row!.ciphertext, "base64");
    raw[15] ^= 0x80;
    await store.query("update credentials set ciphertext = $1 where name = 'beta'", [raw.toString("base64")]);
    const tampered = await rejection(createCredentialStore(database, k1).resolve("beta"));
    expect(tampered.message).toBe('cannot decrypt credential "beta" (wrong key or tampered row)');
    expect(tampered.message + tampered.hint).not.toContain("beta-value");
  });
});
