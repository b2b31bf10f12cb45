import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { SkillError } from "./errors.ts";
import { REDACTED } from "./redact.ts";
import { buildSkill } from "./registry.ts";
import { runSkill, type RunOptions } from "./run.ts";
import type { SkillContext, SkillExecutor } from "./types.ts";

function setup(execute: SkillExecutor, overrides: Partial<RunOptions> = {}) {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "debug" }, { write: (chunk: string) => void lines.push(JSON.parse(chunk)) });
  const skill = buildSkill({
    key: "probe_http",
    name: "Probe HTTP",
    description: "Probe a URL. Use when a service looks down.",
    class: "safe",
    execute,
  });
  const opts: RunOptions = { callId: "call-1", timeoutMs: 5_000, outputCapBytes: 10_000, log, edgeId: "edge-7", ...overrides };
  return { run: () => runSkill(skill, { url: "https://x" }, opts), lines };
}

describe("runSkill", () => {
  it("wraps a successful output in the envelope and gives the executor its context", async () => {
    let seen: SkillContext | undefined;
    let seenParams: unknown;
    const before = Date.now();
    const { run } = setup(
      async (ctx, params) => {
        seen = ctx;
        seenParams = params;
        return { status: 200 };
      },
      { settings: { base_url: "http://searx" } },
    );
    const env = await run();
    expect(env).toEqual({ success: true, output: { status: 200 }, duration_ms: expect.any(Number), truncated: false, edge_id: "edge-7" });
    expect(env.error).toBeUndefined();
    expect(env.duration_ms).toBeGreaterThanOrEqual(0);
    expect(seenParams).toEqual({ url: "https://x" });
    expect(seen?.callId).toBe("call-1");
    expect(seen?.edgeId).toBe("edge-7");
    expect(seen?.settings).toEqual({ base_url: "http://searx" });
    expect(seen?.deadline).toBeGreaterThanOrEqual(before + 5_000);
    expect(seen?.signal.aborted).toBe(false);
  });

  it("clears the deadline timer once the executor has finished", async () => {
    let signal: AbortSignal | undefined;
    const { run } = setup(async (ctx) => ((signal = ctx.signal), "ok"), { timeoutMs: 20 });
    await run();
    await new Promise((r) => setTimeout(r, 60));
    expect(signal?.aborted).toBe(false);
  });

  it("defaults edge_id to empty and undefined output to null", async () => {
    const { run } = setup(async () => undefined, { edgeId: undefined });
    expect(await run()).toMatchObject({ success: true, output: null, edge_id: "" });
  });

  it("turns a SkillError into {code, message, hint}", async () => {
    const { run } = setup(async () => {
      throw new SkillError("upstream_unavailable", "SearXNG answered 502", "Retry in a minute or check skills.web_search.url.");
    });
    const env = await run();
    expect(env.success).toBe(false);
    expect(env.output).toBeNull();
    expect(env.error).toEqual({ code: "upstream_unavailable", message: "SearXNG answered 502", hint: "Retry in a minute or check skills.web_search.url." });
  });

  it("keeps what a failed call still has to show (a SkillError's output), redacted and capped like any output", async () => {
    const { run } = setup(async () => {
      throw new SkillError("exit_status", "the command exited with status 2", "Read stderr.", { exit_code: 2, stderr: "password=hunter2hunter2\n", stdout: "y".repeat(20_000) });
    }, { outputCapBytes: 2_000 });
    const env = await run();
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("exit_status");
    expect(env.truncated).toBe(true);
    expect(JSON.stringify(env.output)).not.toContain("hunter2hunter2");
    expect(JSON.stringify(env.output).length).toBeLessThanOrEqual(2_100);
  });

  it("answers not_found, not internal, when a file vanishes during a read (a real ENOENT from the file system)", async () => {
    const { readFile } = await import("node:fs/promises");
    const { run } = setup(async () => readFile(`/tmp/ongrid-vanished-${process.pid}-${Date.now()}`));
    const env = await run();
    expect(env.error).toMatchObject({ code: "not_found", message: expect.stringMatching(/vanished while it was read \(ENOENT\)/) });
  });

  it("turns any other thrown error into internal, without a stack, and logs the stack", async () => {
    const { run, lines } = setup(async () => {
      throw new TypeError("cannot read properties of undefined (reading 'x')");
    });
    const env = await run();
    expect(env.error?.code).toBe("internal");
    expect(env.error?.message).toBe("cannot read properties of undefined (reading 'x')");
    expect(env.error?.hint).toMatch(/not in the params/);
    expect(JSON.stringify(env)).not.toMatch(/\bat .*run\.test\.ts/);
    const logged = lines.find((l) => l.level === 50);
    expect(String(logged?.stack)).toContain("run.test.ts");
    expect(logged?.skill).toBe("probe_http");
    expect(logged?.call_id).toBe("call-1");
  });

  it("handles synchronous throws and non-Error values", async () => {
    const sync = setup((() => {
      throw new Error("sync boom");
    }) as SkillExecutor);
    expect((await sync.run()).error).toMatchObject({ code: "internal", message: "sync boom" });
    const str = setup(() => Promise.reject("plain string"));
    expect((await str.run()).error).toMatchObject({ code: "internal", message: "plain string" });
  });

  it("yields deadline_exceeded even when the executor ignores the signal", async () => {
    let signal: AbortSignal | undefined;
    const { run } = setup(
      (ctx) => {
        signal = ctx.signal;
        return new Promise(() => {}); // never settles: only the deadline can end this call
      },
      { timeoutMs: 30 },
    );
    const env = await run();
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("deadline_exceeded");
    expect(env.error?.message).toBe('skill "probe_http" did not finish within 30 ms');
    expect(env.error?.hint).toMatch(/narrower request/);
    expect(signal?.aborted).toBe(true);
  });

  it("reports deadline_exceeded, not internal, when an executor honours the signal by throwing", async () => {
    const { run } = setup(
      (ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener("abort", () => reject(new Error("This operation was aborted")));
        }),
      { timeoutMs: 20 },
    );
    expect((await run()).error?.code).toBe("deadline_exceeded");
  });

  it("reports cancelled when the caller's signal aborts mid-call", async () => {
    const controller = new AbortController();
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let signal: AbortSignal | undefined;
    const { run } = setup(
      (ctx) => {
        signal = ctx.signal;
        started();
        return new Promise(() => {});
      },
      { signal: controller.signal },
    );
    const pending = run();
    await running;
    controller.abort();
    const env = await pending;
    expect(env.error?.code).toBe("cancelled");
    expect(env.error?.hint).toMatch(/cancelled/);
    expect(signal?.aborted).toBe(true);
  });

  it("does not start the executor when the caller's signal is already aborted", async () => {
    let called = false;
    const { run } = setup(async () => ((called = true), "x"), { signal: AbortSignal.abort() });
    expect((await run()).error?.code).toBe("cancelled");
    expect(called).toBe(false);
  });

  it("redacts, then truncates the output and the error text", async () => {
    const token = "ghp_" + "Ab1".repeat(12);
    const { run } = setup(async () => ({ token: "t", log: `Authorization: Bearer abc\n${token}\n${"line\n".repeat(2_000)}` }), {
      outputCapBytes: 400,
    });
    const env = await run();
    expect(env.success).toBe(true);
    expect(env.truncated).toBe(true);
    const out = env.output as string;
    expect(typeof out).toBe("string");
    expect(out.startsWith(`{"token":"${REDACTED}","log":"Authorization: ${REDACTED}\\n${REDACTED}\\n`)).toBe(true);
    expect(out).toMatch(/\n…\[truncated: \d+ of \d+ bytes shown\]$/);
    expect(out).not.toContain(token);
    expect(Buffer.byteLength(JSON.stringify(out))).toBeLessThanOrEqual(400);

    const failing = setup(async () => {
      throw new SkillError("auth_failed", "login with password=hunter2 refused", "Check DB_PASSWORD=hunter2 in the vault");
    });
    const failed = await failing.run();
    expect(failed.error).toEqual({
      code: "auth_failed",
      message: `login with password=${REDACTED} refused`,
      hint: `Check DB_PASSWORD=${REDACTED} in the vault`,
    });
  });

  it("makes the output plain JSON before redaction: bigint, Date, undefined, functions, symbols", async () => {
    const { run } = setup(async () => ({
      n: 10n,
      big: 2n ** 70n,
      neg: -5n,
      when: new Date("2024-01-02T03:04:05.000Z"),
      never: new Date(Number.NaN),
      gone: undefined,
      fn: () => 1,
      sym: Symbol("s"),
      [Symbol("key")]: "hidden",
      list: [1n, undefined, () => 1, Symbol("t"), Number.NaN, Infinity],
      nested: { token: 5n, db: "postgres://u:p@h/db", at: new Date(0) },
      boxed: [Object(7), Object("s"), Object(true)],
      custom: { toJSON: () => ({ id: 3n, note: "password=x" }) },
    }));
    const env = await run();
    expect(env.success).toBe(true);
    expect(env.output).toStrictEqual({
      n: "10",
      big: "1180591620717411303424",
      neg: "-5",
      when: "2024-01-02T03:04:05.000Z",
      never: null,
      list: ["1", null, null, null, null, null],
      nested: { token: REDACTED, db: `postgres://u:${REDACTED}@h/db`, at: "1970-01-01T00:00:00.000Z" },
      boxed: [7, "s", true],
      custom: { id: "3", note: `password=${REDACTED}` },
    });
    expect(JSON.parse(JSON.stringify(env))).toStrictEqual(env);
  });

  it("makes top-level bigint, Date, function and symbol outputs plain JSON", async () => {
    expect((await setup(async () => 42n).run()).output).toBe("42");
    expect((await setup(async () => new Date(86_400_000)).run()).output).toBe("1970-01-02T00:00:00.000Z");
    expect((await setup((async () => () => 1) as SkillExecutor).run())).toMatchObject({ success: true, output: null });
    expect((await setup(async () => Symbol("s")).run())).toMatchObject({ success: true, output: null });
  });

  it("keeps cycles, errors and deep nesting serialisable", async () => {
    const cyclic: Record<string, unknown> = { n: 1n };
    cyclic.self = cyclic;
    const shared = { v: 2n };
    let deep: unknown = 3n;
    for (let i = 0; i < 2_000; i++) deep = [deep];
    const { run } = setup(async () => ({ cyclic, twice: [shared, shared], err: new Error("bad password=hunter2"), deep }));
    const env = await run();
    expect(env.success).toBe(true);
    const out = env.output as Record<string, unknown>;
    expect(out.cyclic).toEqual({ n: "1", self: "[Circular]" });
    expect(out.twice).toEqual([{ v: "2" }, { v: "2" }]);
    expect(out.err).toEqual({ name: "Error", message: `bad password=${REDACTED}` });
    expect(() => JSON.stringify(env)).not.toThrow();
  });

  it("truncates an output that holds bigints to a JSON string", async () => {
    const { run } = setup(async () => ({ ids: Array.from({ length: 500 }, (_, i) => BigInt(i) * 10n ** 20n) }), { outputCapBytes: 200 });
    const env = await run();
    expect(env.success).toBe(true);
    expect(env.truncated).toBe(true);
    expect(String(env.output).startsWith('{"ids":["0","100000000000000000000",')).toBe(true);
    expect(() => JSON.stringify(env)).not.toThrow();
  });

  it.each([{ timeoutMs: 0 }, { timeoutMs: Number.NaN }, { outputCapBytes: 0 }])("refuses %j as an envelope, not an exception", async (bad) => {
    let called = false;
    const { run } = setup(async () => ((called = true), "x"), bad);
    const env = await run();
    expect(env.success).toBe(false);
    expect(env.error?.code).toBe("invalid_argument");
    expect(env.error?.message).toContain(Object.keys(bad)[0]);
    expect(called).toBe(false);
  });
});
