/** `ongrid credentials` as an operator uses it: values in on stdin or from a file, never on the command line, never out. */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCredentialStore } from "../manager/calls/credentials/store.ts";
import { openDatabase } from "../manager/db/client.ts";
import { runOngrid } from "./support/cli.ts";

const KEY = randomBytes(32).toString("base64");
const SECRET = "prom-Sup3rSecret/value+=";
const FILE_SECRET = "svc:from-file-pa55";

let dir: string;
let data: string;
const env = (key = KEY) => ({ DATABASE_URL: "", ONGRID_CREDENTIALS_KEY: key, ONGRID_CREDENTIALS_KEY_FILE: "", ONGRID_MANAGER_URL: "" });
const cli = (args: string[], input?: string, key?: string) => runOngrid(["credentials", ...args, "--data", data], env(key), undefined, input);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-cred-cli-"));
  data = join(dir, "data");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("ongrid credentials", () => {
  it("sets from stdin and from a file, lists names not values, deletes", { timeout: 180_000 }, async () => {
    const set = await cli(["set", "prom.token", "--description", "Prometheus read token"], `${SECRET}\n`);
    expect(set.stderr).toBe("");
    expect(set.code).toBe(0);
    expect(set.stdout).toBe('stored credential "prom.token"\n');

    const file = join(dir, "secret.txt");
    writeFileSync(file, `${FILE_SECRET}\r\n`, { mode: 0o600 });
    const fromFile = await cli(["set", "probe.basic", "--from-file", file, "--json"]);
    expect(fromFile.code).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toMatchObject({ name: "probe.basic", updated_by: expect.stringMatching(/^local:/) });

    const list = await cli(["list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^NAME\s+DESCRIPTION\s+UPDATED_AT\s+UPDATED_BY$/m);
    expect(list.stdout).toMatch(/^probe\.basic\s+/m);
    expect(list.stdout).toMatch(/^prom\.token\s+Prometheus read token\s+\d{4}-/m);
    const json = await cli(["list", "--json"]);
    expect((JSON.parse(json.stdout) as Array<{ name: string }>).map((c) => c.name)).toEqual(["probe.basic", "prom.token"]);
    for (const r of [set, fromFile, list, json]) {
      expect(r.stdout + r.stderr).not.toContain(SECRET);
      expect(r.stdout + r.stderr).not.toContain(FILE_SECRET);
    }

    // What was stored is the value exactly (trailing line break dropped), encrypted under the key.
    const database = await openDatabase({ dataDir: data });
    try {
      const store = createCredentialStore(database, Buffer.from(KEY, "base64"));
      expect(await store.resolve("prom.token")).toBe(SECRET);
      expect(await store.resolve("probe.basic")).toBe(FILE_SECRET);
    } finally {
      await database.close();
    }

    const del = await cli(["delete", "prom.token"]);
    expect(del.code).toBe(0);
    expect(del.stdout).toBe('deleted credential "prom.token"\n');
    const again = await cli(["delete", "prom.token"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^ongrid: credential "prom\.token" does not exist/);
    expect((await cli(["list"])).stdout).not.toMatch(/prom\.token/);
  });

  it("refuses a value on the command line, as a flag or an argument, without echoing it", async () => {
    for (const args of [["set", "x.token", "--value", SECRET], ["set", "x.token", SECRET]]) {
      const r = await cli(args, "");
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(/secrets on the command line leak to `ps`/);
      expect(r.stderr).not.toContain(SECRET);
    }
    const empty = await cli(["set", "x.token"], "\n");
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/held no value/);
    const badName = await cli(["set", "Bad.Name"], SECRET);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toMatch(/not a valid credential name/);
  });

  it("without a key, set fails with how to configure one; a malformed key is named, not quoted", async () => {
    const none = await cli(["set", "x.token"], SECRET, "");
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(
      "ongrid: the credential store is not configured: set credentials.key_file (or ONGRID_CREDENTIALS_KEY) to a file holding base64 of 32 random bytes",
    );
    expect(none.stderr).toMatch(/hint: .*openssl rand -base64 32 >/);
    expect((await cli(["list"], undefined, "")).code).toBe(0);

    const shortKey = randomBytes(16).toString("base64");
    const bad = await cli(["set", "x.token"], SECRET, shortKey);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/credentials\.key \(ONGRID_CREDENTIALS_KEY\): decodes to 16 bytes, not 32 \(rule: base64 of exactly 32 bytes\)/);
    expect(bad.stderr).not.toContain(shortKey);
  });
});
