import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { configReference, loadConfig } from "./load.ts";

describe("loadConfig", () => {
  it("uses documented defaults with no file and no environment", () => {
    const c = loadConfig({ env: {} });
    expect(c.server).toEqual({ host: "127.0.0.1", port: 7070, tls_cert: "", tls_key: "", require_tls: false, max_request_bytes: 1048576, console_dir: "", auth_failures_per_minute: 20, auth_failure_window: "1m", manager_id: "", advertise_url: "", lease_ttl: "30s", cluster_secret: "", peer_ca: "", presence_poll: "1s", token_cache: "1s", header_timeout: "10s", request_timeout: "60s", max_concurrent_streams: 1000, max_incomplete_streams: 100, max_connections_per_address: 4096 });
    expect(c.data_dir).toBe("./data");
    expect(c.database_url).toBe("");
    expect(c.skills.web_search.url).toBe("http://127.0.0.1:8888/search");
    expect(c.skills.max_calls_per_user).toBe(256);
    expect(c.incidents).toEqual({ auto_diagnose: false, max_auto_diagnoses: 3 });
  });

  it("layers file < environment < flags", () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-cfg-"));
    const file = join(dir, "c.yaml");
    writeFileSync(file, "server:\n  port: 1111\n  host: 0.0.0.0\nlog_level: debug\n");
    const c = loadConfig({ file, env: { ONGRID_PORT: "2222" }, overrides: { "server.port": "3333" } });
    expect(c.server.port).toBe(3333);
    expect(c.server.host).toBe("0.0.0.0");
    expect(c.log_level).toBe("debug");
    expect(loadConfig({ file, env: { ONGRID_PORT: "2222" } }).server.port).toBe(2222);
  });

  it("names the key, the rule and the source of every bad value", () => {
    expect(() => loadConfig({ env: { ONGRID_LOG_LEVEL: "loud" } })).toThrow(/log_level: must be one of trace, debug, info, warn, error, fatal, silent \(rule: enum; set by ONGRID_LOG_LEVEL\)/);
    expect(() => loadConfig({ env: { ONGRID_SKILL_TIMEOUT: "soon" } })).toThrow(/skills\.default_timeout: must match format "duration" \(rule: format; set by ONGRID_SKILL_TIMEOUT\)/);
    expect(() => loadConfig({ env: { ONGRID_TLS_CERT: "/x.pem" } })).toThrow(/server\.tls_key: tls_cert and tls_key must be set together/);
    expect(loadConfig({ env: { ONGRID_REQUIRE_TLS: "yes" } }).server.require_tls).toBe(true);
    expect(() => loadConfig({ env: { ONGRID_REQUIRE_TLS: "sure" } })).toThrow(/server\.require_tls: must be true or false \(rule: type; set by ONGRID_REQUIRE_TLS, got "sure"\)/);
    expect(() => loadConfig({ env: { ONGRID_SKILL_TIMEOUT: "1h" } })).toThrow(/skills\.default_timeout: must not exceed skills\.max_timeout/);
    expect(() => loadConfig({ env: { ONGRID_SKILL_TIMEOUT: "0s" } })).toThrow(/skills\.default_timeout: must be at least 1ms \(rule: minimum\) \(set by ONGRID_SKILL_TIMEOUT\)/);
    expect(() => loadConfig({ env: { ONGRID_WEB_SEARCH_TIMEOUT: "0ms" } })).toThrow(/skills\.web_search\.timeout: must be at least 1ms/);
    expect(() => loadConfig({ env: { ONGRID_HEADER_TIMEOUT: "50ms" } })).toThrow(/server\.header_timeout: must be at least 100ms \(rule: minimum\)/);
    expect(() => loadConfig({ env: { ONGRID_HEADER_TIMEOUT: "2m" } })).toThrow(/server\.header_timeout: must not exceed server\.request_timeout/);
    expect(() => loadConfig({ env: { ONGRID_MAX_CONCURRENT_STREAMS: "0" } })).toThrow(/server\.max_concurrent_streams/);
    expect(() => loadConfig({ env: { ONGRID_MAX_INCOMPLETE_STREAMS: "0" } })).toThrow(/server\.max_incomplete_streams/);
    expect(loadConfig({ env: { ONGRID_MAX_INCOMPLETE_STREAMS: "7" } }).server.max_incomplete_streams).toBe(7);
    expect(() => loadConfig({ env: { ONGRID_TUNNEL_HELLO_TIMEOUT: "50ms" } })).toThrow(/tunnel\.hello_timeout: must be at least 100ms \(rule: minimum\) \(set by ONGRID_TUNNEL_HELLO_TIMEOUT\)/);
    expect(() => loadConfig({ env: { ONGRID_TUNNEL_HELLO_TIMEOUT: "600h" } })).toThrow(/tunnel\.hello_timeout: must be at most 1h \(rule: maximum\)/);
    expect(() => loadConfig({ env: { ONGRID_TOKEN_CACHE: "soon" } })).toThrow(/server\.token_cache/);
    expect(() => loadConfig({ env: { ONGRID_TOKEN_CACHE: "6m" } })).toThrow(/server\.token_cache: must be at most 5m \(rule: maximum\) \(set by ONGRID_TOKEN_CACHE\)/);
    expect(() => loadConfig({ env: { ONGRID_TOKEN_CACHE: "9999999999999h" } })).toThrow(/server\.token_cache: invalid duration .*too large \(rule: duration\)/);
    expect(loadConfig({ env: { ONGRID_TOKEN_CACHE: "0ms" } }).server.token_cache).toBe("0ms");
    expect(loadConfig({ env: { ONGRID_TOKEN_CACHE: "0s", ONGRID_AGENT_TOOL_LIST: "full" } })).toMatchObject({ server: { token_cache: "0s" }, agent: { tool_list: "full" } });
    expect(() => loadConfig({ env: { ONGRID_AGENT_TOOL_LIST: "some" } })).toThrow(/agent\.tool_list/);
    expect(loadConfig({ env: { ONGRID_SKILLS_MAX_CALLS_PER_USER: "2" } }).skills.max_calls_per_user).toBe(2);
    expect(() => loadConfig({ env: { ONGRID_SKILLS_MAX_CALLS_PER_USER: "0" } })).toThrow(/skills\.max_calls_per_user: must be >= 1 \(rule: minimum; set by ONGRID_SKILLS_MAX_CALLS_PER_USER\)/);
    expect(() => loadConfig({ env: { ONGRID_SKILL_MAX_TIMEOUT: "99999999999h" } })).toThrow(/skills\.max_timeout: /);
    expect(() => loadConfig({ file: "/nonexistent/ongrid.yaml", env: {} })).toThrow(/config file \/nonexistent\/ongrid\.yaml: cannot read it/);
  });

  it("refuses a send_message webhook URL that cannot be used, naming the key and the rule but never quoting the URL", () => {
    const refusal = (url: string, via: "env" | "flag" = "env"): string => {
      try {
        loadConfig(via === "env" ? { env: { ONGRID_SEND_MESSAGE_WEBHOOK_URL: url } } : { env: {}, overrides: { "skills.send_message.webhook_url": url } });
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    };
    const unparseable = refusal("https://hooks.example.invalid:99999/services/T000/B000/SECRETPATH");
    expect(unparseable).toMatch(/skills\.send_message\.webhook_url: is not a valid URL \(rule: url\) \(set by ONGRID_SEND_MESSAGE_WEBHOOK_URL\)/);
    expect(unparseable).not.toContain("SECRETPATH");
    const credentials = refusal("https://bot:SECRETPASS@hooks.example.com/services/T000/B000/SECRETPATH", "flag");
    expect(credentials).toMatch(/skills\.send_message\.webhook_url: must not carry a user or password \(user:password@\) \(rule: url_no_credentials\) \(set by command-line flag\)/);
    expect(credentials).not.toMatch(/SECRETPASS|SECRETPATH/);
    expect(refusal("https://bot@hooks.example.com/SECRETPATH")).toMatch(/webhook_url: must not carry a user or password/);
    // Not http(s): the schema's pattern refuses it first, without the value either.
    const scheme = refusal("ftp://hooks.example.com/SECRETPATH");
    expect(scheme).toMatch(/skills\.send_message\.webhook_url: must match pattern .* \(rule: pattern; set by ONGRID_SEND_MESSAGE_WEBHOOK_URL\)/);
    expect(scheme).not.toContain("SECRETPATH");
    // A usable URL (with a token in its path, as chat webhooks have), and none, load.
    expect(loadConfig({ env: { ONGRID_SEND_MESSAGE_WEBHOOK_URL: "https://hooks.example.com:8443/services/T000/B000/XXXX?x=1" } }).skills.send_message.webhook_url).toBe("https://hooks.example.com:8443/services/T000/B000/XXXX?x=1");
    expect(() => loadConfig({ env: {} })).not.toThrow();
  });

  it("reports every bad value at once, environment and file alike", () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-cfg-"));
    writeFileSync(join(dir, "c.yaml"), "server:\n  prot: 80\n");
    let message = "";
    try {
      loadConfig({ file: join(dir, "c.yaml"), env: { ONGRID_PORT: "seventy", ONGRID_OUTPUT_CAP_BYTES: "lots" } });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/server\.port: must be integer \(rule: type; set by ONGRID_PORT, got "seventy"\)/);
    expect(message).toMatch(/skills\.output_cap_bytes: must be integer \(rule: type; set by ONGRID_OUTPUT_CAP_BYTES, got "lots"\)/);
    expect(message).toMatch(/server\.prot: is not a known key \(rule: additionalProperties; set by file .*c\.yaml\)/);
  });

  it("reads mcp.upstreams from the file, with defaults, and names each bad entry's field and rule without quoting a value", () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-cfg-"));
    const good = join(dir, "good.yaml");
    writeFileSync(good, 'mcp:\n  upstreams:\n    - name: everything\n      command: ["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"]\n      env: { API_TOKEN: { credential: ev_token } }\n    - { name: tickets, url: "https://mcp.example/mcp", headers: { X-Team: sre, X-Key: { credential: t_key, prefix: "Key " } }, trust_annotations: true, classes: { close-ticket: dangerous }, timeout: 20s }\n');
    expect(loadConfig({ file: good, env: {} }).mcp.upstreams).toEqual([
      { name: "everything", command: ["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"], env: { API_TOKEN: { credential: "ev_token" } }, trust_annotations: false, enabled: true },
      { name: "tickets", url: "https://mcp.example/mcp", headers: { "X-Team": "sre", "X-Key": { credential: "t_key", prefix: "Key " } }, trust_annotations: true, classes: { "close-ticket": "dangerous" }, timeout: "20s", enabled: true },
    ]);
    expect(loadConfig({ env: {} }).mcp.upstreams).toEqual([]);
    const refusal = (yaml: string): string => {
      const file = join(dir, "bad.yaml");
      writeFileSync(file, yaml);
      try {
        loadConfig({ file, env: {} });
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    };
    const shape = refusal('mcp:\n  upstreams:\n    - { name: ok, command: [a] }\n    - { name: Bad-Name, command: [], comand: x, headers: { X-Key: { credential: k, extra: "s3cr3t-HDR" } }, classes: { echo: risky } }\n');
    expect(shape).toMatch(/mcp\.upstreams\[1\]\.command: must be a non-empty array of strings \(rule: minItems; set by file .*bad\.yaml\)/);
    expect(shape).toMatch(/mcp\.upstreams\[1\]\.name: must be lower_snake/);
    expect(shape).toMatch(/mcp\.upstreams\[1\]\.comand: is not a known key \(rule: additionalProperties/);
    expect(shape).toMatch(/mcp\.upstreams\[1\]\.headers\.X-Key: must be a string or \{credential: "<credential name>", prefix\?: "<text>"\}/);
    expect(shape).toMatch(/mcp\.upstreams\[1\]\.classes\.echo: must be safe, mutating or dangerous \(rule: enum/);
    expect(shape).not.toContain("s3cr3t");
    expect(shape).not.toMatch(/upstreams\[0\]/);
    const rules = refusal('mcp:\n  upstreams:\n    - { name: web, url: "https://bot:s3cr3t-PW@h.example/mcp", env: { A: b }, credential: tok, headers: { authorization: "Bearer s3cr3t-HDR" } }\n    - { name: web, command: [a], url: "http://h" }\n    - { name: none }\n    - { name: ends_, command: [a] }\n');
    expect(rules).toMatch(/mcp\.upstreams\[0\]\.url: must not carry a user or password \(user:password@\) \(rule: url_no_credentials\)/);
    expect(rules).toMatch(/mcp\.upstreams\[0\]\.env: applies to a stdio server \(command\)/);
    expect(rules).toMatch(/mcp\.upstreams\[0\]\.credential: sends the Authorization header, which headers\.authorization sets too; keep one \(rule: conflict\)/);
    expect(rules).toMatch(/mcp\.upstreams\[1\]\.name: "web" is already the name of mcp\.upstreams\[0\] \(rule: unique\)/);
    expect(rules).toMatch(/mcp\.upstreams\[1\]: has both command .* and url .* \(rule: transport\)/);
    expect(rules).toMatch(/mcp\.upstreams\[2\]: needs command \(a stdio server\) or url \(a streamable HTTP server\) \(rule: transport\)/);
    expect(rules).toMatch(/mcp\.upstreams\[3\]\.name: must not end with '_' or hold '__': it becomes part of skill keys/);
    expect(rules).not.toContain("s3cr3t");
  });

  it("refuses a file that is not a mapping or not YAML", () => {
    const dir = mkdtempSync(join(tmpdir(), "ongrid-cfg-"));
    writeFileSync(join(dir, "a.yaml"), "- 1\n- 2\n");
    writeFileSync(join(dir, "b.yaml"), "server: [\n");
    expect(() => loadConfig({ file: join(dir, "a.yaml"), env: {} })).toThrow(/must be a mapping/);
    expect(() => loadConfig({ file: join(dir, "b.yaml"), env: {} })).toThrow(/not valid YAML/);
  });

  it("is documented key for key in docs/config.md", () => {
    const doc = readFileSync(resolve(import.meta.dirname, "../../docs/config.md"), "utf8");
    const rows = doc.split("\n").filter((l) => /^\| `[a-z_.]+` \|/.test(l));
    expect(rows.map((l) => l.split("`")[1])).toEqual(configReference().map((r) => r.key));
    for (const r of configReference()) {
      const row = rows.find((l) => l.startsWith(`| \`${r.key}\` |`));
      expect(row, `docs/config.md lacks ${r.key}`).toBeDefined();
      const shown = typeof r.default === "string" ? (r.default === "" ? '""' : r.default) : JSON.stringify(r.default);
      expect(row).toBe(`| \`${r.key}\` | \`${shown}\` | \`${r.env}\` | ${r.description} |`);
    }
  });
});

describe("manager identity keys", () => {
  it("refuses a manager id, advertise URL or lease outside their rules, naming the key", () => {
    const err = (overrides: Record<string, unknown>) => {
      try {
        loadConfig({ env: {}, overrides });
        return "";
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(err({ "server.manager_id": "Manager A" })).toContain("server.manager_id");
    expect(err({ "server.advertise_url": "ftp://x" })).toContain("server.advertise_url");
    expect(err({ "server.lease_ttl": "1s" })).toContain("server.lease_ttl: must be at least 3s (rule: minimum)");
    expect(err({ "server.presence_poll": "10ms" })).toContain("server.presence_poll: must be at least 100ms (rule: minimum)");
    expect(err({ "server.cluster_secret": "short" })).toContain("server.cluster_secret");
    expect(err({ "server.cluster_secret": "x".repeat(40) })).toBe("");
    expect(err({ "server.lease_ttl": "1h" })).toContain("server.lease_ttl: must be at most 10m (rule: maximum)");
    expect(err({ "server.manager_id": "mgr-a.eu", "server.lease_ttl": "10s" })).toBe("");
  });
});
