/** The admin forms' label text: what parseLabels takes and refuses, and labelsText's round trip. */
import { describe, expect, it } from "vitest";
import { labelsText, parseLabels } from "./labels.ts";

describe("parseLabels", () => {
  it("takes pairs separated by commas or new lines, trimmed, and nothing for an empty text", () => {
    expect(parseLabels(" env=prod ,team = web\nrack=r7,, ")).toEqual({ env: "prod", team: "web", rack: "r7" });
    expect(parseLabels("  ")).toEqual({});
    expect(parseLabels("empty=")).toEqual({ empty: "" });
  });

  it("refuses a pair without a key or '=', and a key given twice, naming the field", () => {
    expect(() => parseLabels("env")).toThrow('labels: "env" is not key=value');
    expect(() => parseLabels("=prod", "reach")).toThrow('reach: "=prod" is not key=value');
    expect(() => parseLabels("env=a, env=b")).toThrow('labels: key "env" is given twice');
  });

  it("keeps object-prototype names as plain keys", () => {
    const out = parseLabels("__proto__=x, constructor=y");
    expect(Object.keys(out)).toEqual(["__proto__", "constructor"]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe("labelsText", () => {
  it("writes the labels sorted by key, and parses back to the same labels", () => {
    const labels = { team: "a", env: "prod" };
    expect(labelsText(labels)).toBe("env=prod, team=a");
    expect(parseLabels(labelsText(labels))).toEqual(labels);
    expect(labelsText({})).toBe("");
  });
});
