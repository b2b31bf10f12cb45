import { describe, expect, it } from "vitest";
import { OngridError } from "./errors.ts";
import { TRUNCATION_MARKER_PREFIX, truncateOutput } from "./truncate.ts";

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

describe("truncateOutput", () => {
  it("returns output within the cap unchanged", () => {
    const output = { rows: [1, 2, 3], note: "ok" };
    const r = truncateOutput(output, jsonBytes(output));
    expect(r).toEqual({ output, truncated: false });
    expect(r.output).toBe(output);
  });

  it("cuts a long string to fit the cap and appends the marker with byte counts", () => {
    const text = "x".repeat(10_000);
    const r = truncateOutput(text, 1_000);
    expect(r.truncated).toBe(true);
    const out = r.output as string;
    const kept = out.slice(0, out.indexOf(TRUNCATION_MARKER_PREFIX));
    expect(out).toBe(`${kept}\n…[truncated: ${kept.length} of 10000 bytes shown]`);
    expect(jsonBytes(out)).toBeLessThanOrEqual(1_000);
    expect(jsonBytes(out)).toBeGreaterThan(990); // uses the room it has
  });

  it("never splits a multi-byte character", () => {
    const text = "日本語🙂".repeat(500);
    for (const cap of [97, 98, 99, 100, 101, 102]) {
      const out = truncateOutput(text, cap).output as string;
      const kept = out.slice(0, out.indexOf(TRUNCATION_MARKER_PREFIX));
      expect(text.startsWith(kept)).toBe(true);
      expect(kept).not.toMatch(/[\uD800-\uDBFF]$/); // no half surrogate pair
      expect(out).toContain(`[truncated: ${Buffer.byteLength(kept)} of ${Buffer.byteLength(text)} bytes shown]`);
      expect(jsonBytes(out)).toBeLessThanOrEqual(cap);
    }
  });

  it("accounts for JSON escaping of the kept text", () => {
    const text = '"\n'.repeat(1_000); // 2 bytes raw, 4 bytes as JSON per pair
    const out = truncateOutput(text, 200).output as string;
    expect(jsonBytes(out)).toBeLessThanOrEqual(200);
  });

  it("turns a large non-string value into its cut JSON text", () => {
    const value = { items: Array.from({ length: 500 }, (_, i) => ({ id: i, name: `item-${i}` })) };
    const r = truncateOutput(value, 300);
    expect(r.truncated).toBe(true);
    expect(typeof r.output).toBe("string");
    const out = r.output as string;
    expect(out.startsWith('{"items":[{"id":0,"name":"item-0"}')).toBe(true);
    expect(out).toMatch(new RegExp(`\\n…\\[truncated: \\d+ of ${jsonBytes(value)} bytes shown\\]$`));
    expect(jsonBytes(out)).toBeLessThanOrEqual(300);
  });

  it("gives the marker alone when the cap cannot hold it, exceeding the cap by at most the marker", () => {
    const text = "y".repeat(100);
    const out = truncateOutput(text, 5).output as string;
    expect(out).toBe("\n…[truncated: 0 of 100 bytes shown]");
  });

  it("refuses a cap that is not positive", () => {
    expect(() => truncateOutput("x", 0)).toThrow(OngridError);
    expect(() => truncateOutput("x", Number.NaN)).toThrow(/positive number of bytes/);
  });

  it("treats an infinite cap as no cap", () => {
    const text = "z".repeat(100_000);
    expect(truncateOutput(text, Infinity)).toEqual({ output: text, truncated: false });
  });
});
