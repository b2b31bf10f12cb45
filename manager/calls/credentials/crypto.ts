/** The credential store's encryption (G5): AES-256-GCM with a random IV and the credential's name as associated data. */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { OngridError } from "../../../skill/errors.ts";
import type { ManagerConfig } from "../../config/schema.ts";

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** How to make a key, for hints. */
export const MAKE_KEY_HINT =
  "make one with `umask 077 && openssl rand -base64 32 > /etc/ongrid/credentials.key` and set credentials.key_file (ONGRID_CREDENTIALS_KEY_FILE) to it";

function keyError(field: string, what: string): OngridError {
  return new OngridError("invalid_argument", `${field}: ${what} (rule: base64 of exactly ${KEY_BYTES} bytes)`, MAKE_KEY_HINT);
}

/** Decodes a key's text; the message names where it came from and the rule, never the text itself. */
function decodeKey(text: string, field: string): Buffer {
  if (!BASE64.test(text)) throw keyError(field, "is not base64");
  const key = Buffer.from(text, "base64");
  if (key.length !== KEY_BYTES) throw keyError(field, `decodes to ${key.length} bytes, not ${KEY_BYTES}`);
  return key;
}

/**
 * The credential store's key: `credentials.key`, else the trimmed content of `credentials.key_file`;
 * undefined when neither is set (the store then refuses to store or resolve values).
 */
export function loadCredentialKey(cfg: ManagerConfig["credentials"]): Buffer | undefined {
  const inline = (cfg.key ?? "").trim();
  if (inline) return decodeKey(inline, "credentials.key (ONGRID_CREDENTIALS_KEY)");
  const file = (cfg.key_file ?? "").trim();
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new OngridError(
      "invalid_argument",
      `credentials.key_file (ONGRID_CREDENTIALS_KEY_FILE): cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      `check the path and that the manager's user may read it; ${MAKE_KEY_HINT}`,
    );
  }
  const trimmed = text.trim();
  if (!trimmed) throw keyError(`credentials.key_file (${file})`, "the file is empty");
  return decodeKey(trimmed, `credentials.key_file (${file})`);
}

/** Which key encrypted a row: the first 16 hex digits of the key's SHA-256 (identifies it without revealing it). */
export function credentialKeyId(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

function checkKey(key: Buffer): void {
  if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) throw new OngridError("internal", `the credential key must be ${KEY_BYTES} bytes`);
}

/** Encrypts a value for the named credential: base64 of iv (12 bytes) ‖ ciphertext ‖ GCM tag (16 bytes). */
export function encryptSecret(key: Buffer, name: string, value: string): string {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(name, "utf8"));
  const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64");
}

/**
 * Decrypts what encryptSecret produced for the same name and key. A wrong key, another name's
 * ciphertext or any tampering fails authentication: failed_precondition, naming only the credential.
 */
export function decryptSecret(key: Buffer, name: string, blob: string): string {
  checkKey(key);
  const fail = () =>
    new OngridError(
      "failed_precondition",
      `cannot decrypt credential "${name}" (wrong key or tampered row)`,
      `configure the key it was stored with, or store it again with \`ongrid credentials set ${name}\``,
    );
  const raw = Buffer.from(blob, "base64");
  if (raw.length < IV_BYTES + TAG_BYTES) throw fail();
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(name, "utf8"));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString("utf8");
  } catch {
    throw fail();
  }
}
