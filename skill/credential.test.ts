import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ParamType } from "../proto/gen/ongrid/v1/skill_pb.ts";
import { CREDENTIAL_NAME_PATTERN, CREDENTIAL_PARAM_NOTE, credentialParams, scrubSecrets, withCredentialValues } from "./credential.ts";
import { OngridError } from "./errors.ts";
import { redact, redactString } from "./redact.ts";
import { lintSkill } from "./lint.ts";
import { MANIFEST_FILE, readManifest, toMetadata } from "./pack/manifest.ts";
import { metadataToProto, paramTypeFromProto, paramTypeToProto } from "./proto.ts";
import { buildSkill } from "./registry.ts";
import { paramsToJsonSchema } from "./schema.ts";
import type { ParamSchema, ParamType as PT } from "./types.ts";
import { validateParams } from "./validate.ts";

const base = {
  key: "metrics_query",
  name: "Query metrics",
  description: "Runs a PromQL query against a Prometheus server. Use when you need a metric's current value.",
  class: "safe" as const,
  scope: "host" as const,
  resultPreview: '{"value": 1}',
  execute: async () => ({}),
};

function skillWith(params: ParamSchema) {
  return buildSkill({ ...base, params });
}

describe('param type "credential"', () => {
  it("becomes a plain string schema with the name rule and a note in the description", () => {
    const schema = paramsToJsonSchema(
      {
        token: { type: "credential", description: "Prometheus API token", required: true },
        fallback: { type: "credential", description: "", default: "prom.readonly" },
      },
      "metrics_query",
    );
    expect(schema).toEqual({
      type: "object",
      properties: {
        token: { type: "string", pattern: CREDENTIAL_NAME_PATTERN, description: `Prometheus API token ${CREDENTIAL_PARAM_NOTE}` },
        fallback: { type: "string", pattern: CREDENTIAL_NAME_PATTERN, description: expect.stringMatching(/^the name of a stored credential; its value is injected when the call runs$/), default: "prom.readonly" },
      },
      required: ["token"],
      additionalProperties: false,
    });
    expect(CREDENTIAL_PARAM_NOTE).toBe("(the name of a stored credential; its value is injected when the call runs)");
    expect(CREDENTIAL_PARAM_NOTE).not.toContain("x-");
  });

  const refusals: [string, ParamSchema, RegExp][] = [
    ["min", { token: { type: "credential", description: "t", min: 1 } }, /min does not apply to credential/],
    ["max", { token: { type: "credential", description: "t", max: 9 } }, /max does not apply to credential/],
    ["pattern", { token: { type: "credential", description: "t", pattern: "^a" } }, /pattern only applies to string and string_list params, not credential/],
    ["values", { token: { type: "credential", description: "t", values: ["a"] } }, /"values" only applies to enum params, not credential/],
    ["a default that is not a name", { token: { type: "credential", description: "t", default: "Not A Name" } }, /default "Not A Name" does not satisfy/],
  ];
  it.each(refusals)("refuses %s on a credential param", (_label, params, message) => {
    let caught: unknown;
    try {
      paramsToJsonSchema(params, "demo_skill");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(OngridError);
    expect((caught as OngridError).message).toMatch(message);
  });

  it("compiles under Ajv's strict mode and validation accepts names, refuses anything else", () => {
    const skill = skillWith({ token: { type: "credential", description: "API token", required: true } });
    for (const name of ["prom", "prom.token", "a-b_c.d9", "x".repeat(64)]) {
      expect(validateParams(skill, { token: name })).toEqual({ token: name });
    }
    for (const bad of ["Prom", "1prom", "user:password", "prom token", "", "x".repeat(65), "eyJhbGciOiJIUzI1NiJ9.e30.abc"]) {
      expect(() => validateParams(skill, { token: bad })).toThrow(/param "token": must match pattern/);
    }
    expect(() => validateParams(skill, { token: 42 })).toThrow(/param "token": must be string/);
  });

  it("maps to PARAM_TYPE_CREDENTIAL and back; every type round-trips through the proto", () => {
    const skill = skillWith({ token: { type: "credential", description: "API token" }, limit: { type: "integer", description: "Max" } });
    const meta = metadataToProto(skill);
    const field = meta.params!.fields.find((f) => f.name === "token")!;
    expect(field.type).toBe(ParamType.CREDENTIAL);
    expect(field.type).toBe(8);
    expect(paramTypeFromProto(field.type)).toBe("credential");
    expect(JSON.parse(meta.jsonSchema).properties.token.pattern).toBe(CREDENTIAL_NAME_PATTERN);
    const all: PT[] = ["string", "integer", "number", "boolean", "enum", "duration", "string_list", "credential"];
    for (const t of all) expect(paramTypeFromProto(paramTypeToProto(t))).toBe(t);
    expect(paramTypeFromProto(ParamType.UNSPECIFIED)).toBeUndefined();
  });

  it("credentialParams names the declared credential params; none for raw-schema skills", () => {
    expect(credentialParams(skillWith({ url: { type: "string", description: "u" }, token: { type: "credential", description: "t" }, basic: { type: "credential", description: "b" } }))).toEqual(["token", "basic"]);
    expect(credentialParams(skillWith({ url: { type: "string", description: "u" } }))).toEqual([]);
    const raw = buildSkill({ ...base, rawSchema: JSON.stringify({ type: "object", properties: { token: { type: "string", description: "t" } } }) });
    expect(credentialParams(raw)).toEqual([]);
  });

  it("withCredentialValues validates injected values where the skill itself validates names", () => {
    const skill = skillWith({ token: { type: "credential", description: "API token", required: true }, q: { type: "string", description: "q", max: 5 } });
    const view = withCredentialValues(skill);
    expect(withCredentialValues(skill)).toBe(view);
    expect(validateParams(view, { token: "user:p@ss word", q: "up" })).toEqual({ token: "user:p@ss word", q: "up" });
    expect(() => validateParams(view, { token: "" })).toThrow(/param "token"/);
    expect(() => validateParams(view, { token: "x", q: "too long" })).toThrow(/param "q"/);
    expect(() => validateParams(skill, { token: "user:p@ss word" })).toThrow(/must match pattern/);
    const plain = skillWith({ q: { type: "string", description: "q" } });
    expect(withCredentialValues(plain)).toBe(plain);
  });

  it("lint accepts a credential-typed param with a secret-like name but still refuses a plain one", () => {
    const ok = lintSkill(skillWith({ credential: { type: "credential", description: "Token for the API" }, api_token: { type: "credential", description: "Another" } }));
    expect(ok.filter((f) => f.rule === "no-plaintext-credentials")).toEqual([]);
    const bad = lintSkill(skillWith({ api_token: { type: "string", description: "Token for the API" } }));
    expect(bad.filter((f) => f.rule === "no-plaintext-credentials")).toEqual([
      expect.objectContaining({ severity: "error", message: expect.stringContaining('type "credential"') }),
    ]);
  });
});

describe("skill packs", () => {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), "ongrid-cred-pack-")));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("may declare credential params in skill.json", () => {
    writeFileSync(path.join(root, "run.sh"), "#!/bin/sh\necho '{}'\n", { mode: 0o755 });
    writeFileSync(
      path.join(root, MANIFEST_FILE),
      JSON.stringify({
        key: base.key,
        name: base.name,
        description: base.description,
        class: "safe",
        executable: "run.sh",
        result_preview: base.resultPreview,
        params: { token: { type: "credential", description: "API token", required: true } },
      }),
    );
    const r = readManifest(root, "host");
    expect(r.problems).toEqual([]);
    const skill = buildSkill({ ...toMetadata(r.skills[0]!), execute: async () => ({}) });
    expect(credentialParams(skill)).toEqual(["token"]);
    expect((skill.jsonSchema.properties as Record<string, { pattern: string }>).token.pattern).toBe(CREDENTIAL_NAME_PATTERN);
  });
});

describe("scrubSecrets (skill framework copy, used by edges)", () => {
  it("hides the value, its base64 and URL-encoded spellings", () => {
    const v = "user:p@ss/word";
    const out = scrubSecrets({ a: `Basic ${Buffer.from(v).toString("base64")}`, b: `x=${encodeURIComponent(v)}`, c: [v] }, [{ name: "svc", value: v }]);
    expect(out).toEqual({ a: "Basic [credential:svc]", b: "x=[credential:svc]", c: ["[credential:svc]"] });
  });
});

describe("redaction of scrubbed text", () => {
  it('keeps the "[credential:<name>]" marker readable but still hides a real "credential: value"', () => {
    const scrubbed = scrubSecrets({ msg: "login with Bearer tok-123456 failed" }, [{ name: "prom.token", value: "tok-123456" }]);
    expect(redact(scrubbed)).toEqual({ msg: "login with Bearer [credential:prom.token] failed" });
    expect(redactString("credential: hunter2")).toBe("credential: [REDACTED]");
    expect(redactString("[credential:Hunter2]")).not.toContain("Hunter2");
    expect(redactString("[credential: hunter2]")).not.toContain("hunter2");
  });
});
