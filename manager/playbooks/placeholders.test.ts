import { describe, expect, test } from "vitest";
import { extractPlaceholders, fillPlaceholders, unmetCondition } from "./placeholders.ts";

describe("fillPlaceholders", () => {
  test("a whole-string placeholder keeps its type; inside a string it becomes text; nested values are filled", () => {
    const r = fillPlaceholders({ host: "{{host}}", port: "{{port}}", url: "https://{{host}}:{{port}}/healthz", list: ["{{unit}}"], n: 3 }, { host: "db1", port: 5432, unit: "pg.service" });
    expect(r).toEqual({ args: { host: "db1", port: 5432, url: "https://db1:5432/healthz", list: ["pg.service"], n: 3 } });
  });

  test("names every missing value, sorted, instead of half-filled args", () => {
    expect(fillPlaceholders({ url: "{{url}}", a: "x {{path}} {{host}}" }, { host: "h" })).toEqual({ missing: ["path", "url"] });
    expect(fillPlaceholders({ host: "{{host}}" }, { host: "" })).toEqual({ missing: ["host"] });
  });
});

describe("extractPlaceholders", () => {
  test.each([
    ["probe https://api.internal/healthz returns 502", { url: "https://api.internal/healthz", host: "api.internal", port: 443 }],
    ["curl http://10.0.0.5:8080/metrics timed out.", { url: "http://10.0.0.5:8080/metrics", host: "10.0.0.5", port: 8080 }],
    ["[FIRING:1] TargetDown instance=db-3.prod:9100 job=node", { host: "db-3.prod", port: 9100 }],
    ["redis 连接超时 cache-1.internal 端口 6379", { host: "cache-1.internal", port: 6379 }],
    ["nginx.service keeps restarting, see /var/log/nginx/error.log", { unit: "nginx.service", path: "/var/log/nginx/error.log" }],
    ["connection refused to 192.168.1.20 port 5432", { host: "192.168.1.20", port: 5432 }],
    ["机器很卡", {}],
  ])("%s", (text, expected) => {
    expect(extractPlaceholders(text)).toEqual(expected);
  });

  test("a unit or file name is not taken for a host", () => {
    expect(extractPlaceholders("docker.service failed, config in app.yaml").host).toBeUndefined();
  });
});

describe("unmetCondition", () => {
  test("holds for a name where a name is wanted, and names the IP literal otherwise", () => {
    expect(unmetCondition({ host: "name" }, { host: "api.internal" })).toBeUndefined();
    expect(unmetCondition({ host: "name" }, { host: "127.0.0.1" })).toBe("{{host}} is the IP literal 127.0.0.1: there is no name to resolve (when: host: name)");
    expect(unmetCondition({ host: "name" }, { host: "[::1]" })).toMatch(/IP literal \[::1\]/);
    expect(unmetCondition({ host: "ip" }, { host: "db.internal" })).toBe("{{host}} is db.internal, not an IP literal (when: host: ip)");
    expect(unmetCondition({ host: "ip" }, { host: "10.0.0.2" })).toBeUndefined();
    // No value: left to fillPlaceholders, which names it missing.
    expect(unmetCondition({ host: "name" }, {})).toBeUndefined();
    expect(unmetCondition(undefined, { host: "127.0.0.1" })).toBeUndefined();
  });
});
