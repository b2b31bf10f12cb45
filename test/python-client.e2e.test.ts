/**
 * Issue 28, clients in other languages: the Python example (docs/examples/python/ongrid_client.py)
 * against a real manager, with code generated from proto/ by the real protoc and
 * grpc_python_plugin (Debian's protobuf-compiler and protobuf-compiler-grpc) into a temporary
 * directory, run by a python3 that has grpcio and protobuf (Debian's python3-grpcio and
 * python3-protobuf): ListSkills and ExecuteSkill over gRPC with the bearer token in metadata,
 * in cleartext (h2c) and over TLS. Without the tools the tests skip and say why; under CI they fail.
 */
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootManager, type TestManager } from "./support/manager.ts";
import { requiredUnderCi } from "./support/ci.ts";
import { makeTestPki, type TestPki } from "./support/tls.ts";
import { ROOT } from "./support/cli.ts";

const exec = promisify(execFile);
const SCRIPT = join(ROOT, "docs", "examples", "python", "ongrid_client.py");
const PROTOC = process.env.ONGRID_PROTOC || "/usr/bin/protoc";
const PLUGIN = process.env.ONGRID_GRPC_PYTHON_PLUGIN || "/usr/bin/grpc_python_plugin";

/** A python3 that imports grpc and protobuf: $ONGRID_PYTHON, else Debian's (a pyenv shim on PATH may lack them), else the one on PATH. */
function findPython(): string | undefined {
  const candidates = process.env.ONGRID_PYTHON ? [process.env.ONGRID_PYTHON] : ["/usr/bin/python3", "python3"];
  return candidates.find((p) => spawnSync(p, ["-c", "import grpc, google.protobuf"], { stdio: "ignore" }).status === 0);
}

const PYTHON = findPython();
const missing = [
  existsSync(PROTOC) ? "" : `no protoc at ${PROTOC} (Debian's protobuf-compiler)`,
  existsSync(PLUGIN) ? "" : `no grpc_python_plugin at ${PLUGIN} (Debian's protobuf-compiler-grpc)`,
  PYTHON ? "" : "no python3 that imports grpc and google.protobuf (Debian's python3-grpcio and python3-protobuf; or set ONGRID_PYTHON)",
].filter(Boolean);
const skipWhy = missing.join("; ") || undefined;
if (skipWhy && process.env.CI !== "true") console.warn(`skipping the Python client tests: ${skipWhy}`);

let gen: string;
beforeAll(async () => {
  if (skipWhy) return;
  gen = mkdtempSync(join(tmpdir(), "ongrid-python-"));
  const protos = readdirSync(join(ROOT, "proto", "ongrid", "v1")).filter((f) => f.endsWith(".proto")).map((f) => join("proto", "ongrid", "v1", f));
  await exec(PROTOC, ["-I", "proto", `--python_out=${gen}`, `--grpc_out=${gen}`, `--plugin=protoc-gen-grpc=${PLUGIN}`, ...protos], { cwd: ROOT });
});
afterAll(() => {
  if (gen) rmSync(gen, { recursive: true, force: true });
});

/** Runs the example; resolves with its exit code and output (a non-zero exit is a result, not a throw). */
async function runExample(args: string[], token: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(PYTHON!, [SCRIPT, ...args], { env: { PATH: process.env.PATH, ONGRID_TOKEN: token, PYTHONPATH: gen }, timeout: 90_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** Checks the example's report against the manager: the skills it lists, the call's output and its audit row. */
async function expectListedAndRun(m: TestManager, out: { code: number; stdout: string; stderr: string }): Promise<void> {
  expect(out, out.stderr).toMatchObject({ code: 0 });
  const listing = out.stdout.slice(0, out.stdout.search(/^analyze_output: /m));
  const keys = [...listing.matchAll(/^ {2}([a-z0-9_]+)$/gm)].map((x) => x[1]);
  expect(out.stdout).toContain(`skills: ${keys.length}\n`);
  expect(keys).toEqual(expect.arrayContaining(["analyze_output", "query_edges", "web_search"]));
  const ran = /^analyze_output: success \(audit row (\d+)\)$/m.exec(out.stdout);
  expect(ran).not.toBeNull();
  const output = JSON.parse(out.stdout.slice(out.stdout.indexOf("{"))) as { stats: { lines: number; errorLines: number } };
  expect(output.stats).toMatchObject({ lines: 1, errorLines: 1 });
  await m.audit.flush();
  const rows = await m.audit.list({ newestFirst: true, limit: 50 });
  expect(rows.find((r) => String(r.seq) === ran![1])).toMatchObject({ toolName: "analyze_output", callerUserId: "admin", decision: "allow" });
}

describe("the Python gRPC client example (docs/examples/python)", () => {
  describe("cleartext (h2c)", () => {
    let m: TestManager;
    beforeAll(async () => {
      if (!skipWhy) m = await bootManager();
    });
    afterAll(async () => m?.stop());

    it.skipIf(skipWhy)("lists the skills and runs analyze_output with the bearer token in metadata", async () => {
      await expectListedAndRun(m, await runExample(["--manager", `127.0.0.1:${m.port}`, "--text", "ERROR disk full on /var"], m.adminToken));
    });

    it.skipIf(skipWhy)("says what the manager refused: a token it does not know is UNAUTHENTICATED", async () => {
      const out = await runExample(["--manager", `127.0.0.1:${m.port}`], `ogu_000000000000_${"a".repeat(43)}`);
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(/^error: UNAUTHENTICATED: .*unknown API token/m);
    });
  });

  describe("TLS", () => {
    let m: TestManager;
    let pki: TestPki;
    beforeAll(async () => {
      if (skipWhy) return;
      pki = makeTestPki();
      m = await bootManager({ "server.tls_cert": pki.serverCert, "server.tls_key": pki.serverKey });
    });
    afterAll(async () => {
      await m?.stop();
      if (pki) rmSync(pki.dir, { recursive: true, force: true });
    });

    it.skipIf(skipWhy)("verifies the manager against --ca and makes the same calls", async () => {
      await expectListedAndRun(m, await runExample(["--manager", `127.0.0.1:${m.port}`, "--ca", pki.caCert, "--text", "ERROR disk full on /var"], m.adminToken));
    });
  });

  requiredUnderCi("the Python client example", () => skipWhy);
});
