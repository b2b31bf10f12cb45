import { beforeAll, afterAll, describe, expect, it } from "vitest";
import { createHash, generateKeyPairSync, type KeyObject } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OngridError } from "../../skill/errors.ts";
import { checkSop, keyIdOf, loadTrustedKeys, parseSignedSop, parseSopFrontmatter, signSop, verifySop, type TrustedKey } from "./sop.ts";

const SOP = `---
id: SOP-042
version: 3
title: Re-create the scratch filesystem on a loop device
skills: [exec]
params:
  exec:
    command: '^mkfs\\.ext4 /dev/loop[0-9]+$'
expires: 2027-06-30T00:00:00Z
---
# Steps
1. Unmount /scratch.
2. Run mkfs.
`;

const NOW = new Date("2026-06-01T00:00:00Z");
const GOOD = { skillKey: "exec", params: { command: "mkfs.ext4 /dev/loop3" }, now: NOW };

function rsa(bits = 2048) {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: bits });
  return { privatePem: privateKey.export({ type: "pkcs8", format: "pem" }) as string, publicKey, privateKey };
}
function trusted(publicKey: KeyObject, source = "test"): TrustedKey {
  return { keyId: keyIdOf(publicKey), key: publicKey, source };
}
/** Runs fn and returns the OngridError it throws (fails the test when it throws nothing or something else). */
function caught(fn: () => unknown): OngridError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(OngridError);
    return err as OngridError;
  }
  throw new Error("expected an OngridError, nothing was thrown");
}
/** Replaces the frontmatter of SOP. */
function withFrontmatter(yaml: string): string {
  return `---\n${yaml}\n---\n# Steps\n`;
}
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

let signer: ReturnType<typeof rsa>;
let other: ReturnType<typeof rsa>;
let signed: string;
let keys: TrustedKey[];
let dir: string;

beforeAll(() => {
  signer = rsa();
  other = rsa();
  signed = signSop(SOP, signer.privatePem);
  keys = [trusted(other.publicKey, "other"), trusted(signer.publicKey, "signer")];
  dir = mkdtempSync(join(tmpdir(), "ongrid-sop-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("signSop / parseSignedSop", () => {
  it("writes body + trailer in the documented format", () => {
    expect(signed.startsWith(SOP)).toBe(true);
    const trailer = signed.slice(SOP.length).split("\n");
    expect(trailer[0]).toBe("-----BEGIN ONGRID SOP SIGNATURE-----");
    expect(trailer[1]).toBe(`key-id: ${keyIdOf(signer.publicKey)}`);
    expect(trailer[1]).toMatch(/^key-id: [0-9a-f]{16}$/);
    expect(trailer[2]).toBe("algorithm: RSA-PSS-SHA256");
    const b64 = trailer.slice(3, -2);
    expect(b64.every((l) => l.length <= 64 && /^[A-Za-z0-9+/=]+$/.test(l))).toBe(true);
    expect(Buffer.from(b64.join(""), "base64")).toHaveLength(256); // 2048-bit RSA signature
    expect(trailer.at(-2)).toBe("-----END ONGRID SOP SIGNATURE-----");
    expect(trailer.at(-1)).toBe("");
  });

  it("key id is the first 16 hex chars of sha256 over the SPKI DER (same from the private key)", () => {
    const der = signer.publicKey.export({ type: "spki", format: "der" });
    expect(keyIdOf(signer.publicKey)).toBe(createHash("sha256").update(der).digest("hex").slice(0, 16));
    expect(keyIdOf(signer.privateKey)).toBe(keyIdOf(signer.publicKey));
    expect(keyIdOf(other.publicKey)).not.toBe(keyIdOf(signer.publicKey));
  });

  it("normalises the body to end with a single newline", () => {
    const a = signSop(SOP.trimEnd() + "\n\n\n", signer.privatePem);
    const b = signSop(SOP.trimEnd(), signer.privatePem);
    for (const s of [a, b]) {
      const p = parseSignedSop(s);
      expect(p.body).toBe(SOP);
      expect(checkSop(s, keys, GOOD).id).toBe("SOP-042");
    }
  });

  it("keeps CRLF bodies byte for byte, and they verify", () => {
    const crlf = SOP.replace(/\n/g, "\r\n");
    const s = signSop(crlf, signer.privatePem);
    const p = parseSignedSop(s);
    expect(p.body).toBe(crlf.replace(/\r\n$/, "") + "\n");
    expect(p.frontmatter.id).toBe("SOP-042");
    expect(checkSop(s, keys, GOOD).hash).toBe(sha256(s));
  });

  it("parses every part", () => {
    const p = parseSignedSop(signed);
    expect(p.document).toBe(signed);
    expect(p.body).toBe(SOP);
    expect(p.keyId).toBe(keyIdOf(signer.publicKey));
    expect(p.algorithm).toBe("RSA-PSS-SHA256");
    expect(p.signature).toHaveLength(256);
    expect(p.hash).toBe(sha256(signed));
    expect(p.frontmatter).toEqual({
      id: "SOP-042",
      version: "3",
      title: "Re-create the scratch filesystem on a loop device",
      skills: ["exec"],
      params: { exec: { command: { pattern: "^mkfs\\.ext4 /dev/loop[0-9]+$" } } },
      expires: new Date("2027-06-30T00:00:00Z"),
    });
  });

  it("refuses an unsigned document", () => {
    const e = caught(() => parseSignedSop(SOP));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toBe("sop: not signed (no ONGRID SOP SIGNATURE block)");
  });

  it("refuses two signature blocks", () => {
    const trailer = signed.slice(SOP.length);
    const e = caught(() => parseSignedSop(signed + trailer));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toMatch(/^sop: more than one ONGRID SOP SIGNATURE block/);
    // a second block smuggled into the body is refused the same way
    const e2 = caught(() => parseSignedSop(SOP + trailer + "more text\n" + trailer));
    expect(e2.message).toMatch(/more than one ONGRID SOP SIGNATURE block/);
  });

  it("refuses malformed trailers", () => {
    const cases: Array<[string, RegExp]> = [
      [signed.replace(/-----END ONGRID SOP SIGNATURE-----\n$/, ""), /signature block not closed/],
      [signed + "trailing text\n", /text after the end of the signature block/],
      [signed.replace(/^key-id: .*$/m, "key-id: XYZ"), /key-id must be 16 lowercase hex characters/],
      [signed.replace(/^key-id: .*$/m, "kid: 0123456789abcdef"), /line 1 must be "key-id: \.\.\."/],
      [signed.replace("algorithm: RSA-PSS-SHA256", "algorithm: RSA-SHA256"), /algorithm must be RSA-PSS-SHA256, got "RSA-SHA256"/],
      [signed.replace(/^algorithm: RSA-PSS-SHA256\n[\s\S]*?(?=-----END)/m, "algorithm: RSA-PSS-SHA256\n"), /the signature is not valid base64/],
      [signed.replace(/^algorithm: RSA-PSS-SHA256\n(.)/m, "algorithm: RSA-PSS-SHA256\n!"), /the signature is not valid base64/],
    ];
    for (const [text, re] of cases) {
      const e = caught(() => parseSignedSop(text));
      expect(e.code, String(re)).toBe("invalid_argument");
      expect(e.message).toMatch(re);
    }
  });

  it("refuses to sign a document that is already signed", () => {
    const e = caught(() => signSop(signed, signer.privatePem));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toMatch(/^sop: already signed/);
  });

  it("validates the frontmatter before signing", () => {
    const e = caught(() => signSop(withFrontmatter("id: SOP-1\nversion: 1\nskills: [exec]"), signer.privatePem));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toBe('sop frontmatter: field "expires": is required (rule: required)');
  });

  it("refuses EC keys, 1024-bit RSA keys and non-keys", () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const e1 = caught(() => signSop(SOP, ec.privateKey.export({ type: "pkcs8", format: "pem" }) as string));
    expect(e1.code).toBe("invalid_argument");
    expect(e1.message).toMatch(/sop signing key: is a ec key; SOP signatures need an RSA key \(2048 bits or more\)/);

    const ed = generateKeyPairSync("ed25519");
    expect(caught(() => signSop(SOP, ed.privateKey.export({ type: "pkcs8", format: "pem" }) as string)).message).toMatch(/is a ed25519 key; SOP signatures need an RSA key/);

    const small = generateKeyPairSync("rsa", { modulusLength: 1024 });
    const e2 = caught(() => signSop(SOP, small.privateKey.export({ type: "pkcs8", format: "pem" }) as string));
    expect(e2.code).toBe("invalid_argument");
    expect(e2.message).toMatch(/sop signing key: RSA key has 1024 bits; SOP signatures need at least 2048/);

    const e3 = caught(() => signSop(SOP, "not a key"));
    expect(e3.code).toBe("invalid_argument");
    expect(e3.message).toMatch(/^sop signing key: cannot read it as a PEM private key/);
  });
});

describe("parseSopFrontmatter", () => {
  const base = {
    id: "id: SOP-042",
    version: "version: 3",
    skills: "skills: [exec]",
    expires: "expires: 2027-06-30T00:00:00Z",
  };
  const fm = (over: Record<string, string | null>, extra = "") =>
    withFrontmatter(
      Object.entries({ ...base, ...over })
        .filter(([, v]) => v !== null)
        .map(([, v]) => v)
        .join("\n") + extra,
    );
  const problems = (doc: string): string[] => {
    const e = caught(() => parseSopFrontmatter(doc));
    expect(e.code).toBe("invalid_argument");
    return e.message.split("\n");
  };

  it("accepts the minimal form, with defaults for title and params", () => {
    expect(parseSopFrontmatter(fm({}))).toEqual({ id: "SOP-042", version: "3", title: "", skills: ["exec"], params: {}, expires: new Date("2027-06-30T00:00:00Z") });
  });

  it.each(["id", "version", "skills", "expires"])("reports a missing %s", (field) => {
    expect(problems(fm({ [field]: null }))).toEqual([`sop frontmatter: field "${field}": is required (rule: required)`]);
  });

  it("reports every problem at once, one per line", () => {
    const lines = problems(withFrontmatter("title: 5\nowner: ops"));
    expect(lines).toEqual([
      'sop frontmatter: field "owner": is not a known field (known: id, version, title, skills, params, expires) (rule: additionalProperties)',
      'sop frontmatter: field "id": is required (rule: required)',
      'sop frontmatter: field "version": is required (rule: required)',
      'sop frontmatter: field "title": must be a string, got integer (rule: type)',
      'sop frontmatter: field "skills": is required (rule: required)',
      'sop frontmatter: field "expires": is required (rule: required)',
    ]);
  });

  it.each<[string, Record<string, string>, RegExp]>([
    ["id not a string", { id: "id: 42" }, /field "id": must be a string, got integer \(rule: type\)/],
    ["id bad pattern", { id: "id: 'SOP 042'" }, /field "id": must match .* got "SOP 042" \(rule: pattern\)/],
    ["id too long", { id: `id: ${"a".repeat(65)}` }, /field "id": must match .*\(rule: pattern\)/],
    ["version float", { version: "version: 1.5" }, /field "version": must be a string or a non-negative integer, got number 1.5 \(quote it: '1.5'\) \(rule: type\)/],
    ["version list", { version: "version: [1]" }, /field "version": must be a string or a non-negative integer, got array \(rule: type\)/],
    ["version with spaces", { version: "version: 'v 1'" }, /field "version": must match .*\(rule: pattern\)/],
    ["skills not an array", { skills: "skills: exec" }, /field "skills": must be an array of skill keys, got string \(rule: type\)/],
    ["skills empty", { skills: "skills: []" }, /field "skills": must list at least one skill key \(rule: minItems\)/],
    ["skill key bad", { skills: "skills: [Exec]" }, /field "skills\[0\]": must be a skill key matching .* got "Exec" \(rule: pattern\)/],
    ["skill key not a string", { skills: "skills: [exec, 7]" }, /field "skills\[1\]": must be a string, got integer \(rule: type\)/],
    ["skill listed twice", { skills: "skills: [exec, exec]" }, /field "skills\[1\]": lists "exec" twice \(rule: uniqueItems\)/],
    ["expires not a date", { expires: "expires: next week" }, /field "expires": must be an ISO-8601 date .* got "next week" \(rule: format\)/],
    ["expires impossible date", { expires: "expires: 2027-02-30" }, /field "expires": .*got "2027-02-30" \(rule: format\)/],
    ["expires without zone", { expires: "expires: 2027-06-30T00:00:00" }, /field "expires": .*\(rule: format\)/],
    ["expires a number", { expires: "expires: 20270630" }, /field "expires": must be an ISO-8601 date or date-time, got integer \(rule: type\)/],
  ])("refuses %s", (_name, over, re) => {
    const lines = problems(fm(over));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^sop frontmatter: /);
    expect(lines[0]).toMatch(re);
  });

  it("accepts version strings, title, date-only and offset expiries, and Date objects", () => {
    expect(parseSopFrontmatter(fm({ version: "version: '2024.1-rc1'" })).version).toBe("2024.1-rc1");
    expect(parseSopFrontmatter(fm({}, "\ntitle: Hello")).title).toBe("Hello");
    expect(parseSopFrontmatter(fm({ expires: "expires: 2027-06-30" })).expires.toISOString()).toBe("2027-06-30T00:00:00.000Z");
    expect(parseSopFrontmatter(fm({ expires: "expires: 2027-06-30T02:30:00.250+02:00" })).expires.toISOString()).toBe("2027-06-30T00:30:00.250Z");
    // YAML 1.1 style timestamps arrive as Date objects when a document says so explicitly.
    expect(parseSopFrontmatter(fm({ expires: "expires: !!timestamp 2027-06-30T00:00:00Z" })).expires.toISOString()).toBe("2027-06-30T00:00:00.000Z");
  });

  it("parses params: patterns and value lists", () => {
    const f = parseSopFrontmatter(fm({ skills: "skills: [exec, restart_service]" }, "\nparams:\n  exec:\n    command: 'ls( -l)?'\n  restart_service:\n    unit: [nginx.service, 'cron.service']\n    force: [false]\n    retries: [1, 2]"));
    expect(f.params).toEqual({
      exec: { command: { pattern: "ls( -l)?" } },
      restart_service: { unit: { values: ["nginx.service", "cron.service"] }, force: { values: [false] }, retries: { values: [1, 2] } },
    });
  });

  it.each<[string, string, RegExp]>([
    ["params for a skill not in skills", "\nparams:\n  restart_service:\n    unit: [nginx]", /field "params.restart_service": constrains skill "restart_service", which is not listed in "skills" \(rule: listed in skills\)/],
    ["a bad regex", "\nparams:\n  exec:\n    command: '(unclosed'", /field "params.exec.command": is not a valid regular expression: .* \(rule: regex\)/],
    ["a regex escaping its anchors", "\nparams:\n  exec:\n    command: 'x)|(.*'", /field "params.exec.command": is not a valid regular expression/],
    ["an empty value list", "\nparams:\n  exec:\n    command: []", /field "params.exec.command": must list at least one allowed value \(rule: minItems\)/],
    ["a non-scalar allowed value", "\nparams:\n  exec:\n    command: [ls, {a: 1}]", /field "params.exec.command\[1\]": must be a string, number or boolean, got object \(rule: type\)/],
    ["a constraint of the wrong type", "\nparams:\n  exec:\n    command: 5", /field "params.exec.command": must be a regular expression \(string\) or a list of allowed values, got integer \(rule: type\)/],
    ["params not a mapping", "\nparams: [exec]", /field "params": must be a mapping of skill key to param constraints, got array \(rule: type\)/],
    ["a skill's params not a mapping", "\nparams:\n  exec: ls", /field "params.exec": must be a mapping of param name to constraint, got string \(rule: type\)/],
  ])("refuses %s", (_name, extra, re) => {
    const lines = problems(fm({}, extra));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(re);
  });

  it("refuses a document without frontmatter, an unclosed block, bad YAML and a non-mapping", () => {
    let e = caught(() => parseSopFrontmatter("# Steps\nno frontmatter\n"));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toMatch(/^sop frontmatter: missing \(the document must start with a line "---"/);
    e = caught(() => parseSopFrontmatter("---\nid: x\n# Steps\n"));
    expect(e.message).toMatch(/^sop frontmatter: not closed/);
    e = caught(() => parseSopFrontmatter("---\nid: [x\n---\n"));
    expect(e.message).toMatch(/^sop frontmatter: not valid YAML/);
    e = caught(() => parseSopFrontmatter("---\nid: a\nid: b\n---\n"));
    expect(e.message).toMatch(/^sop frontmatter: not valid YAML: .*unique/i);
    // The parser's excerpt of the bad line is not quoted back: it may hold a param value.
    e = caught(() => parseSopFrontmatter('---\nid: x\nparams:\n  password: "s3cr3t-SOP-value\n---\n'));
    expect(e.message).toMatch(/^sop frontmatter: not valid YAML: .*\(rule: yaml\)$/);
    expect(e.message).not.toContain("s3cr3t-SOP-value");
    e = caught(() => parseSopFrontmatter("---\n- a\n---\n"));
    expect(e.message).toBe("sop frontmatter: must be a YAML mapping of fields, got array");
    e = caught(() => parseSopFrontmatter("---\n---\n"));
    expect(e.message).toBe("sop frontmatter: must be a YAML mapping of fields, got nothing");
  });

  it("a signed document with bad frontmatter is refused by parseSignedSop", () => {
    const trailer = signed.slice(SOP.length);
    const e = caught(() => parseSignedSop(SOP.replace("version: 3\n", "") + trailer));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toBe('sop frontmatter: field "version": is required (rule: required)');
  });
});

describe("checkSop", () => {
  const label = 'SOP "SOP-042" v3';
  const denied = (fn: () => unknown): OngridError => {
    const e = caught(fn);
    expect(e.code).toBe("permission_denied");
    return e;
  };

  it("accepts a valid call and returns id, version, title, expiry and the hash of the whole signed text", () => {
    const r = checkSop(signed, keys, GOOD);
    expect(r).toEqual({ id: "SOP-042", version: "3", title: "Re-create the scratch filesystem on a loop device", expires: new Date("2027-06-30T00:00:00Z"), hash: sha256(signed) });
    expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
    // defaults `now` to the current time
    expect(checkSop(signed, keys, { skillKey: "exec", params: { command: "mkfs.ext4 /dev/loop0" } }).id).toBe("SOP-042");
  });

  it("refuses when no keys are trusted", () => {
    const e = denied(() => checkSop(signed, [], GOOD));
    expect(e.message).toBe("no SOP signing keys are trusted (approvals.sop_trusted_keys is empty)");
  });

  const BAD_SIG = /^SOP "SOP-042" v3: signature does not verify against any trusted key \(tampered, or signed by an untrusted key ([0-9a-f]{16})\)$/;

  it("refuses a body with one byte changed", () => {
    const tampered = signed.replace("loop[0-9]+", "loop[0-9]*");
    expect(tampered).not.toBe(signed);
    expect(denied(() => checkSop(tampered, keys, GOOD)).message).toMatch(BAD_SIG);
    const prose = signed.replace("Unmount /scratch", "Unmount /scratcH");
    const e = denied(() => checkSop(prose, keys, GOOD));
    expect(e.message).toMatch(BAD_SIG);
    expect(e.hint).toMatch(/is trusted but the document or its signature changed/);
  });

  it("refuses a widened frontmatter even though it parses (the signature is checked before coverage)", () => {
    const widened = signed.replace("skills: [exec]", "skills: [exec, restart_service]");
    expect(parseSignedSop(widened).frontmatter.skills).toContain("restart_service");
    expect(denied(() => checkSop(widened, keys, { skillKey: "restart_service", params: {}, now: NOW })).message).toMatch(BAD_SIG);
  });

  it("refuses a tampered signature", () => {
    const p = parseSignedSop(signed);
    const sig = Buffer.from(p.signature);
    sig[10] ^= 0x01;
    const b64 = p.signature.toString("base64").match(/.{1,64}/g)!.join("\n");
    const tampered = signed.replace(b64, sig.toString("base64").match(/.{1,64}/g)!.join("\n"));
    expect(tampered).not.toBe(signed);
    expect(denied(() => checkSop(tampered, keys, GOOD)).message).toMatch(BAD_SIG);
    // a truncated signature too
    const short = signed.replace(b64, sig.subarray(0, 128).toString("base64"));
    expect(denied(() => checkSop(short, keys, GOOD)).message).toMatch(BAD_SIG);
  });

  it("refuses a document signed by an untrusted key, naming that key", () => {
    const stranger = rsa();
    const s = signSop(SOP, stranger.privatePem);
    const e = denied(() => checkSop(s, keys, GOOD));
    expect(e.message).toMatch(BAD_SIG);
    expect(e.message.match(BAD_SIG)![1]).toBe(keyIdOf(stranger.publicKey));
    expect(e.hint).toMatch(/is not among the trusted keys/);
    // ...and accepts it once that key is trusted
    expect(checkSop(s, [...keys, trusted(stranger.publicKey)], GOOD).id).toBe("SOP-042");
  });

  it("refuses a trailer whose key-id was edited, even to another trusted key", () => {
    const signerId = keyIdOf(signer.publicKey);
    const otherId = keyIdOf(other.publicKey);
    const toOther = signed.replace(`key-id: ${signerId}`, `key-id: ${otherId}`);
    expect(denied(() => checkSop(toOther, keys, GOOD)).message).toMatch(BAD_SIG);
    const toUnknown = signed.replace(`key-id: ${signerId}`, "key-id: 0123456789abcdef");
    const e = denied(() => checkSop(toUnknown, keys, GOOD));
    expect(e.message).toMatch(BAD_SIG);
    expect(e.message).toMatch(/untrusted key 0123456789abcdef\)$/);
  });

  it("refuses an expired SOP (at `now`, and one signed already expired)", () => {
    expect(denied(() => checkSop(signed, keys, { ...GOOD, now: new Date("2027-06-30T00:00:00Z") })).message).toBe(`${label} expired at 2027-06-30T00:00:00.000Z`);
    expect(checkSop(signed, keys, { ...GOOD, now: new Date("2027-06-29T23:59:59.999Z") }).id).toBe("SOP-042");
    const old = signSop(SOP.replace("2027-06-30T00:00:00Z", "2026-01-01T00:00:00Z"), signer.privatePem);
    expect(denied(() => checkSop(old, keys, GOOD)).message).toBe(`${label} expired at 2026-01-01T00:00:00.000Z`);
  });

  it("refuses another skill", () => {
    expect(denied(() => checkSop(signed, keys, { skillKey: "restart_service", params: { unit: "nginx" }, now: NOW })).message).toBe(`${label} does not cover skill "restart_service" (covers: exec)`);
  });

  it("refuses a param that does not match the whole pattern", () => {
    const e = denied(() => checkSop(signed, keys, { ...GOOD, params: { command: "mkfs.ext4 /dev/sda" } }));
    expect(e.message).toBe(`${label} does not allow exec param "command" = "mkfs.ext4 /dev/sda" (rule: pattern ^mkfs\\.ext4 /dev/loop[0-9]+$)`);
    // whole-value matching even when the pattern itself is not anchored
    const loose = signSop(SOP.replace("'^mkfs\\.ext4 /dev/loop[0-9]+$'", "'mkfs\\.ext4 /dev/loop[0-9]+'"), signer.privatePem);
    expect(checkSop(loose, keys, GOOD).id).toBe("SOP-042");
    expect(denied(() => checkSop(loose, keys, { ...GOOD, params: { command: "mkfs.ext4 /dev/loop3; rm -rf /" } })).message).toMatch(/does not allow exec param "command" = "mkfs.ext4 \/dev\/loop3; rm -rf \/" \(rule: pattern mkfs/);
    expect(denied(() => checkSop(loose, keys, { ...GOOD, params: { command: "sudo mkfs.ext4 /dev/loop3" } })).message).toMatch(/does not allow exec param "command"/);
  });

  it("refuses a constrained param that is absent", () => {
    expect(denied(() => checkSop(signed, keys, { ...GOOD, params: {} })).message).toBe(`${label} does not allow exec param "command" to be absent (rule: required by SOP)`);
    expect(denied(() => checkSop(signed, keys, { ...GOOD, params: { command: undefined } })).message).toMatch(/\(rule: required by SOP\)$/);
  });

  it("checks value lists (strictly typed) and matches non-strings against patterns", () => {
    const doc = signSop(
      withFrontmatter(
        "id: SOP-7\nversion: 1\nskills: [restart_service, exec]\nexpires: 2027-01-01\nparams:\n  restart_service:\n    unit: [nginx.service, cron.service]\n    force: [false]\n  exec:\n    timeout: '[0-9]{1,3}'\n    args: '\\[\"-l\"\\]'",
      ),
      signer.privatePem,
    );
    const call = (skillKey: string, params: Record<string, unknown>) => () => checkSop(doc, keys, { skillKey, params, now: NOW });
    expect(call("restart_service", { unit: "cron.service", force: false, extra: "x" })().id).toBe("SOP-7");
    expect(denied(call("restart_service", { unit: "sshd.service", force: false })).message).toBe('SOP "SOP-7" v1 does not allow restart_service param "unit" = "sshd.service" (rule: one of ["nginx.service","cron.service"])');
    expect(denied(call("restart_service", { unit: "nginx.service", force: "false" })).message).toBe('SOP "SOP-7" v1 does not allow restart_service param "force" = "false" (rule: one of [false])');
    expect(denied(call("restart_service", { force: false })).message).toBe('SOP "SOP-7" v1 does not allow restart_service param "unit" to be absent (rule: required by SOP)');
    // every violation is reported, one per line
    expect(denied(call("restart_service", { unit: "x", force: true })).message.split("\n")).toHaveLength(2);
    expect(call("exec", { timeout: 30, args: ["-l"] })().id).toBe("SOP-7");
    expect(denied(call("exec", { timeout: 3000, args: ["-l"] })).message).toBe('SOP "SOP-7" v1 does not allow exec param "timeout" = 3000 (rule: pattern [0-9]{1,3})');
    expect(denied(call("exec", { timeout: 30, args: ["-la"] })).message).toMatch(/does not allow exec param "args" = \["-la"\] \(rule: pattern/);
  });

  it("reports a malformed document as invalid_argument", () => {
    let e = caught(() => checkSop(SOP, keys, GOOD));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toBe("sop: not signed (no ONGRID SOP SIGNATURE block)");
    e = caught(() => checkSop(signed.replace("expires:", "expiry:"), keys, GOOD));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toMatch(/field "expiry": is not a known field/);
    e = caught(() => checkSop("", keys, GOOD));
    expect(e.code).toBe("invalid_argument");
    e = caught(() => checkSop("x".repeat(300 * 1024), keys, GOOD));
    expect(e.message).toMatch(/^sop: document is \d+ bytes, more than the 262144 allowed/);
  });

  it("verifySop checks signature and expiry only", () => {
    const { sop, key } = verifySop(signed, keys, NOW);
    expect(key.source).toBe("signer");
    expect(sop.hash).toBe(sha256(signed));
    expect(caught(() => verifySop(signed, keys, new Date("2030-01-01T00:00:00Z"))).message).toBe(`${label} expired at 2027-06-30T00:00:00.000Z`);
  });
});

describe("loadTrustedKeys", () => {
  it("reads SPKI PEM public keys and certificates, naming the source", () => {
    const pub = join(dir, "signer.pub");
    writeFileSync(pub, signer.publicKey.export({ type: "spki", format: "pem" }));
    const pkcs1 = join(dir, "other.pkcs1.pub");
    writeFileSync(pkcs1, other.publicKey.export({ type: "pkcs1", format: "pem" }));
    const ks = loadTrustedKeys([pub, "", pkcs1, pub]);
    expect(ks.map((k) => [k.keyId, k.source])).toEqual([
      [keyIdOf(signer.publicKey), pub],
      [keyIdOf(other.publicKey), pkcs1],
    ]);
    expect(checkSop(signed, ks, GOOD).id).toBe("SOP-042");
    expect(loadTrustedKeys([])).toEqual([]);
  });

  it("takes a certificate's public key, and keys made with the documented openssl commands", () => {
    const ssl = (...args: string[]) => execFileSync("openssl", args, { stdio: "pipe" });
    const f = (n: string) => join(dir, n);
    writeFileSync(f("cert-signer.key"), signer.privatePem);
    ssl("req", "-x509", "-key", f("cert-signer.key"), "-days", "2", "-subj", "/CN=sop signer", "-out", f("signer.crt"));
    const [fromCert] = loadTrustedKeys([f("signer.crt")]);
    expect(fromCert.keyId).toBe(keyIdOf(signer.publicKey));
    expect(checkSop(signed, [fromCert], GOOD).id).toBe("SOP-042");

    ssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072", "-out", f("sop.key"));
    ssl("pkey", "-in", f("sop.key"), "-pubout", "-out", f("sop.pub"));
    const s = signSop(SOP, readFileSync(f("sop.key")));
    const ks = loadTrustedKeys([f("sop.pub")]);
    expect(parseSignedSop(s).keyId).toBe(ks[0].keyId);
    expect(checkSop(s, ks, GOOD).hash).toBe(sha256(s));
  });

  it("reads several keys from one file", () => {
    const both = join(dir, "both.pem");
    writeFileSync(both, `${signer.publicKey.export({ type: "spki", format: "pem" })}\n${other.publicKey.export({ type: "spki", format: "pem" })}`);
    expect(loadTrustedKeys([both]).map((k) => k.source)).toEqual([`${both}#1`, `${both}#2`]);
  });

  it("refuses unreadable files, files without keys, private keys, EC keys and small RSA keys, naming the file", () => {
    const missing = join(dir, "missing.pub");
    let e = caught(() => loadTrustedKeys([missing]));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toBe(`sop trusted key ${missing}: cannot read it: ENOENT`);

    const empty = join(dir, "empty.pub");
    writeFileSync(empty, "hello\n");
    expect(caught(() => loadTrustedKeys([empty])).message).toBe(`sop trusted key ${empty}: no PEM public key or certificate in it`);

    const priv = join(dir, "signer.key");
    writeFileSync(priv, signer.privatePem);
    expect(caught(() => loadTrustedKeys([priv])).message).toBe(`sop trusted key ${priv}: is a private key; trust only the public half`);

    const ecFile = join(dir, "ec.pub");
    writeFileSync(ecFile, generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({ type: "spki", format: "pem" }));
    e = caught(() => loadTrustedKeys([ecFile]));
    expect(e.code).toBe("invalid_argument");
    expect(e.message).toMatch(new RegExp(`^sop trusted key ${ecFile}: is a ec key; SOP signatures need an RSA key`));

    const smallFile = join(dir, "small.pub");
    writeFileSync(smallFile, generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ type: "spki", format: "pem" }));
    expect(caught(() => loadTrustedKeys([smallFile])).message).toBe(`sop trusted key ${smallFile}: RSA key has 1024 bits; SOP signatures need at least 2048`);

    const garbage = join(dir, "garbage.pub");
    writeFileSync(garbage, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
    expect(caught(() => loadTrustedKeys([garbage])).message).toMatch(new RegExp(`^sop trusted key ${garbage}: `));
  });
});
