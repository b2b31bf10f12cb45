import { describe, expect, test } from "vitest";
import { containsPhrase } from "./scope.ts";

describe("containsPhrase", () => {
  test("ASCII phrases match whole words only", () => {
    expect(containsPhrase("the server room is hot", "oom")).toBe(false);
    expect(containsPhrase("zoom", "oom")).toBe(false);
    expect(containsPhrase("oomkiller", "oom")).toBe(false);
    expect(containsPhrase("oom-killer fired", "oom")).toBe(true);
    expect(containsPhrase("kernel: oom", "oom")).toBe(true);
    // A later whole-word occurrence is found after an earlier partial one.
    expect(containsPhrase("room full, then oom", "oom")).toBe(true);
    expect(containsPhrase("disk full on db-2", "disk full")).toBe(true);
    expect(containsPhrase("diskfull", "disk full")).toBe(false);
  });

  test("the phrase is lower-cased; a phrase starting with punctuation needs no boundary before it", () => {
    expect(containsPhrase("high cpu on web-1", "CPU")).toBe(true);
    expect(containsPhrase("nginx.service failed", ".service")).toBe(true);
    expect(containsPhrase("nginx.services failed", ".service")).toBe(false);
  });

  test("Chinese phrases match as substrings", () => {
    expect(containsPhrase("web-3上的磁盘满了", "磁盘满")).toBe(true);
    expect(containsPhrase("redis连接超时了", "连接超时")).toBe(true);
    expect(containsPhrase("redis连接正常", "连接超时")).toBe(false);
  });
});
