import { describe, expect, it } from "vitest";
import { toPlainJson } from "./json.ts";

describe("toPlainJson", () => {
  it("agrees with a JSON.stringify round trip wherever that succeeds", () => {
    const samples: unknown[] = [
      null,
      "s",
      0,
      -0,
      1.5,
      Number.NaN,
      -Infinity,
      true,
      [],
      {},
      [undefined, () => 1, Symbol("s"), 1],
      { a: undefined, b: () => 1, c: Symbol("c"), d: [new Date(0)], [Symbol("k")]: 1 },
      new Date("2024-05-06T07:08:09.010Z"),
      { when: new Date(Number.NaN) },
      new Map([["a", 1]]),
      new Set([1]),
      new Uint8Array([1, 2]),
      Buffer.from("hi"),
      { toJSON: (key: string) => ({ key, nested: { toJSON: () => "inner" } }) },
      [Object(1), Object("x"), Object(false)],
      Object.assign(Object.create(null) as object, { x: 1 }),
      JSON.parse('{"__proto__": {"polluted": true}}'),
    ];
    for (const sample of samples) {
      const viaJson = JSON.stringify(sample);
      expect(toPlainJson(sample)).toStrictEqual(viaJson === undefined ? undefined : JSON.parse(viaJson));
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("converts what JSON.stringify cannot: bigints, cycles, errors and deep nesting", () => {
    const cyclic: Record<string, unknown> = { n: 2n ** 64n, neg: -1n, boxed: Object(3n) };
    cyclic.self = [cyclic];
    expect(toPlainJson(cyclic)).toStrictEqual({ n: "18446744073709551616", neg: "-1", boxed: "3", self: ["[Circular]"] });
    expect(toPlainJson(new TypeError("boom"))).toStrictEqual({ name: "TypeError", message: "boom" });
    let deep: unknown = 1;
    for (let i = 0; i < 1_500; i++) deep = { d: deep };
    let level = toPlainJson(deep);
    for (let i = 0; i < 1_000; i++) level = (level as { d: unknown }).d;
    expect(level).toBe("[nested too deep]");
    expect(toPlainJson(undefined)).toBeUndefined();
    expect(toPlainJson(() => 1)).toBeUndefined();
  });
});
