import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asNobody, fakeTool, isRoot, loadPack, outputOf, scratchDir, sh, suffix, systemCommand, trySh, withEnv } from "../pack-kit.ts";
import { requiredUnderCi } from "../../test/support/ci.ts";

const pack = loadPack(import.meta.dirname);
const NFT = systemCommand("nft");
const TABLE = `ongrid_t_${suffix()}`;
const scratch = scratchDir("nft");

let skipReason: string | undefined = !NFT ? "nft (nftables) is not installed" : !isRoot ? "not root: cannot create nftables tables" : undefined;

beforeAll(() => {
  if (skipReason) return;
  try {
    sh(NFT!, "add", "table", "inet", TABLE);
  } catch (err) {
    skipReason = `nft add table is not permitted here: ${String((err as { stderr?: string }).stderr ?? err).trim()}`;
    return;
  }
  // A base chain with policy accept and rules without verdicts: nothing about the host's traffic changes.
  sh(NFT!, "add", "chain", "inet", TABLE, "input", "{ type filter hook input priority 0; policy accept; }");
  sh(NFT!, "add", "rule", "inet", TABLE, "input", "tcp", "dport", "2222", "counter", "comment", '"ongrid test"');
  sh(NFT!, "add", "chain", "inet", TABLE, "helper-chain");
  sh(NFT!, "add", "rule", "inet", TABLE, "helper-chain", "ip", "saddr", "{ 192.0.2.1, 192.0.2.2 }", "counter");
  sh(NFT!, "add", "set", "inet", TABLE, "blocklist", "{ type ipv4_addr; }");
  sh(NFT!, "add", "element", "inet", TABLE, "blocklist", "{ 198.51.100.7, 198.51.100.8 }");
  sh(NFT!, "add", "counter", "inet", TABLE, "hits");
});

afterAll(() => {
  if (NFT && !skipReason) trySh(NFT, "delete", "table", "inet", TABLE);
  scratch.cleanup();
});

describe("nft pack: loading", () => {
  it("passes readManifest, registers nft_ruleset through the loader and lints clean", () => {
    expect(pack.manifest.problems).toEqual([]);
    expect(pack.report.problems).toEqual([]);
    expect(pack.report.loaded).toEqual(["nft_ruleset"]);
    expect(pack.lintErrors).toEqual([]);
    expect(pack.registry.getOrThrow("nft_ruleset").meta).toMatchObject({ class: "safe", scope: "host" });
  });

  it("refuses names nft would parse as more commands, in validateParams and again inside the pack", async () => {
    await expect(pack.call("nft_ruleset", { family: "inet", table: "x; flush ruleset" })).rejects.toMatchObject({ code: "invalid_argument" });
    const env = await pack.callUnvalidated("nft_ruleset", { family: "inet", table: "x; flush ruleset" });
    expect(env.error?.code).toBe("invalid_argument");
  });

  it("asks for family with table, and for table with chain", async () => {
    expect((await pack.call("nft_ruleset", { table: "filter" })).error?.code).toBe("invalid_argument");
    expect((await pack.call("nft_ruleset", { family: "inet", chain: "input" })).error?.code).toBe("invalid_argument");
  });
});

describe.skipIf(!NFT || !isRoot)("nft pack against the real nft", () => {
  it("nft_ruleset reports the test table: chains with hook and policy, rules as text with handles, sets and counters", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("nft_ruleset", { family: "inet", table: TABLE }));
    expect(out.nft_version).toMatch(/^\d+\.\d+/);
    expect(out.scope).toEqual({ family: "inet", table: TABLE, chain: null });
    expect(out).toMatchObject({ table_count: 1, chain_count: 2, rule_count: 2 });
    const [table] = out.tables;
    expect(table).toMatchObject({ family: "inet", name: TABLE, handle: expect.any(Number) });
    const input = table.chains.find((c: { name: string }) => c.name === "input");
    expect(input).toMatchObject({ type: "filter", hook: "input", prio: 0, policy: "accept" });
    expect(input.rules).toHaveLength(1);
    expect(input.rules[0]).toMatchObject({ handle: expect.any(Number), comment: "ongrid test" });
    expect(input.rules[0].text).toMatch(/^tcp dport 2222 counter packets \d+ bytes \d+ comment "ongrid test"$/);
    expect(input.rules[0].expr).toBeUndefined();
    const helper = table.chains.find((c: { name: string }) => c.name === "helper-chain");
    expect(helper.rules[0].text).toMatch(/^ip saddr \{ 192\.0\.2\.1, 192\.0\.2\.2 \} counter/);
    expect(table.sets).toEqual([expect.objectContaining({ name: "blocklist", type: "ipv4_addr", element_count: 2, elements: ["198.51.100.7", "198.51.100.8"] })]);
    expect(table.objects).toEqual([expect.objectContaining({ type: "counter", name: "hits", packets: 0, bytes: 0 })]);
  });

  it("the whole ruleset includes the test table; expressions=true adds each rule's JSON expression", async (ctx) => {
    if (skipReason) ctx.skip();
    const out = outputOf(await pack.call("nft_ruleset", { expressions: true }));
    expect(out.scope).toEqual({ family: null, table: null, chain: null });
    const table = out.tables.find((t: { name: string }) => t.name === TABLE);
    expect(table).toBeDefined();
    const rule = table.chains.find((c: { name: string }) => c.name === "input").rules[0];
    expect(rule.expr).toContainEqual({ match: { op: "==", left: { payload: { protocol: "tcp", field: "dport" } }, right: 2222 } });
  });

  it("one chain, and max_rules keeps counts exact while cutting the list", async (ctx) => {
    if (skipReason) ctx.skip();
    const one = outputOf(await pack.call("nft_ruleset", { family: "inet", table: TABLE, chain: "helper-chain" }));
    expect(one).toMatchObject({ chain_count: 1, rule_count: 1 });
    expect(one.tables[0].chains[0].name).toBe("helper-chain");
    const cut = outputOf(await pack.call("nft_ruleset", { family: "inet", table: TABLE, max_rules: 1 }));
    expect(cut).toMatchObject({ rule_count: 2, rules_truncated: true });
    expect(cut.tables[0].chains.flatMap((c: { rules: unknown[] }) => c.rules)).toHaveLength(1);
  });

  it("a table that does not exist is not_found", async () => {
    const env = await pack.call("nft_ruleset", { family: "inet", table: `ongrid_absent_${suffix()}` });
    expect(env.error?.code).toBe("not_found");
    expect(env.error?.message).toMatch(/No such file or directory/);
  });

  it("run by a user without CAP_NET_ADMIN it is permission_denied (real nft as nobody)", async (ctx) => {
    const wrapper = asNobody(scratch.dir, NFT!);
    if (!wrapper) ctx.skip();
    const env = await withEnv({ NFT_BIN: wrapper }, () => pack.call("nft_ruleset", {}));
    expect(env.error?.code).toBe("permission_denied");
    expect(env.error?.message).toMatch(/Operation not permitted/);
    expect(env.error?.hint).toMatch(/CAP_NET_ADMIN/);
  });
});

describe("nft pack without nft", () => {
  it("reports tool_missing with an install hint when the nft binary is absent", async () => {
    const env = await withEnv({ NFT_BIN: join(scratch.dir, "no-such-nft") }, () => pack.call("nft_ruleset", {}));
    expect(env.success).toBe(false);
    expect(env.error).toMatchObject({ code: "tool_missing", hint: "install the nftables package, or point NFT_BIN at an existing nft" });
  });

  it("reports bad_tool_output when the tool prints something that is not JSON", async () => {
    const fake = fakeTool(scratch.dir, "nft-garbage", 'print("table inet filter {")');
    const env = await withEnv({ NFT_BIN: fake.path }, () => pack.call("nft_ruleset", {}));
    expect(env.error?.code).toBe("bad_tool_output");
    expect(fake.calls()[0]).toEqual(["-j", "list", "ruleset"]);
  });
});

requiredUnderCi("the nft pack against the real nft", () => skipReason || undefined);
