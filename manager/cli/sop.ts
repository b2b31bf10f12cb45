/** `ongrid sop keygen|sign|verify`: signing keys, signed SOP documents, and checking them like the manager does. */
import { Command } from "commander";
import { existsSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { generateKeyPairSync } from "node:crypto";
import { OngridError } from "../../skill/errors.ts";
import { checkSop, keyIdOf, loadTrustedKeys, parseSignedSop, signSop, verifySop, SOP_MIN_RSA_BITS, type TrustedKey } from "../calls/sop.ts";
import { cliConfig, flagError } from "./common.ts";

function readText(file: string, what: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new OngridError("invalid_argument", `${what} ${file}: cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** Where `sop sign FILE` writes by default: x.md → x.signed.md, anything else → FILE.signed. */
export function defaultSignedPath(file: string): string {
  return file.endsWith(".md") ? `${file.slice(0, -3)}.signed.md` : `${file}.signed`;
}

/** Trusted keys from --trusted-key flags, else from approvals.sop_trusted_keys of the manager config. */
function trustedKeys(opts: { trustedKey: string[]; config?: string }): TrustedKey[] {
  if (opts.trustedKey.length) return loadTrustedKeys(opts.trustedKey);
  const config = cliConfig({ config: opts.config });
  return loadTrustedKeys((config.approvals?.sop_trusted_keys ?? "").split(":"));
}

/** Builds the `sop` command group. */
export function sopCommand(): Command {
  const cmd = new Command("sop").description("signed SOP documents, required by dangerous skill calls (see docs/sop.md)");

  cmd
    .command("keygen")
    .description("create an RSA signing key pair: PREFIX.key (private, mode 0600) and PREFIX.pub (public, for approvals.sop_trusted_keys)")
    .argument("<prefix>", "path prefix of the two files")
    .option("--bits <n>", "RSA modulus size", "3072")
    .action((prefix: string, opts: { bits: string }) => {
      if (!/^\d+$/.test(opts.bits) || Number(opts.bits) < SOP_MIN_RSA_BITS || Number(opts.bits) > 16384) {
        flagError("--bits", `must be an integer from ${SOP_MIN_RSA_BITS} to 16384, got "${opts.bits}"`);
      }
      const keyFile = `${prefix}.key`;
      const pubFile = `${prefix}.pub`;
      for (const f of [keyFile, pubFile]) {
        if (existsSync(f)) throw new OngridError("invalid_argument", `sop keygen: ${f} already exists; refusing to overwrite it`, "Choose another PREFIX, or remove the old files yourself.");
      }
      const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: Number(opts.bits) });
      try {
        writeFileSync(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600, flag: "wx" });
        chmodSync(keyFile, 0o600);
        writeFileSync(pubFile, publicKey.export({ type: "spki", format: "pem" }), { mode: 0o644, flag: "wx" });
      } catch (err) {
        throw new OngridError("invalid_argument", `sop keygen: cannot write ${(err as NodeJS.ErrnoException).path ?? prefix}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      console.log(`private key: ${keyFile} (keep it secret)`);
      console.log(`public key:  ${pubFile} (add it to approvals.sop_trusted_keys)`);
      console.log(`key id:      ${keyIdOf(publicKey)}`);
    });

  cmd
    .command("sign")
    .description("sign an SOP (Markdown with YAML frontmatter) with an RSA private key")
    .argument("<file>", "the unsigned SOP")
    .requiredOption("--key <private.pem>", "the signer's RSA private key (PEM)")
    .option("--out <file>", "where to write the signed SOP (default: FILE.md → FILE.signed.md, else FILE.signed)")
    .action((file: string, opts: { key: string; out?: string }) => {
      const markdown = readText(file, "sop");
      const keyPem = readText(opts.key, "--key");
      const signed = signSop(markdown, keyPem);
      const sop = parseSignedSop(signed);
      const out = opts.out ?? defaultSignedPath(file);
      try {
        writeFileSync(out, signed);
      } catch (err) {
        throw new OngridError("invalid_argument", `--out ${out}: cannot write it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const fm = sop.frontmatter;
      console.log(`signed: ${out}`);
      console.log(`sop: ${fm.id} v${fm.version}${fm.title ? ` (${fm.title})` : ""}`);
      console.log(`key id: ${sop.keyId}`);
      console.log(`hash: ${sop.hash}`);
      console.log(`expires: ${fm.expires.toISOString()}`);
      if (fm.expires.getTime() <= Date.now()) console.error(`warning: ${fm.id} v${fm.version} has already expired; no call will accept it`);
    });

  cmd
    .command("verify")
    .description("check a signed SOP like the manager does: signature and expiry, and with --skill its coverage and param constraints")
    .argument("<file>", "the signed SOP")
    .option("--trusted-key <public.pem>", "a trusted public key (repeatable; default: approvals.sop_trusted_keys of the config)", (v: string, acc: string[]) => [...acc, v], [])
    .option("--skill <key>", "also check that the SOP covers this skill")
    .option("--params <json>", "with --skill: the call's params as a JSON object, checked against the SOP's constraints")
    .option("--config <file>", "config file (YAML) holding approvals.sop_trusted_keys; also ONGRID_CONFIG")
    .action((file: string, opts: { trustedKey: string[]; skill?: string; params?: string; config?: string }) => {
      if (opts.params !== undefined && opts.skill === undefined) flagError("--params", "needs --skill");
      let params: Record<string, unknown> = {};
      if (opts.params !== undefined) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(opts.params);
        } catch (err) {
          flagError("--params", `not valid JSON: ${(err as Error).message}`);
        }
        if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) flagError("--params", "must be a JSON object");
        params = parsed as Record<string, unknown>;
      }
      const text = readText(file, "sop");
      const keys = trustedKeys(opts);
      const { sop, key } = verifySop(text, keys);
      if (opts.skill !== undefined) checkSop(text, keys, { skillKey: opts.skill, params });
      const fm = sop.frontmatter;
      console.log(`ok: ${fm.id} v${fm.version} (hash ${sop.hash}) signed by ${key.keyId}, expires ${fm.expires.toISOString()}`);
      if (opts.skill !== undefined) console.log(`covers: ${opts.skill} with these params`);
    });
  return cmd;
}
