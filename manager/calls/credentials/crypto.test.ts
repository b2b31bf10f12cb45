import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { OngridError } from "../../../skill/errors.ts";
import { credentialKeyId, decryptSecret, encryptSecret, loadCredentialKey } from "./crypto.ts";

const key = randomBytes(32);
const dir = mkdtempSync(join(tmpdir(), "ongrid-credkey-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function caught(fn: () => unknown): OngridError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OngridError);
    return err as OngridError;
  }
  throw new Error("expected an error");
}

describe("encryptSecret / decryptSecret", () => {
  it("round-trips any UTF-8 value, with a fresh IV each time", () => {
    for (const value of ["s3cr3t", "user:pässwörd ✓", "x".repeat(64 * 1024), "line\nbreak"]) {
      const a = encryptSecret(key, "prom.token", value);
      const b = encryptSecret(key, "prom.token", value);
      expect(a).not.toBe(b);
      expect(decryptSecret(key, "prom.token", a)).toBe(value);
      expect(Buffer.from(a, "base64").length).toBe(12 + Buffer.byteLength(value) + 16);
      expect(a).not.toContain(Buffer.from(value).toString("base64").slice(0, 8));
    }
  });

  it("binds the ciphertext to the name: swapped between names it fails", () => {
    const a = encryptSecret(key, "alpha", "value-a");
    const b = encryptSecret(key, "beta", "value-b");
    const e = caught(() => decryptSecret(key, "alpha", b));
    expect(e.code).toBe("failed_precondition");
    expect(e.message).toBe('cannot decrypt credential "alpha" (wrong key or tampered row)');
    expect(() => decryptSecret(key, "beta", a)).toThrow(/cannot decrypt credential "beta"/);
  });

  it("fails under another key, and on any tampering, never naming the value", () => {
    const blob = encryptSecret(key, "alpha", "the-value");
    expect(caught(() => decryptSecret(randomBytes(32), "alpha", blob)).code).toBe("failed_precondition");
    const raw = Buffer.from(blob, "base64");
    for (const at of [0, 12, raw.length - 1]) {
      const t = Buffer.from(raw);
      t[at] ^= 0x01;
      const e = caught(() => decryptSecret(key, "alpha", t.toString("base64")));
      expect(e.message).toMatch(/wrong key or tampered row/);
      expect(e.message + e.hint).not.toContain("the-value");
    }
    expect(caught(() => decryptSecret(key, "alpha", raw.subarray(0, 20).toString("base64"))).code).toBe("failed_precondition");
    expect(caught(() => decryptSecret(key, "alpha", "")).code).toBe("failed_precondition");
  });

  it("key ids are the first 16 hex digits of the key's SHA-256", () => {
    expect(credentialKeyId(Buffer.alloc(32))).toBe("66687aadf862bd77");
    expect(credentialKeyId(key)).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe("loadCredentialKey", () => {
  const b64 = key.toString("base64");

  it("is undefined when neither credentials.key nor credentials.key_file is set", () => {
    expect(loadCredentialKey({ key: "", key_file: "" })).toBeUndefined();
    expect(loadCredentialKey({ key: "  ", key_file: " " })).toBeUndefined();
  });

  it("reads credentials.key, else the trimmed key file; the inline key wins", () => {
    expect(loadCredentialKey({ key: b64, key_file: "" })).toEqual(key);
    const file = join(dir, "key");
    writeFileSync(file, `${b64}\n`);
    expect(loadCredentialKey({ key: "", key_file: file })).toEqual(key);
    const other = randomBytes(32);
    expect(loadCredentialKey({ key: other.toString("base64"), key_file: file })).toEqual(other);
    expect(loadCredentialKey({ key: key.toString("base64url"), key_file: "" })).toEqual(key);
  });

  it("refuses keys that are not base64 of exactly 32 bytes, naming the config key and the rule but never the key", () => {
    const short = randomBytes(16).toString("base64");
    const e1 = caught(() => loadCredentialKey({ key: short, key_file: "" }));
    expect(e1.code).toBe("invalid_argument");
    expect(e1.message).toBe("credentials.key (ONGRID_CREDENTIALS_KEY): decodes to 16 bytes, not 32 (rule: base64 of exactly 32 bytes)");
    expect(e1.hint).toMatch(/openssl rand -base64 32/);
    const notB64 = "this is not base64 at all!!";
    const e2 = caught(() => loadCredentialKey({ key: notB64, key_file: "" }));
    expect(e2.message).toMatch(/^credentials\.key \(ONGRID_CREDENTIALS_KEY\): is not base64/);
    expect(e2.message + e2.hint).not.toContain(notB64);

    const file = join(dir, "bad");
    const long = randomBytes(48).toString("base64");
    writeFileSync(file, long);
    const e3 = caught(() => loadCredentialKey({ key: "", key_file: file }));
    expect(e3.message).toBe(`credentials.key_file (${file}): decodes to 48 bytes, not 32 (rule: base64 of exactly 32 bytes)`);
    expect(e3.message).not.toContain(long);
    writeFileSync(file, "\n");
    expect(caught(() => loadCredentialKey({ key: "", key_file: file })).message).toMatch(/the file is empty/);
    const missing = caught(() => loadCredentialKey({ key: "", key_file: join(dir, "nope") }));
    expect(missing.message).toMatch(/^credentials\.key_file \(ONGRID_CREDENTIALS_KEY_FILE\): cannot read .*nope: ENOENT/);
  });
});
