import { describe, expect, it } from "vitest";
import { parseSelector } from "./selector.ts";

describe("label selectors", () => {
  const web = { team: "payments", env: "prod", gpu: "" };
  it.each([
    ["", true],
    ["team=payments", true],
    ["team==payments", true],
    ["team=search", false],
    ["env!=dev", true],
    ["env!=prod", false],
    ["zone!=a", true],
    ["gpu", true],
    ["!gpu", false],
    ["!canary", true],
    ["team=payments, env=prod ,gpu", true],
    ["team=payments,env=dev", false],
  ])("%j matches %j", (text, expected) => {
    expect(parseSelector(text).matches(web)).toBe(expected);
  });

  it.each(["=x", "team=a b", "te am=x", "team=" + "x".repeat(64)])("refuses %j naming the clause", (text) => {
    expect(() => parseSelector(text, "selector")).toThrow(/selector: clause ".*" is not key=value, key!=value, key or !key \(rule: selector\)/);
  });

  it("ignores empty clauses", () => {
    expect(parseSelector("team=payments,,").matches(web)).toBe(true);
  });
});
