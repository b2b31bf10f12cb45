/**
 * Signed SOP documents (spec G3): a dangerous skill call runs only with a Markdown SOP whose YAML
 * frontmatter names the skills (and param constraints) it covers, signed with RSA-PSS/SHA-256 by a
 * key the manager trusts. Parsing, signing, key loading and the whole check a call needs live here.
 */
import { X509Certificate, constants, createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { OngridError } from "../../skill/errors.ts";

/** What a frontmatter param constraint allows: a whole-value regular expression, or a list of values. */
export interface SopConstraint {
  pattern?: string;
  values?: Array<string | number | boolean>;
}

/** The validated frontmatter of an SOP. */
export interface SopFrontmatter {
  id: string;
  version: string;
  title: string;
  skills: string[];
  /** skill key → param name → constraint. */
  params: Record<string, Record<string, SopConstraint>>;
  expires: Date;
}

/** A signed SOP split into its parts. */
export interface SignedSop {
  /** The whole signed text (body + trailer). */
  document: string;
  /** The signed bytes (everything before the signature block). */
  body: string;
  frontmatter: SopFrontmatter;
  signature: Buffer;
  keyId: string;
  algorithm: string;
  /** sha256 hex of the whole document text. */
  hash: string;
}

/** A public key whose SOP signatures are trusted. */
export interface TrustedKey {
  keyId: string;
  key: KeyObject;
  /** Where it came from (file path, and the block's position when a file holds several). */
  source: string;
}

/** The only signature algorithm there is. */
export const SOP_ALGORITHM = "RSA-PSS-SHA256";
/** Smallest RSA modulus accepted for signing and trusting. */
export const SOP_MIN_RSA_BITS = 2048;
/** Largest signed document accepted (bytes of UTF-8). */
export const SOP_MAX_BYTES = 256 * 1024;

const BEGIN = "-----BEGIN ONGRID SOP SIGNATURE-----";
const END = "-----END ONGRID SOP SIGNATURE-----";
const BEGIN_LINE = /^-----BEGIN ONGRID SOP SIGNATURE-----\r?$/gm;
const END_LINE = /^-----END ONGRID SOP SIGNATURE-----\r?$/gm;

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const VERSION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;
const SKILL_KEY_PATTERN = /^[a-z][a-z0-9_]{1,63}$/;
const KEY_ID_PATTERN = /^[0-9a-f]{16}$/;
const FIELDS = ["id", "version", "title", "skills", "params", "expires"];

function sha256Hex(data: string | Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The whole-value matcher for a constraint pattern (throws SyntaxError on a bad one). */
function compilePattern(re: string): RegExp {
  // Compiling it alone first refuses unbalanced parentheses such as "x)|(.*", which would
  // otherwise escape the anchoring group below.
  new RegExp(re);
  return new RegExp("^(?:" + re + ")$");
}

/** A date (YYYY-MM-DD, midnight UTC) or date-time with Z or an offset; undefined when not one. */
function parseIsoInstant(s: string): Date | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:\d{2}))?$/.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h = "0", mi = "0", sec = "0", frac = "", zone = "Z"] = m;
  const n = (v: string) => Number(v);
  if (n(mo) < 1 || n(mo) > 12 || n(d) < 1 || n(h) > 23 || n(mi) > 59 || n(sec) > 59) return undefined;
  const ms = frac ? Math.floor(Number(`0.${frac}`) * 1000) : 0;
  const local = Date.UTC(n(y), n(mo) - 1, n(d), n(h), n(mi), n(sec), ms);
  const check = new Date(Date.UTC(n(y), n(mo) - 1, n(d)));
  if (check.getUTCDate() !== n(d) || check.getUTCMonth() !== n(mo) - 1) return undefined; // e.g. 2027-02-30
  let offsetMin = 0;
  if (zone !== "Z" && zone !== "z") {
    const oh = n(zone.slice(1, 3));
    const om = n(zone.slice(4, 6));
    if (oh > 23 || om > 59) return undefined;
    offsetMin = (zone[0] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const date = new Date(local - offsetMin * 60_000);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (v instanceof Date) return "date";
  if (typeof v === "number" && Number.isInteger(v)) return "integer";
  return typeof v;
}

/** Splits off the leading `---` YAML block; throws when there is none. */
function frontmatterText(body: string): string {
  const text = body.startsWith("\uFEFF") ? body.slice(1) : body;
  const lines = text.split("\n");
  const isFence = (l: string | undefined) => l !== undefined && /^---[ \t]*\r?$/.test(l);
  if (!isFence(lines[0])) {
    throw new OngridError(
      "invalid_argument",
      'sop frontmatter: missing (the document must start with a line "---", then YAML, then a line "---")',
      "Put the SOP's id, version, skills, params and expires in a YAML block at the top of the document.",
    );
  }
  const close = lines.findIndex((l, i) => i > 0 && isFence(l));
  if (close < 0) {
    throw new OngridError("invalid_argument", 'sop frontmatter: not closed (no line "---" after the opening one)', "End the YAML block with a line holding only ---.");
  }
  return lines
    .slice(1, close)
    .map((l) => l.replace(/\r$/, ""))
    .join("\n");
}

/** Parses frontmatter of an unsigned or signed document (throws invalid_argument listing every problem). */
export function parseSopFrontmatter(body: string): SopFrontmatter {
  const yamlText = frontmatterText(body);
  let doc: unknown;
  try {
    doc = parseYaml(yamlText);
  } catch (err) {
    // The parser's first line only: the rest quotes the offending line, which may hold a param value (a secret).
    throw new OngridError("invalid_argument", `sop frontmatter: not valid YAML: ${(err as Error).message.split("\n")[0].replace(/:$/, "")} (rule: yaml)`);
  }
  if (!isPlainObject(doc)) {
    throw new OngridError("invalid_argument", `sop frontmatter: must be a YAML mapping of fields, got ${doc === undefined || doc === null ? "nothing" : typeName(doc)}`);
  }

  const problems: string[] = [];
  const problem = (field: string, message: string, rule: string) => problems.push(`sop frontmatter: field "${field}": ${message} (rule: ${rule})`);

  for (const k of Object.keys(doc)) {
    if (!FIELDS.includes(k)) problem(k, `is not a known field (known: ${FIELDS.join(", ")})`, "additionalProperties");
  }

  // id
  let id = "";
  if (doc.id === undefined || doc.id === null) problem("id", "is required", "required");
  else if (typeof doc.id !== "string") problem("id", `must be a string, got ${typeName(doc.id)}`, "type");
  else if (!ID_PATTERN.test(doc.id)) problem("id", `must match ${ID_PATTERN.source}, got ${JSON.stringify(doc.id)}`, "pattern");
  else id = doc.id;

  // version
  let version = "";
  if (doc.version === undefined || doc.version === null) problem("version", "is required", "required");
  else if (typeof doc.version === "number" && Number.isSafeInteger(doc.version) && doc.version >= 0) version = String(doc.version);
  else if (typeof doc.version !== "string") {
    problem("version", `must be a string or a non-negative integer, got ${typeName(doc.version)}${typeof doc.version === "number" ? ` ${doc.version} (quote it: '${doc.version}')` : ""}`, "type");
  } else if (!VERSION_PATTERN.test(doc.version)) problem("version", `must match ${VERSION_PATTERN.source}, got ${JSON.stringify(doc.version)}`, "pattern");
  else version = doc.version;

  // title
  let title = "";
  if (doc.title !== undefined && doc.title !== null) {
    if (typeof doc.title !== "string") problem("title", `must be a string, got ${typeName(doc.title)}`, "type");
    else title = doc.title;
  }

  // skills
  const skills: string[] = [];
  if (doc.skills === undefined || doc.skills === null) problem("skills", "is required", "required");
  else if (!Array.isArray(doc.skills)) problem("skills", `must be an array of skill keys, got ${typeName(doc.skills)}`, "type");
  else if (doc.skills.length === 0) problem("skills", "must list at least one skill key", "minItems");
  else {
    doc.skills.forEach((s, i) => {
      if (typeof s !== "string") problem(`skills[${i}]`, `must be a string, got ${typeName(s)}`, "type");
      else if (!SKILL_KEY_PATTERN.test(s)) problem(`skills[${i}]`, `must be a skill key matching ${SKILL_KEY_PATTERN.source}, got ${JSON.stringify(s)}`, "pattern");
      else if (skills.includes(s)) problem(`skills[${i}]`, `lists "${s}" twice`, "uniqueItems");
      else skills.push(s);
    });
  }

  // params
  const params: Record<string, Record<string, SopConstraint>> = {};
  if (doc.params !== undefined && doc.params !== null) {
    if (!isPlainObject(doc.params)) problem("params", `must be a mapping of skill key to param constraints, got ${typeName(doc.params)}`, "type");
    else {
      for (const [skill, constraints] of Object.entries(doc.params)) {
        const field = `params.${skill}`;
        if (Array.isArray(doc.skills) && !doc.skills.includes(skill)) {
          problem(field, `constrains skill "${skill}", which is not listed in "skills"`, "listed in skills");
          continue;
        }
        if (!isPlainObject(constraints)) {
          problem(field, `must be a mapping of param name to constraint, got ${typeName(constraints)}`, "type");
          continue;
        }
        const out: Record<string, SopConstraint> = {};
        for (const [name, c] of Object.entries(constraints)) {
          const cf = `${field}.${name}`;
          if (typeof c === "string") {
            try {
              compilePattern(c);
              out[name] = { pattern: c };
            } catch (err) {
              problem(cf, `is not a valid regular expression: ${(err as Error).message}`, "regex");
            }
          } else if (Array.isArray(c)) {
            if (c.length === 0) problem(cf, "must list at least one allowed value", "minItems");
            else {
              const bad = c.findIndex((v) => typeof v !== "string" && typeof v !== "boolean" && !(typeof v === "number" && Number.isFinite(v)));
              if (bad >= 0) problem(`${cf}[${bad}]`, `must be a string, number or boolean, got ${typeName(c[bad])}`, "type");
              else out[name] = { values: [...(c as Array<string | number | boolean>)] };
            }
          } else {
            problem(cf, `must be a regular expression (string) or a list of allowed values, got ${typeName(c)}`, "type");
          }
        }
        params[skill] = out;
      }
    }
  }

  // expires
  let expires = new Date(NaN);
  if (doc.expires === undefined || doc.expires === null) problem("expires", "is required", "required");
  else if (doc.expires instanceof Date) {
    if (Number.isNaN(doc.expires.getTime())) problem("expires", "is not a valid date", "format");
    else expires = doc.expires;
  } else if (typeof doc.expires !== "string") problem("expires", `must be an ISO-8601 date or date-time, got ${typeName(doc.expires)}`, "type");
  else {
    const d = parseIsoInstant(doc.expires);
    if (!d) problem("expires", `must be an ISO-8601 date (2027-06-30) or date-time with Z or an offset (2027-06-30T00:00:00Z), got ${JSON.stringify(doc.expires)}`, "format");
    else expires = d;
  }

  if (problems.length) {
    throw new OngridError("invalid_argument", problems.join("\n"), "Fix the SOP's frontmatter (see docs/sop.md) and sign it again.");
  }
  return { id, version, title, skills, params, expires };
}

/** The 16-hex-char id of a key: the start of sha256 over its public key's SPKI DER. */
export function keyIdOf(key: KeyObject): string {
  const pub = key.type === "public" ? key : createPublicKey(key);
  return sha256Hex(pub.export({ type: "spki", format: "der" })).slice(0, 16);
}

/** Refuses anything but RSA keys of at least SOP_MIN_RSA_BITS bits; `what` names the key in the message. */
function requireRsa(key: KeyObject, what: string): void {
  if (key.asymmetricKeyType !== "rsa") {
    throw new OngridError(
      "invalid_argument",
      `${what}: is a ${key.asymmetricKeyType ?? "symmetric"} key; SOP signatures need an RSA key (${SOP_MIN_RSA_BITS} bits or more)`,
      "Create one with `ongrid sop keygen PREFIX` or `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 -out sop.key`.",
    );
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < SOP_MIN_RSA_BITS) {
    throw new OngridError("invalid_argument", `${what}: RSA key has ${bits} bits; SOP signatures need at least ${SOP_MIN_RSA_BITS}`, "Create a new key with `ongrid sop keygen PREFIX` (3072 bits by default).");
  }
}

function wrap64(s: string): string {
  return s.match(/.{1,64}/g)!.join("\n");
}

function checkSize(text: string): void {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > SOP_MAX_BYTES) throw new OngridError("invalid_argument", `sop: document is ${bytes} bytes, more than the ${SOP_MAX_BYTES} allowed`);
}

/** Signs: validates the frontmatter first; returns the signed document text. */
export function signSop(markdown: string, privateKeyPem: string | Buffer): string {
  checkSize(markdown);
  BEGIN_LINE.lastIndex = 0;
  END_LINE.lastIndex = 0;
  if (BEGIN_LINE.test(markdown) || END_LINE.test(markdown)) {
    throw new OngridError("invalid_argument", "sop: already signed (it has an ONGRID SOP SIGNATURE block)", "Sign the unsigned document; to change a signed SOP, edit its unsigned source and sign that again.");
  }
  const body = markdown.replace(/[\r\n]+$/, "") + "\n";
  parseSopFrontmatter(body);
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch (err) {
    throw new OngridError("invalid_argument", `sop signing key: cannot read it as a PEM private key: ${(err as Error).message}`, "Pass the PRIVATE key (PREFIX.key from `ongrid sop keygen`), unencrypted PEM.");
  }
  requireRsa(key, "sop signing key");
  const signature = sign("sha256", Buffer.from(body, "utf8"), { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST });
  return `${body}${BEGIN}\nkey-id: ${keyIdOf(key)}\nalgorithm: ${SOP_ALGORITHM}\n${wrap64(signature.toString("base64"))}\n${END}\n`;
}

/** Splits a signed document into body + trailer and parses both; invalid_argument "sop: not signed (no ONGRID SOP SIGNATURE block)" etc. */
export function parseSignedSop(text: string): SignedSop {
  if (typeof text !== "string" || text.length === 0) throw new OngridError("invalid_argument", "sop: empty document");
  checkSize(text);
  const begins = [...text.matchAll(BEGIN_LINE)];
  const ends = [...text.matchAll(END_LINE)];
  if (begins.length === 0) {
    throw new OngridError("invalid_argument", "sop: not signed (no ONGRID SOP SIGNATURE block)", "Sign it with `ongrid sop sign FILE --key PRIVATE.pem` and send the signed document.");
  }
  if (begins.length > 1 || ends.length > 1) {
    throw new OngridError("invalid_argument", `sop: more than one ONGRID SOP SIGNATURE block (${Math.max(begins.length, ends.length)})`, "Send the document exactly as `ongrid sop sign` wrote it.");
  }
  if (ends.length === 0) throw new OngridError("invalid_argument", "sop: signature block not closed (no -----END ONGRID SOP SIGNATURE----- line)");
  const beginAt = begins[0].index!;
  const endAt = ends[0].index!;
  if (endAt < beginAt) throw new OngridError("invalid_argument", "sop: signature block ends before it begins");
  const after = text.slice(endAt + ends[0][0].length);
  if (!/^(\r?\n)?$/.test(after)) throw new OngridError("invalid_argument", "sop: text after the end of the signature block");

  const body = text.slice(0, beginAt);
  const inner = text
    .slice(beginAt + begins[0][0].length, endAt)
    .split("\n")
    .map((l) => l.replace(/\r$/, ""))
    .filter((l, i, all) => !(l === "" && (i === 0 || i === all.length - 1)));
  const header = (i: number, name: string): string => {
    const m = new RegExp(`^${name}:[ \\t]*(.*?)[ \\t]*$`).exec(inner[i] ?? "");
    if (!m) throw new OngridError("invalid_argument", `sop: signature block: line ${i + 1} must be "${name}: ..."`);
    return m[1];
  };
  const keyId = header(0, "key-id");
  if (!KEY_ID_PATTERN.test(keyId)) throw new OngridError("invalid_argument", `sop: signature block: key-id must be 16 lowercase hex characters, got ${JSON.stringify(keyId)}`);
  const algorithm = header(1, "algorithm");
  if (algorithm !== SOP_ALGORITHM) throw new OngridError("invalid_argument", `sop: signature block: algorithm must be ${SOP_ALGORITHM}, got ${JSON.stringify(algorithm)}`);
  const b64 = inner.slice(2).map((l) => l.trim()).join("");
  if (!b64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0) {
    throw new OngridError("invalid_argument", "sop: signature block: the signature is not valid base64");
  }
  const frontmatter = parseSopFrontmatter(body);
  return { document: text, body, frontmatter, signature: Buffer.from(b64, "base64"), keyId, algorithm, hash: sha256Hex(text) };
}

/** Reads PEM public keys (or certificates' public keys) from files; error names the file. */
export function loadTrustedKeys(files: string[]): TrustedKey[] {
  const keys: TrustedKey[] = [];
  for (const file of files.map((f) => f.trim()).filter(Boolean)) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new OngridError("invalid_argument", `sop trusted key ${file}: cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, "check approvals.sop_trusted_keys / --trusted-key");
    }
    const blocks = [...text.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g)];
    if (blocks.length === 0) throw new OngridError("invalid_argument", `sop trusted key ${file}: no PEM public key or certificate in it`, "Export the public key: `openssl pkey -in sop.key -pubout -out sop.pub`.");
    blocks.forEach((b, i) => {
      const source = blocks.length > 1 ? `${file}#${i + 1}` : file;
      const label = b[1];
      let key: KeyObject;
      try {
        if (label === "CERTIFICATE") key = new X509Certificate(b[0]).publicKey;
        else if (label === "PUBLIC KEY" || label === "RSA PUBLIC KEY") key = createPublicKey(b[0]);
        else if (label.includes("PRIVATE KEY")) {
          throw new OngridError("invalid_argument", `sop trusted key ${source}: is a private key; trust only the public half`, "Export it: `openssl pkey -in sop.key -pubout -out sop.pub` (or use PREFIX.pub from `ongrid sop keygen`).");
        } else throw new Error(`unsupported PEM block "${label}" (want PUBLIC KEY or CERTIFICATE)`);
      } catch (err) {
        if (err instanceof OngridError) throw err;
        throw new OngridError("invalid_argument", `sop trusted key ${source}: ${(err as Error).message}`);
      }
      requireRsa(key, `sop trusted key ${source}`);
      const keyId = keyIdOf(key);
      if (!keys.some((k) => k.keyId === keyId)) keys.push({ keyId, key, source });
    });
  }
  return keys;
}

function label(fm: SopFrontmatter): string {
  return `SOP "${fm.id}" v${fm.version}`;
}

/**
 * Parses a signed SOP and checks its signature against the trusted keys and its expiry at `now`
 * (no coverage check). The key named in the trailer must be trusted and must verify the body.
 */
export function verifySop(text: string, keys: TrustedKey[], now: Date = new Date()): { sop: SignedSop; key: TrustedKey } {
  if (keys.length === 0) {
    throw new OngridError("permission_denied", "no SOP signing keys are trusted (approvals.sop_trusted_keys is empty)", "Set approvals.sop_trusted_keys (ONGRID_SOP_TRUSTED_KEYS) to the PEM public keys of your SOP signers.");
  }
  const sop = parseSignedSop(text);
  const fm = sop.frontmatter;
  const key = keys.find((k) => k.keyId === sop.keyId);
  let ok = false;
  if (key) {
    try {
      ok = verify("sha256", Buffer.from(sop.body, "utf8"), { key: key.key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }, sop.signature);
    } catch {
      ok = false;
    }
  }
  if (!key || !ok) {
    throw new OngridError(
      "permission_denied",
      `${label(fm)}: signature does not verify against any trusted key (tampered, or signed by an untrusted key ${sop.keyId})`,
      key
        ? `key ${sop.keyId} (${key.source}) is trusted but the document or its signature changed after signing; send it exactly as signed, or sign it again`
        : `key ${sop.keyId} is not among the trusted keys (${keys.map((k) => k.keyId).join(", ")})`,
    );
  }
  if (now.getTime() >= fm.expires.getTime()) {
    throw new OngridError("permission_denied", `${label(fm)} expired at ${fm.expires.toISOString()}`, "Have the SOP reviewed, give it a new version and expiry, and sign it again.");
  }
  return { sop, key };
}

function shown(v: unknown): string {
  const s = v === undefined ? "undefined" : JSON.stringify(v) ?? String(v);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

/** The string a pattern is matched against: strings as they are, numbers/booleans via String, the rest as JSON. */
function patternSubject(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v) ?? String(v);
}

/** The whole check a dangerous call needs. Returns id/version/hash when the SOP verifies, is unexpired at `now`, covers `skillKey`, and every constraint for that skill holds for `params`. */
export function checkSop(
  text: string,
  keys: TrustedKey[],
  call: { skillKey: string; params: Record<string, unknown>; now?: Date },
): { id: string; version: string; hash: string; title: string; expires: Date } {
  // Signature (and expiry) first: nothing in the frontmatter is trusted before it verifies.
  const { sop } = verifySop(text, keys, call.now ?? new Date());
  const fm = sop.frontmatter;
  if (!fm.skills.includes(call.skillKey)) {
    throw new OngridError("permission_denied", `${label(fm)} does not cover skill "${call.skillKey}" (covers: ${fm.skills.join(", ")})`, "Use an SOP that lists this skill in its frontmatter `skills`.");
  }
  const violations: string[] = [];
  const params = call.params ?? {};
  for (const [name, c] of Object.entries(fm.params[call.skillKey] ?? {})) {
    const present = Object.prototype.hasOwnProperty.call(params, name) && params[name] !== undefined;
    if (!present) {
      violations.push(`${label(fm)} does not allow ${call.skillKey} param "${name}" to be absent (rule: required by SOP)`);
      continue;
    }
    const v = params[name];
    if (c.pattern !== undefined) {
      if (!compilePattern(c.pattern).test(patternSubject(v))) {
        violations.push(`${label(fm)} does not allow ${call.skillKey} param "${name}" = ${shown(v)} (rule: pattern ${c.pattern})`);
      }
    } else if (c.values) {
      if (!c.values.some((allowed) => allowed === v)) {
        violations.push(`${label(fm)} does not allow ${call.skillKey} param "${name}" = ${shown(v)} (rule: one of ${JSON.stringify(c.values)})`);
      }
    }
  }
  if (violations.length) {
    throw new OngridError("permission_denied", violations.join("\n"), "Change the call to fit the SOP, or use an SOP written (and signed) for this call.");
  }
  return { id: fm.id, version: fm.version, hash: sop.hash, title: fm.title, expires: fm.expires };
}
