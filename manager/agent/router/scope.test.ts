import { describe, expect, test } from "vitest";
import { checkScope, containsPhrase } from "./scope.ts";

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

describe("checkScope", () => {
  test.each([
    ["recommend me an anime to watch", ["anime"]],
    ["what's the weather tomorrow in Berlin?", ["weather"]],
    ["tell me a joke", ["joke"]],
    ["Write a Poem about spring", ["poem"]],
    ["推荐一部好看的动漫", ["动漫"]],
    ["明天天气怎么样", ["天气"]],
    ["给我讲个笑话", ["笑话"]],
    ["watch anime at 10:30", ["anime"]],
  ])("refuses an off-topic-only input: %s", (text, topics) => {
    const r = checkScope(text);
    expect(r.outOfScope).toBe(true);
    expect(r.offTopic).toEqual(topics);
    expect(r.signals).toEqual([]);
  });

  test.each([
    ["the game server is down, players get timeouts"],
    ["the weather API returns 503 since the deploy"],
    ["our recipe service keeps crashing after the rollback"],
    ["足球比分接口报错 502"],
    ["天气预报服务挂了"],
    ["电影网站打不开"],
  ])("passes an input with an operations signal, off-topic words or not: %s", (text) => {
    const r = checkScope(text);
    expect(r.outOfScope).toBe(false);
    expect(r.signals.length).toBeGreaterThan(0);
  });

  test.each([
    ["anime from https://cdn.example.com/list is blank", "URL"],
    ["anime list at 10.20.30.40 is blank", "IP address"],
    ["anime list on cdn-1.example.com:8443 is blank", "host:port"],
    ["anime-indexer.service is blank", "systemd unit"],
  ])("passes an off-topic word next to an address: %s (%s)", (text) => {
    const r = checkScope(text);
    expect(r.offTopic).toEqual(["anime"]);
    expect(r.outOfScope).toBe(false);
    expect(r.signals).toContain("(address)");
  });

  test("off-topic words need whole words: cookie and songbird are not cook and song", () => {
    expect(checkScope("cookie banner").offTopic).toEqual([]);
    expect(checkScope("songbird").offTopic).toEqual([]);
  });

  test("the playbooks' triggers and tags are operations signals too", () => {
    expect(checkScope("recommend a song about kubelet").outOfScope).toBe(true);
    const r = checkScope("recommend a song about kubelet", ["kubelet", "crashloopbackoff"]);
    expect(r.outOfScope).toBe(false);
    expect(r.signals).toEqual(["kubelet"]);
  });

  test("an input with neither off-topic words nor signals is not refused (the model decides)", () => {
    expect(checkScope("hello there")).toEqual({ outOfScope: false, offTopic: [], signals: [] });
  });
});
