/** The credential store (G5): named secrets, encrypted at rest; values leave it only through resolve(). */
import { asc, eq } from "drizzle-orm";
import { CREDENTIAL_NAME, CREDENTIAL_NAME_PATTERN, MAX_CREDENTIAL_VALUE_BYTES } from "../../../skill/credential.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { Database } from "../../db/client.ts";
import { credentials } from "../../db/schema/index.ts";
import { credentialKeyId, decryptSecret, encryptSecret, MAKE_KEY_HINT } from "./crypto.ts";

const MAX_DESCRIPTION = 1024;

/** What anyone may see of a credential: everything but its value. */
export interface CredentialInfo {
  name: string;
  description: string;
  createdAt: Date;
  updatedAt: Date;
  updatedBy: string;
}

/** The store's interface. */
export interface CredentialStore {
  /** Stores (or replaces: value and description) a credential. */
  put(name: string, value: string, description?: string, updatedBy?: string): Promise<CredentialInfo>;
  /** Every credential, by name; never values. Works without a key. */
  list(): Promise<CredentialInfo[]>;
  /** Removes a credential; false when there is none by that name. Works without a key. */
  delete(name: string): Promise<boolean>;
  /** The decrypted value, for injection at execution only. */
  resolve(name: string): Promise<string>;
  /** Whether a key is configured (put and resolve need one). */
  readonly configured: boolean;
  /** Id of the configured key ("" without one). */
  readonly keyId: string;
}

/** The error put and resolve throw when no key is configured. */
export function notConfiguredError(): OngridError {
  return new OngridError(
    "failed_precondition",
    "the credential store is not configured: set credentials.key_file (or ONGRID_CREDENTIALS_KEY) to a file holding base64 of 32 random bytes",
    MAKE_KEY_HINT,
  );
}

/** Refuses a credential name that breaks the rule; returns it otherwise. */
export function checkCredentialName(name: unknown, field = "name"): string {
  if (typeof name !== "string" || !CREDENTIAL_NAME.test(name)) {
    const shown = typeof name === "string" ? JSON.stringify(name.slice(0, 80)) : typeof name;
    throw new OngridError(
      "invalid_argument",
      `${field}: ${shown} is not a valid credential name (rule: pattern ${CREDENTIAL_NAME_PATTERN})`,
      "start with a lower-case letter; then lower-case letters, digits, '_', '.' or '-'; at most 64 characters",
    );
  }
  return name;
}

function checkValue(value: unknown): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new OngridError("invalid_argument", "value: must not be empty (rule: non-empty string)", "pass the secret on stdin or with --from-file");
  }
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > MAX_CREDENTIAL_VALUE_BYTES) {
    throw new OngridError("invalid_argument", `value: is ${bytes} bytes, more than ${MAX_CREDENTIAL_VALUE_BYTES} (rule: at most 64 KiB)`);
  }
  return value;
}

function checkDescription(description: unknown): string {
  const d = description ?? "";
  if (typeof d !== "string" || d.length > MAX_DESCRIPTION) {
    throw new OngridError("invalid_argument", `description: must be a string of at most ${MAX_DESCRIPTION} characters (rule: maxLength)`);
  }
  return d;
}

const INFO = {
  name: credentials.name,
  description: credentials.description,
  createdAt: credentials.createdAt,
  updatedAt: credentials.updatedAt,
  updatedBy: credentials.updatedBy,
};

/** Creates the credential store over the manager's database; without a key it can list and delete only. */
export function createCredentialStore(database: Database, key: Buffer | undefined): CredentialStore {
  const { db } = database;
  const keyId = key ? credentialKeyId(key) : "";
  const requireKey = (): Buffer => {
    if (!key) throw notConfiguredError();
    return key;
  };
  return {
    configured: key !== undefined,
    keyId,

    async put(name, value, description = "", updatedBy = "") {
      checkCredentialName(name);
      checkValue(value);
      const desc = checkDescription(description);
      const k = requireKey();
      const ciphertext = encryptSecret(k, name, value);
      const now = new Date();
      const [row] = await db
        .insert(credentials)
        .values({ name, description: desc, ciphertext, keyId, createdAt: now, updatedAt: now, updatedBy })
        .onConflictDoUpdate({ target: credentials.name, set: { description: desc, ciphertext, keyId, updatedAt: now, updatedBy } })
        .returning(INFO);
      return row!;
    },

    async list() {
      return db.select(INFO).from(credentials).orderBy(asc(credentials.name));
    },

    async delete(name) {
      const rows = await db.delete(credentials).where(eq(credentials.name, name)).returning({ name: credentials.name });
      return rows.length > 0;
    },

    async resolve(name) {
      checkCredentialName(name);
      const k = requireKey();
      const [row] = await db.select({ ciphertext: credentials.ciphertext, keyId: credentials.keyId }).from(credentials).where(eq(credentials.name, name));
      if (!row) {
        throw new OngridError("not_found", `credential "${name}" does not exist`, "`ongrid credentials list` shows the stored names; an admin adds one with `ongrid credentials set NAME`");
      }
      if (row.keyId !== keyId) {
        throw new OngridError(
          "failed_precondition",
          `credential "${name}" was encrypted under key id ${row.keyId}, but the configured key has id ${keyId}`,
          `configure the key it was stored with, or store it again with \`ongrid credentials set ${name}\``,
        );
      }
      return decryptSecret(k, name, row.ciphertext);
    },
  };
}
