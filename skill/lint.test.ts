import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { formatFindings, lintRegistry, lintSkill, type LintFinding } from "./lint.ts";
import { isSecretName } from "./redact.ts";
import { createRegistry } from "./registry.ts";
import type { SkillDefinition } from "./types.ts";

const good: SkillDefinition = {
  key: "web_search",
  name: "Web search",
  description: "Search the public web through the configured SearXNG. Use when you need vendor documentation or known issues.",
  class: "safe",
  scope: "manager",
  category: "search",
  params: {
    query: { type: "string", description: "What to search for", required: true },
    limit: { type: "integer", description: "Maximum results", default: 5, min: 1, max: 20 },
    page_token: { type: "string", description: "Cursor from a previous page" },
  },
  resultPreview: '{"results":[{"title":"nginx 502","url":"https://…","snippet":"…"}]}',
  execute: async () => ({ results: [] }),
};

const rules = (findings: LintFinding[], severity?: "error" | "warning") =>
  findings.filter((f) => !severity || f.severity === severity).map((f) => f.rule).sort();

describe("lintSkill", () => {
  it("finds nothing wrong with a well-declared skill", () => {
    expect(lintSkill(good)).toEqual([]);
  });

  it("reports every checklist violation of a bad skill", () => {
    const bad = {
      key: "run",
      name: "Run",
      description: "Runs things.",
      scope: "manager",
      params: {
        command: { type: "string", description: "Shell command" },
        url: { type: "string", description: "Any URL" },
        file_path: { type: "string", description: "" },
        api_key: { type: "string", description: "Key for the API" },
        a: { type: "string", description: "a" },
        b: { type: "string", description: "b" },
        c: { type: "string", description: "c" },
      },
      resultPreview: "done!",
      execute: async () => "ok",
    } as SkillDefinition;
    const findings = lintSkill(bad);
    expect(findings.every((f) => f.key === "run")).toBe(true);
    expect(rules(findings, "error")).toEqual(
      [
        "class-explicit",
        "description-usage",
        "params-minimal", // file_path has no description
        "structured-output",
        "key-format",
        "no-backend-shell",
        "no-arbitrary-http",
        "no-arbitrary-file",
        "no-plaintext-credentials",
      ].sort(),
    );
    expect(rules(findings, "warning")).toEqual(["params-minimal"]); // 7 params
    expect(findings.find((f) => f.rule === "no-backend-shell")?.message).toContain('param "command"');
  });

  it.each([
    ["Search the web for documents and pages with a query string.", true],
    ["Search the web. Use when you need documentation about a vendor product.", false],
    ["Tail a log file. Use to see the most recent errors of a service quickly.", false],
    ["Lists sockets with their owning processes, for diagnosing port conflicts.", false],
    ["Checks disk usage; call it before restarting anything that writes logs.", false],
    ["Short; use when.", true],
  ])("description %j → error: %s", (description, isError) => {
    const found = lintSkill({ ...good, description }).some((f) => f.rule === "description-usage");
    expect(found).toBe(isError);
  });

  it.each([
    ["probe_http", false],
    ["host_processes", false],
    ["kubernetes_get", false],
    ["exec", true],
    ["do_it", true],
    ["my_tool", true],
    ["run_command", true],
    ["Probe_Http", true],
  ])("key %s → error: %s", (key, isError) => {
    expect(lintSkill({ ...good, key }).some((f) => f.rule === "key-format")).toBe(isError);
  });

  it("requires dynamic risk or class dangerous for a host skill that takes a command", () => {
    const exec: SkillDefinition = { ...good, key: "host_exec", scope: "host", class: "mutating", params: { command: { type: "string", description: "Command", required: true } } };
    expect(rules(lintSkill(exec))).toEqual(["command-needs-risk"]);
    expect(lintSkill({ ...exec, riskForArgs: () => "safe" })).toEqual([]);
    expect(lintSkill({ ...exec, class: "dangerous" })).toEqual([]);
  });

  it("reads param names and descriptions from a raw schema", () => {
    const raw: SkillDefinition = {
      ...good,
      params: undefined,
      rawSchema: '{"type":"object","properties":{"endpoint":{"type":"string"},"targets":{"type":"array","description":"Hosts"}}}',
    };
    expect(rules(lintSkill(raw))).toEqual(["no-arbitrary-http", "params-minimal"]);
  });

  it("sees a defaulted class on a registered skill", () => {
    const { class: _c, ...noClass } = good;
    const skill = createRegistry({ log: silentLog() }).register(noClass as SkillDefinition);
    expect(rules(lintSkill(skill))).toEqual(["class-explicit"]);
    const explicit = createRegistry().register(good);
    expect(lintSkill(explicit)).toEqual([]);
  });

  it.each(["password", "db_password", "passwd", "pwd", "token", "accessToken", "secret", "client_secret", "api_key", "apiKey", "access_key", "secret_key", "private_key", "authorization", "cookie", "credentials", "account_key"])(
    "flags a %s param as a plaintext credential",
    (name) => {
      const findings = lintSkill({ ...good, params: { [name]: { type: "string", description: "x" } } });
      expect(rules(findings)).toEqual(["no-plaintext-credentials"]);
    },
  );

  it.each(["page_token", "next_token", "nextPageToken", "continuation_token", "sync_token", "resume_token", "max_tokens", "token_count", "secret_name", "PWD", "key"])(
    "does not flag a %s param",
    (name) => {
      expect(lintSkill({ ...good, params: { [name]: { type: "string", description: "x" } } })).toEqual([]);
    },
  );

  it("uses the same notion of a secret name as redaction", () => {
    const names = ["password", "mysql_pwd", "x-api-key", "AccessKey", "Authorization", "set-cookie", "credential", "AccountKey", "page_token", "syncToken", "tokens_used", "OLDPWD", "user", "query"];
    for (const name of names) {
      const flagged = lintSkill({ ...good, params: { [name]: { type: "string", description: "x" } } }).some((f) => f.rule === "no-plaintext-credentials");
      expect([name, flagged]).toEqual([name, isSecretName(name)]);
    }
  });

  it("warns about a scalar result preview", () => {
    expect(lintSkill({ ...good, resultPreview: '"ok"' }).map((f) => [f.rule, f.severity])).toEqual([["structured-output", "warning"]]);
  });
});

describe("lintRegistry and formatFindings", () => {
  it("lints many skills, flags duplicate keys and sorts by key with errors first", () => {
    const findings = lintRegistry([
      { ...good, key: "zz_top", resultPreview: undefined, params: { a: { type: "string", description: "a" }, b: { type: "string", description: "b" }, c: { type: "string", description: "c" }, d: { type: "string", description: "d" }, e: { type: "string", description: "e" }, f: { type: "string", description: "f" }, g: { type: "string", description: "g" } } },
      good,
      good,
    ]);
    expect(findings.map((f) => [f.key, f.severity, f.rule])).toEqual([
      ["web_search", "error", "key-format"],
      ["zz_top", "error", "structured-output"],
      ["zz_top", "warning", "params-minimal"],
    ]);
    expect(formatFindings(findings)).toBe(
      [
        'error   web_search: key "web_search" is declared more than once [key-format]',
        "error   zz_top: resultPreview is missing; give a short JSON example of a successful output [structured-output]",
        "warning zz_top: 7 params (more than 6); keep only what the model must choose, move the rest to settings [params-minimal]",
        "2 errors, 1 warning",
      ].join("\n"),
    );
    expect(formatFindings([])).toBe("0 errors, 0 warnings");
  });
});

function silentLog() {
  return pino({}, { write: () => {} });
}

describe("lint waivers", () => {
  const base = {
    key: "exec",
    name: "Exec",
    description: "Run one shell command on the host. Use when no dedicated skill answers the question.",
    class: "dangerous" as const,
    scope: "host" as const,
    params: { command: { type: "string" as const, description: "The command line." } },
    resultPreview: '{"exit_code":0}',
  };
  it("reports a waived error as a warning carrying the reason, and only for the waived rule", () => {
    const plain = lintSkill(base).filter((f) => f.rule === "key-format");
    expect(plain.map((f) => f.severity)).toEqual(["error"]);
    const waived = lintSkill({ ...base, lintWaivers: { "key-format": "the key is fixed by SPEC D5" } }).filter((f) => f.rule === "key-format");
    expect(waived).toHaveLength(1);
    expect(waived[0].severity).toBe("warning");
    expect(waived[0].message).toMatch(/\(waived: the key is fixed by SPEC D5\)$/);
    const other = lintSkill({ ...base, description: "short", lintWaivers: { "key-format": "x" } }).filter((f) => f.rule === "description-usage");
    expect(other[0].severity).toBe("error");
  });
});
