import http from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { startScriptedModel, type Responder, type ScriptedModel } from "../../test/support/openai-server.ts";
import { createModelClient, ModelError, type ChatMessage, type ChatRequest, type ModelSettings, type StructuredRequest } from "./llm.ts";

const SCHEMA = {
  type: "object",
  properties: {
    verdict: { type: "string", enum: ["ok", "degraded", "down"] },
    confidence: { type: "number", minimum: 0, maximum: 1 },
  },
  required: ["verdict", "confidence"],
  additionalProperties: false,
};
const USER_TEXT = "disk on web-3 is 97% full, is the host healthy?";
const REQ: StructuredRequest = {
  messages: [
    { role: "system", content: "You triage host health." },
    { role: "user", content: USER_TEXT },
  ],
  schemaName: "triage",
  schema: SCHEMA,
};
const KEY = "sk-test-0123456789abcdef";

let model: ScriptedModel;
let lines: string[];
let tmp: string;

function logger() {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      cb();
    },
  });
  return pino({ level: "debug" }, sink);
}

function settings(over: Partial<ModelSettings> = {}): ModelSettings {
  return { base_url: model.url, api_key: "", api_key_file: "", model: "test-model", timeout: "10s", max_retries: 0, structured_output: "auto", ...over };
}

function client(over: Partial<ModelSettings> = {}) {
  const c = createModelClient(settings(over), logger());
  if (!c) throw new Error("expected a client");
  return c;
}

async function failure(p: Promise<unknown>): Promise<ModelError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ModelError);
  return err as ModelError;
}

async function start(...script: Responder[]) {
  model = await startScriptedModel(script);
}

beforeEach(() => {
  lines = [];
  tmp = mkdtempSync(join(tmpdir(), "ongrid-llm-"));
});
afterEach(async () => {
  await model?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const systemTexts = (i: number): string[] => model.requests[i].body.messages.filter((m: { role: string }) => m.role === "system").map((m: { content: string }) => m.content);

describe("createModelClient", () => {
  it("returns undefined when base_url or model is empty", async () => {
    await start();
    expect(createModelClient(settings({ base_url: "" }), logger())).toBeUndefined();
    expect(createModelClient(settings({ model: " " }), logger())).toBeUndefined();
    expect(createModelClient(settings(), logger())).toBeDefined();
  });

  it("refuses an unreadable key file, naming model.api_key_file", async () => {
    await start();
    const missing = join(tmp, "nope.key");
    let err: unknown;
    try {
      createModelClient(settings({ api_key_file: missing }), logger());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OngridError);
    expect(err).toMatchObject({ code: "invalid_argument" });
    expect((err as Error).message).toContain("model.api_key_file");
    expect((err as Error).message).toContain("ENOENT");
  });

  it("refuses a bad timeout, naming model.timeout", async () => {
    await start();
    expect(() => createModelClient(settings({ timeout: "soon" }), logger())).toThrow(/model\.timeout/);
  });
});

describe("structured", () => {
  it("asks for json_schema and returns the validated value with usage", async () => {
    await start({ json: { verdict: "degraded", confidence: 0.8 } });
    const r = await client().structured<{ verdict: string; confidence: number }>(REQ);
    expect(r.value).toEqual({ verdict: "degraded", confidence: 0.8 });
    expect(r.mode).toBe("json_schema");
    expect(r.model).toBe("test-model");
    const promptChars = REQ.messages.reduce((n, m) => n + m.content.length, 0);
    const completionChars = JSON.stringify(r.value).length;
    expect(r.usage).toEqual({
      promptTokens: Math.ceil(promptChars / 4),
      completionTokens: Math.ceil(completionChars / 4),
      totalTokens: Math.ceil(promptChars / 4) + Math.ceil(completionChars / 4),
    });
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(model.requests).toHaveLength(1);
    const body = model.requests[0].body;
    expect(body.model).toBe("test-model");
    expect(body.messages).toEqual(REQ.messages);
    expect(body.response_format).toEqual({ type: "json_schema", json_schema: { name: "triage", schema: SCHEMA, strict: true } });
    expect(model.requests[0].headers.authorization).toBe("Bearer none");
  });

  it("in auto mode falls back to json_object when json_schema is refused, and stays there", async () => {
    await start(
      { status: 400, error: { message: "response_format json_schema not supported", type: "invalid_request_error", code: null } },
      { json: { verdict: "ok", confidence: 0.9 } },
      { json: { verdict: "down", confidence: 0.3 } },
    );
    const c = client();
    const first = await c.structured(REQ);
    expect(first).toMatchObject({ value: { verdict: "ok", confidence: 0.9 }, mode: "json_object" });
    expect(model.requests).toHaveLength(2);
    expect(model.requests[0].body.response_format.type).toBe("json_schema");
    expect(model.requests[1].body.response_format).toEqual({ type: "json_object" });
    const schemaLine = `Answer with one JSON object that matches this JSON Schema: ${JSON.stringify(SCHEMA)}`;
    expect(systemTexts(1)).toContain(schemaLine);
    // The instruction follows the caller's system message and precedes the conversation.
    expect(model.requests[1].body.messages.map((m: { role: string }) => m.role)).toEqual(["system", "system", "user"]);

    const third = await c.structured(REQ);
    expect(third).toMatchObject({ value: { verdict: "down" }, mode: "json_object" });
    expect(model.requests).toHaveLength(3);
    expect(model.requests[2].body.response_format).toEqual({ type: "json_object" });
    expect(systemTexts(2)).toContain(schemaLine);

    const info = lines.map((l) => JSON.parse(l)).filter((l) => l.level >= 30);
    expect(info.filter((l) => /json_object/.test(l.msg))).toHaveLength(1);
  });

  it.each([
    ["OpenAI, model without structured outputs", { status: 400, error: { message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", type: "invalid_request_error", param: "response_format", code: null } }],
    ["vLLM < 0.6 (top-level error object)", { status: 400, body: { object: "error", message: "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}]", type: "BadRequestError", param: null, code: 400 } }],
    ["llama.cpp / ik_llama.cpp (HTTP 500)", { status: 500, error: { message: 'response_format type must be one of "text" or "json_object", but got: json_schema', type: "server_error", code: 500 } }],
    ["DeepSeek / TGI (422 plain text)", { status: 422, body: "Failed to deserialize the JSON body into the target type: response_format: response_format.type `json_schema` is unavailable now at line 32 column 1" }],
    ["501 Not Implemented", { status: 501, error: { message: "not implemented", type: "server_error" } }],
  ] as const)("recognises a refusal of json_schema from %s", async (_name, refusal) => {
    await start(refusal as Responder, { json: { verdict: "ok", confidence: 1 } });
    // max_retries 2: a refusal that only says json_schema is unsupported must not be retried as is.
    const r = await client({ max_retries: 2 }).structured(REQ);
    expect(r.mode).toBe("json_object");
    expect(model.requests.map((q) => q.body.response_format.type)).toEqual(["json_schema", "json_object"]);
  });

  it("does not fall back on a 400 unrelated to response_format", async () => {
    await start({ status: 400, error: { message: "This model's maximum context length is 8192 tokens", type: "invalid_request_error" } }, { json: { verdict: "ok", confidence: 1 } });
    const err = await failure(client().structured(REQ));
    expect(err).toMatchObject({ failure: "http_error", status: 400 });
    expect(err.message).toContain("maximum context length");
    expect(model.requests).toHaveLength(1);
  });

  it("does not fall back when structured_output is json_schema", async () => {
    await start({ status: 400, error: { message: "response_format json_schema not supported" } });
    const err = await failure(client({ structured_output: "json_schema" }).structured(REQ));
    expect(err).toMatchObject({ failure: "http_error", status: 400 });
    expect(model.requests).toHaveLength(1);
  });

  it("json_object mode goes straight to json_object and still validates against the schema", async () => {
    await start({ json: { verdict: "ok", confidence: 0.5 } }, { json: { verdict: "ok", confidence: 5 } });
    const c = client({ structured_output: "json_object" });
    const r = await c.structured(REQ);
    expect(r).toMatchObject({ value: { verdict: "ok", confidence: 0.5 }, mode: "json_object" });
    expect(model.requests[0].body.response_format).toEqual({ type: "json_object" });
    expect(systemTexts(0).some((t) => t.includes(JSON.stringify(SCHEMA)))).toBe(true);
    const err = await failure(c.structured(REQ));
    expect(err.failure).toBe("schema_invalid");
  });

  it("maps HTTP 500 to http_error, retrying per max_retries", async () => {
    await start({ status: 500, error: { message: "CUDA out of memory" } });
    const once = await failure(client({ max_retries: 0 }).structured(REQ));
    expect(once).toMatchObject({ failure: "http_error", status: 500 });
    expect(once.message).toContain("CUDA out of memory");
    expect(model.requests).toHaveLength(1);
    await model.close();

    await start(
      { status: 500, error: { message: "CUDA out of memory" }, headers: { "retry-after-ms": "10" } },
      { status: 500, error: { message: "CUDA out of memory" } },
    );
    const twice = await failure(client({ max_retries: 1 }).structured(REQ));
    expect(twice).toMatchObject({ failure: "http_error", status: 500 });
    expect(model.requests).toHaveLength(2);
  });

  it("recovers when a retry succeeds", async () => {
    await start({ status: 503, error: { message: "loading model" }, headers: { "retry-after-ms": "10" } }, { json: { verdict: "ok", confidence: 1 } });
    const r = await client({ max_retries: 1 }).structured(REQ);
    expect(r.value).toEqual({ verdict: "ok", confidence: 1 });
    expect(model.requests).toHaveLength(2);
  });

  it("times out on a hanging server, using model.timeout or the per-call timeoutMs", async () => {
    await start({ hang: true }, { hang: true });
    // The server never answers: only the 200 ms bound can end these calls before the test's own
    // 10 s limit (the second call's model.timeout is 30 s, so it must be the per-call bound).
    const err = await failure(client({ timeout: "200ms" }).structured(REQ));
    expect(err.failure).toBe("timeout");

    const err2 = await failure(client({ timeout: "30s" }).structured({ ...REQ, timeoutMs: 200 }));
    expect(err2.failure).toBe("timeout");
    expect(model.requests).toHaveLength(2);
  }, 10_000);

  it("maps a refused connection to connection", async () => {
    await start();
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await failure(client({ base_url: `http://127.0.0.1:${port}/v1` }).structured(REQ));
    expect(err.failure).toBe("connection");
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  it("reports unparsable content as malformed_json with the usage, without retrying", async () => {
    await start({ content: "Sure! The host is degraded." });
    const err = await failure(client({ max_retries: 2 }).structured(REQ));
    expect(err.failure).toBe("malformed_json");
    expect(err.usage?.completionTokens).toBe(Math.ceil("Sure! The host is degraded.".length / 4));
    expect(model.requests).toHaveLength(1);
  });

  it("accepts JSON inside a ```json fence", async () => {
    await start({ content: '```json\n{"verdict": "ok", "confidence": 0.1}\n```' });
    const r = await client().structured(REQ);
    expect(r.value).toEqual({ verdict: "ok", confidence: 0.1 });
  });

  it("reports a schema violation as schema_invalid naming the field and rule, without retrying", async () => {
    await start({ json: { verdict: "ok", confidence: 1.5 } }, { json: { verdict: "meh", confidence: 0.5, extra: true } });
    const c = client({ max_retries: 2 });
    const err = await failure(c.structured(REQ));
    expect(err.failure).toBe("schema_invalid");
    expect(err.message).toContain("confidence: must be <= 1 (rule: maximum)");
    expect(err.usage?.totalTokens).toBeGreaterThan(0);
    expect(model.requests).toHaveLength(1);
    const err2 = await failure(c.structured(REQ));
    expect(err2.message).toContain('verdict: must be one of "ok", "degraded", "down" (rule: enum)');
    expect(err2.message).toContain("extra: is not allowed (rule: additionalProperties)");
  });

  it("reports a refusal and an empty answer", async () => {
    await start({ refusal: "I can't help with that." }, { content: "" });
    const c = client();
    const refused = await failure(c.structured(REQ));
    expect(refused.failure).toBe("refusal");
    expect(refused.message).toContain("I can't help with that.");
    const empty = await failure(c.structured(REQ));
    expect(empty.failure).toBe("empty");
  });

  it("sends the key from api_key_file as a bearer token and never shows it in errors or logs", async () => {
    const file = join(tmp, "model.key");
    writeFileSync(file, `  ${KEY}\n`);
    await start({ json: { verdict: "ok", confidence: 1 } }, { status: 401, error: { message: `Incorrect API key provided: ${KEY}`, type: "invalid_request_error", code: "invalid_api_key" } });
    const c = client({ api_key_file: file });
    await c.structured(REQ);
    expect(model.requests[0].headers.authorization).toBe(`Bearer ${KEY}`);
    const err = await failure(c.structured(REQ));
    expect(err).toMatchObject({ failure: "http_error", status: 401 });
    expect(err.message).toContain("Incorrect API key provided: [redacted]");
    expect(err.message).not.toContain(KEY);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join("\n")).not.toContain(KEY);
  });

  it("prefers api_key over api_key_file", async () => {
    await start({ json: { verdict: "ok", confidence: 1 } });
    await client({ api_key: "inline-key", api_key_file: join(tmp, "missing.key") }).structured(REQ);
    expect(model.requests[0].headers.authorization).toBe("Bearer inline-key");
  });

  it("logs model, mode, latency and usage at debug and no message content at any level", async () => {
    await start({ json: { verdict: "ok", confidence: 1 } });
    await client().structured(REQ);
    const entries = lines.map((l) => JSON.parse(l));
    const call = entries.find((e) => e.usage);
    expect(call).toMatchObject({ level: 20, model: "test-model", mode: "json_schema", usage: { totalTokens: expect.any(Number) } });
    expect(typeof call.latencyMs).toBe("number");
    expect(lines.join("\n")).not.toContain(USER_TEXT);
  });

  it("reports a cancelled call as cancelled, not as a model failure", async () => {
    await start({ hang: true });
    const ac = new AbortController();
    const p = client().structured({ ...REQ, signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    await expect(p).rejects.toMatchObject({ name: "OngridError", code: "cancelled" });
  });
});

const DISK_TOOL = {
  type: "function" as const,
  function: {
    name: "host.disk_usage",
    description: "Disk usage per mount [class: read; scope: host]",
    parameters: {
      type: "object",
      properties: { edge_id: { type: "string" }, mount: { type: "string" } },
      required: ["edge_id"],
      additionalProperties: false,
    },
  },
};
const LOGS_TOOL = {
  type: "function" as const,
  function: { name: "host.journal_tail", description: "Last journal lines [class: read; scope: host]", parameters: { type: "object", properties: { edge_id: { type: "string" }, lines: { type: "integer" } }, required: ["edge_id"] } },
};
const CHAT: ChatRequest = {
  messages: [
    { role: "system", content: "You diagnose hosts with the tools given." },
    { role: "user", content: USER_TEXT },
  ],
  tools: [DISK_TOOL, LOGS_TOOL],
  toolChoice: "auto",
};
/** Deliberately not in JSON.stringify's canonical spacing, so a re-serialisation would show. */
const RAW_ARGS = '{ "edge_id" : "web-3",\n  "mount": "/var" }';

describe("chat", () => {
  it("sends the tools, tool_choice and max_tokens in OpenAI's shape", async () => {
    await start({ toolCalls: [{ name: "host.disk_usage", arguments: { edge_id: "web-3" } }] });
    await client().chat({ ...CHAT, maxTokens: 512 });
    expect(model.requests).toHaveLength(1);
    const body = model.requests[0].body;
    expect(body.model).toBe("test-model");
    expect(body.messages).toEqual(CHAT.messages);
    expect(body.tools).toEqual([
      {
        type: "function",
        function: {
          name: "host.disk_usage",
          description: "Disk usage per mount [class: read; scope: host]",
          parameters: DISK_TOOL.function.parameters,
        },
      },
      { type: "function", function: LOGS_TOOL.function },
    ]);
    expect(body.tool_choice).toBe("auto");
    expect(body.max_tokens).toBe(512);
    expect(body).not.toHaveProperty("response_format");
  });

  it("returns function tool calls with ids and the raw argument text", async () => {
    await start({
      toolCalls: [
        { id: "call_disk", name: "host.disk_usage", arguments: RAW_ARGS },
        { name: "host.journal_tail", arguments: { edge_id: "web-3", lines: 50 } },
      ],
    });
    const r = await client().chat(CHAT);
    expect(r.finishReason).toBe("tool_calls");
    expect(r.content).toBeNull();
    expect(r.model).toBe("test-model");
    expect(r.toolCalls).toEqual([
      { id: "call_disk", name: "host.disk_usage", arguments: RAW_ARGS },
      { id: expect.stringMatching(/^call_scripted_\d+$/), name: "host.journal_tail", arguments: '{"edge_id":"web-3","lines":50}' },
    ]);
  });

  it("keeps text sent alongside tool calls, drops tool calls that are not functions, and fills in missing ids and text arguments", async () => {
    const completion = {
      id: "chatcmpl-mixed",
      object: "chat.completion",
      created: 0,
      model: "test-model",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: "Checking the disk first.",
            refusal: null,
            tool_calls: [
              { id: "call_custom", type: "custom", custom: { name: "grammar_tool", input: "df -h" } },
              { id: "call_fn", type: "function", function: { name: "host.disk_usage", arguments: '{"edge_id":"web-3"}' } },
              // Some servers omit the id or send arguments as an object.
              { type: "function", function: { name: "host.journal_tail", arguments: { edge_id: "web-3", lines: 20 } } },
            ],
          },
          finish_reason: "tool_calls",
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52 },
    };
    await start({ status: 200, body: completion });
    const r = await client().chat(CHAT);
    expect(r.content).toBe("Checking the disk first.");
    expect(r.toolCalls).toEqual([
      { id: "call_fn", name: "host.disk_usage", arguments: '{"edge_id":"web-3"}' },
      { id: "call_2", name: "host.journal_tail", arguments: '{"edge_id":"web-3","lines":20}' },
    ]);
    expect(r.usage).toEqual({ promptTokens: 40, completionTokens: 12, totalTokens: 52 });
  });

  it("sends the assistant's tool calls and the tool results back in OpenAI's shape", async () => {
    await start({ toolCalls: [{ id: "call_disk", name: "host.disk_usage", arguments: RAW_ARGS }] }, { content: "/var is 97% full; rotate the logs." });
    const c = client();
    const first = await c.chat(CHAT);
    const followUp: ChatMessage[] = [
      ...CHAT.messages,
      { role: "assistant", content: first.content, tool_calls: first.toolCalls },
      { role: "tool", tool_call_id: first.toolCalls[0].id, content: '{"mount":"/var","used_pct":97}' },
    ];
    const second = await c.chat({ ...CHAT, messages: followUp });
    expect(second).toMatchObject({ content: "/var is 97% full; rotate the logs.", toolCalls: [], finishReason: "stop" });
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1].body.messages).toEqual([
      { role: "system", content: "You diagnose hosts with the tools given." },
      { role: "user", content: USER_TEXT },
      { role: "assistant", content: null, tool_calls: [{ id: "call_disk", type: "function", function: { name: "host.disk_usage", arguments: RAW_ARGS } }] },
      { role: "tool", tool_call_id: "call_disk", content: '{"mount":"/var","used_pct":97}' },
    ]);
  });

  it("returns a plain content reply, sending no tools or tool_choice when none are given", async () => {
    await start({ content: "The host is degraded: /var is nearly full." });
    const r = await client().chat({ messages: CHAT.messages, toolChoice: "required" });
    expect(r).toMatchObject({ content: "The host is degraded: /var is nearly full.", toolCalls: [], finishReason: "stop" });
    const body = model.requests[0].body;
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("tool_choice");
    expect(body).not.toHaveProperty("max_tokens");
  });

  it("reports an answer with neither content nor tool calls as empty, with the usage", async () => {
    await start({ content: "" }, { content: "  \n", finishReason: "length" });
    const c = client();
    const err = await failure(c.chat(CHAT));
    expect(err.failure).toBe("empty");
    expect(err.usage?.promptTokens).toBeGreaterThan(0);
    const err2 = await failure(c.chat(CHAT));
    expect(err2.failure).toBe("empty");
    expect(err2.message).toContain("finish_reason: length");
  });

  it("reports a refusal", async () => {
    await start({ refusal: "I can't run commands on hosts." });
    const err = await failure(client().chat(CHAT));
    expect(err.failure).toBe("refusal");
    expect(err.message).toContain("I can't run commands on hosts.");
  });

  it("maps HTTP 500 to http_error, retrying per max_retries", async () => {
    await start({ status: 500, error: { message: "CUDA out of memory" } });
    const once = await failure(client({ max_retries: 0 }).chat(CHAT));
    expect(once).toMatchObject({ failure: "http_error", status: 500 });
    expect(once.message).toContain("CUDA out of memory");
    expect(model.requests).toHaveLength(1);
    await model.close();

    await start({ status: 500, error: { message: "CUDA out of memory" }, headers: { "retry-after-ms": "10" } }, { toolCalls: [{ name: "host.disk_usage", arguments: "{}" }] });
    const r = await client({ max_retries: 1 }).chat(CHAT);
    expect(r.toolCalls).toHaveLength(1);
    expect(model.requests).toHaveLength(2);
  });

  it("times out on a hanging server, using model.timeout or the per-call timeoutMs", async () => {
    await start({ hang: true }, { hang: true });
    // As for structured(): only the 200 ms bounds can end these calls within the test's 10 s.
    const err = await failure(client({ timeout: "200ms" }).chat(CHAT));
    expect(err.failure).toBe("timeout");

    const err2 = await failure(client({ timeout: "30s" }).chat({ ...CHAT, timeoutMs: 200 }));
    expect(err2.failure).toBe("timeout");
    expect(model.requests).toHaveLength(2);
  }, 10_000);

  it("maps a refused connection to connection", async () => {
    await start();
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await failure(client({ base_url: `http://127.0.0.1:${port}/v1` }).chat(CHAT));
    expect(err.failure).toBe("connection");
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  it("reports a cancelled call as cancelled, not as a model failure", async () => {
    await start({ hang: true });
    const ac = new AbortController();
    const p = client().chat({ ...CHAT, signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    await expect(p).rejects.toMatchObject({ name: "OngridError", code: "cancelled" });
  });

  it("records usage, and logs it at debug without message content, arguments or the key", async () => {
    await start({ toolCalls: [{ id: "call_disk", name: "host.disk_usage", arguments: RAW_ARGS }] }, { status: 401, error: { message: `Incorrect API key provided: ${KEY}`, type: "invalid_request_error", code: "invalid_api_key" } });
    const c = client({ api_key: KEY });
    const r = await c.chat(CHAT);
    const promptChars = CHAT.messages.reduce((n, m) => n + String(m.content).length, 0);
    const completionChars = "host.disk_usage".length + RAW_ARGS.length;
    expect(r.usage).toEqual({
      promptTokens: Math.ceil(promptChars / 4),
      completionTokens: Math.ceil(completionChars / 4),
      totalTokens: Math.ceil(promptChars / 4) + Math.ceil(completionChars / 4),
    });
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
    expect(model.requests[0].headers.authorization).toBe(`Bearer ${KEY}`);
    const call = lines.map((l) => JSON.parse(l)).find((e) => e.usage);
    expect(call).toMatchObject({ level: 20, model: "test-model", mode: "chat", tools: 2, finishReason: "tool_calls", toolCalls: 1, usage: r.usage });
    expect(typeof call.latencyMs).toBe("number");

    const err = await failure(c.chat(CHAT));
    expect(err).toMatchObject({ failure: "http_error", status: 401 });
    expect(err.message).toContain("Incorrect API key provided: [redacted]");
    expect(err.message).not.toContain(KEY);
    const all = lines.join("\n");
    expect(all).not.toContain(USER_TEXT);
    expect(all).not.toContain("web-3");
    expect(all).not.toContain(KEY);
  });
});
