import { describe, expect, it } from "vitest";
import { OngridError } from "../../../skill/errors.ts";
import { buildSkill } from "../../../skill/registry.ts";
import type { ParamSchema } from "../../../skill/types.ts";
import { injectCredentials, scrubSecrets } from "./inject.ts";

function skillWith(params: ParamSchema) {
  return buildSkill({
    key: "metrics_query",
    name: "Query metrics",
    description: "Runs a PromQL query. Use when you need a metric's value.",
    class: "safe",
    scope: "host",
    resultPreview: "{}",
    params,
    execute: async () => ({}),
  });
}

function fakeStore(values: Record<string, string>) {
  const calls: string[] = [];
  return {
    calls,
    async resolve(name: string) {
      calls.push(name);
      const v = values[name];
      if (v === undefined) throw new OngridError("not_found", `credential "${name}" does not exist`);
      return v;
    },
  };
}

describe("injectCredentials", () => {
  const skill = skillWith({
    query: { type: "string", description: "q" },
    token: { type: "credential", description: "t" },
    backup: { type: "credential", description: "b" },
    other: { type: "credential", description: "o" },
  });

  it("returns a copy with each credential name replaced by its value, and the secrets used", async () => {
    const store = fakeStore({ "prom.token": "s3cret-token", "basic.user": "u:pw" });
    const params = { query: "up", token: "prom.token", backup: "basic.user" };
    const r = await injectCredentials(skill, params, store);
    expect(r.params).toEqual({ query: "up", token: "s3cret-token", backup: "u:pw" });
    expect(params).toEqual({ query: "up", token: "prom.token", backup: "basic.user" });
    expect(r.params).not.toBe(params);
    expect(r.secrets).toEqual([
      { name: "prom.token", value: "s3cret-token" },
      { name: "basic.user", value: "u:pw" },
    ]);
    expect(r.params).not.toHaveProperty("other");
  });

  it("resolves a credential named twice once; leaves absent params alone; does nothing without credential params", async () => {
    const store = fakeStore({ shared: "vvvv" });
    const r = await injectCredentials(skill, { token: "shared", backup: "shared", other: undefined }, store);
    expect(r.params).toEqual({ token: "vvvv", backup: "vvvv", other: undefined });
    expect(store.calls).toEqual(["shared"]);
    expect(r.secrets).toEqual([{ name: "shared", value: "vvvv" }]);

    const plain = skillWith({ token: { type: "string", description: "not a credential" } });
    const none = await injectCredentials(plain, { token: "shared" }, store);
    expect(none).toEqual({ params: { token: "shared" }, secrets: [] });
    expect(store.calls).toEqual(["shared"]);
  });

  it("fails like the store for an unknown name, and refuses a non-string name", async () => {
    await expect(injectCredentials(skill, { token: "missing" }, fakeStore({}))).rejects.toMatchObject({ code: "not_found", message: 'credential "missing" does not exist' });
    await expect(injectCredentials(skill, { token: 7 }, fakeStore({}))).rejects.toMatchObject({ code: "invalid_argument" });
  });
});

describe("scrubSecrets", () => {
  const secrets = [
    { name: "prom.token", value: "s3cret-token" },
    { name: "pin", value: "123" },
  ];

  it("replaces every occurrence inside strings and object keys, deep, in a copy", () => {
    const input = {
      msg: "auth with s3cret-token failed; retry s3cret-token",
      nested: { list: ["ok", "Bearer s3cret-token"], n: 1, b: true, nil: null },
      "s3cret-token": "as a key",
      when: new Date(0),
    };
    const out = scrubSecrets(input, secrets);
    expect(out).toEqual({
      msg: "auth with [credential:prom.token] failed; retry [credential:prom.token]",
      nested: { list: ["ok", "Bearer [credential:prom.token]"], n: 1, b: true, nil: null },
      "[credential:prom.token]": "as a key",
      when: new Date(0),
    });
    expect(input.msg).toContain("s3cret-token");
    expect(out.nested).not.toBe(input.nested);
    expect(JSON.stringify(out)).not.toContain("s3cret");
  });

  it("replaces short secrets only where a whole string equals them", () => {
    expect(scrubSecrets({ a: "123", b: "port 1234", c: ["123"], "123": 1 }, secrets)).toEqual({ a: "[credential:pin]", b: "port 1234", c: ["[credential:pin]"], "[credential:pin]": 1 });
  });

  it("also hides the base64 and URL-encoded spellings, and the longest secret first", () => {
    const out = scrubSecrets(
      [`Basic ${Buffer.from("user:p@ss").toString("base64")}`, "https://x/?t=user%3Ap%40ss", "user:p@ss-extended"],
      [
        { name: "short", value: "user:p@ss" },
        { name: "long", value: "user:p@ss-extended" },
      ],
    );
    expect(out).toEqual(["Basic [credential:short]", "https://x/?t=[credential:short]", "[credential:long]"]);
  });

  it("copies odd shapes safely: cycles, errors, buffers, __proto__ keys; no secrets is a plain copy", () => {
    const cyclic: Record<string, unknown> = { v: "s3cret-token" };
    cyclic.self = cyclic;
    expect(scrubSecrets(cyclic, secrets)).toEqual({ v: "[credential:prom.token]", self: "[Circular]" });
    expect(scrubSecrets(new Error("bad s3cret-token"), secrets)).toEqual({ name: "Error", message: "bad [credential:prom.token]" });
    const buf = Buffer.from("x");
    expect(scrubSecrets({ buf }, secrets).buf).toBe(buf);
    const proto = scrubSecrets(JSON.parse('{"__proto__": {"polluted": "s3cret-token"}}'), secrets) as Record<string, unknown>;
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(proto, "__proto__")?.value).toEqual({ polluted: "[credential:prom.token]" });
    const plain = { a: ["s3cret-token"] };
    const copy = scrubSecrets(plain, []);
    expect(copy).toEqual(plain);
    expect(copy.a).not.toBe(plain.a);
    expect(scrubSecrets("s3cret-token", secrets)).toBe("[credential:prom.token]");
    expect(scrubSecrets(42, secrets)).toBe(42);
    expect(scrubSecrets(undefined, secrets)).toBeUndefined();
  });
});
