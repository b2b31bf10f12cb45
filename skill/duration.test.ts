import { describe, expect, it } from "vitest";
import { DURATION_PATTERN, formatDuration, parseDuration } from "./duration.ts";
import { OngridError } from "./errors.ts";

describe("parseDuration", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["2.5s", 2_500],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["1h0m5s250ms", 3_605_250],
    ["0s", 0],
    ["1.5h", 5_400_000],
  ])("%s is %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "10", "1d", "abc", "-5s", " 5s", "5s ", "1s1h", "5 s", "1m1m", ".5s", "1e3ms"])("refuses %j with invalid_argument", (text) => {
    let caught: unknown;
    try {
      parseDuration(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(OngridError);
    expect((caught as OngridError).code).toBe("invalid_argument");
    expect((caught as OngridError).message).toContain(`invalid duration ${JSON.stringify(text)}`);
    expect((caught as OngridError).message).toContain('"1h30m"');
  });

  it("refuses non-strings without crashing", () => {
    expect(() => parseDuration(30 as unknown as string)).toThrow(/invalid duration number/);
  });

  it("exports the same pattern the parser accepts, for JSON schemas", () => {
    const re = new RegExp(DURATION_PATTERN, "u");
    for (const ok of ["500ms", "1h30m", "2.5s"]) expect(re.test(ok)).toBe(true);
    for (const bad of ["10", "1s1h", "1d", ""]) expect(re.test(bad)).toBe(false);
  });
});

describe("formatDuration", () => {
  it("renders milliseconds with the largest units", () => {
    expect(formatDuration(5_400_000)).toBe("1h30m");
    expect(formatDuration(1_500)).toBe("1s500ms");
    expect(formatDuration(0)).toBe("0s");
  });
});
