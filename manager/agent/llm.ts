/** The one module around the `openai` package (J4): structured answers and tool-calling chat from any OpenAI-compatible endpoint. */
import { readFileSync } from "node:fs";
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from "openai/resources/chat/completions";
import type { ErrorObject, ValidateFunction } from "ajv";
import type { Logger } from "pino";
import { parseDuration } from "../../skill/duration.ts";
import { OngridError } from "../../skill/errors.ts";
import { compileValidator } from "../../skill/validate.ts";
import { redact as redactSecrets, redactString } from "../../skill/redact.ts";

/** Model settings as they come from config (section "model"). */
export interface ModelSettings {
  base_url: string;
  api_key: string;
  api_key_file: string;
  model: string;
  /** Per-attempt deadline as a duration, e.g. "30s". */
  timeout: string;
  max_retries: number;
  structured_output: "auto" | "json_schema" | "json_object";
}

/** Token usage of one call. */
export interface ModelUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** Why a model call failed: a closed set the router and agent map to their fallbacks. */
export type ModelFailure =
  | "not_configured"
  | "timeout"
  | "http_error"
  | "connection"
  | "malformed_json"
  | "schema_invalid"
  | "refusal"
  | "empty";

/** A failed model call, with the failure class callers branch on and the usage the server reported. */
export class ModelError extends Error {
  readonly failure: ModelFailure;
  readonly status?: number;
  readonly usage?: ModelUsage;
  constructor(failure: ModelFailure, message: string, opts: { status?: number; usage?: ModelUsage; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "ModelError";
    this.failure = failure;
    if (opts.status !== undefined) this.status = opts.status;
    if (opts.usage !== undefined) this.usage = opts.usage;
  }
}

/** One structured call: the conversation and the JSON Schema the answer must match. */
export interface StructuredRequest {
  messages: Array<{ role: "system" | "user" | "assistant"; content: string }>;
  schemaName: string;
  schema: Record<string, unknown>;
  signal?: AbortSignal;
  /** Overrides model.timeout for this call (per attempt). */
  timeoutMs?: number;
}

/** A validated answer with what it cost and how it was obtained. */
export interface StructuredResult<T> {
  value: T;
  usage: ModelUsage;
  mode: "json_schema" | "json_object";
  model: string;
  latencyMs: number;
}

/** One function call the model asked for. */
export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model sent it; not parsed or validated here (the caller does). */
  arguments: string;
}

/** One turn of a tool-calling conversation. */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** An OpenAI function tool as sent to the model. */
export interface ChatTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** One chat call, optionally offering function tools. */
export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ChatTool[];
  /** Sent only together with a non-empty `tools`. */
  toolChoice?: "auto" | "none" | "required";
  signal?: AbortSignal;
  /** Overrides model.timeout for this call (per attempt). */
  timeoutMs?: number;
  /** Upper bound on generated tokens, sent as `max_tokens`. */
  maxTokens?: number;
}

/** The assistant's turn: text, function calls, or both. */
export interface ChatResult {
  /** null when the model sent no text (or only whitespace). */
  content: string | null;
  /** Function tool calls in the order the model sent them; non-function tool calls are dropped. */
  toolCalls: ToolCall[];
  /** As the server reported it, e.g. "stop", "tool_calls", "length"; "none" when absent. */
  finishReason: string;
  usage: ModelUsage;
  model: string;
  latencyMs: number;
}

/** What the router, planner, verifier and executor call; one per configured endpoint. */
export interface ModelClient {
  readonly model: string;
  /** The endpoint without any user:password part, safe to show. */
  readonly baseUrl: string;
  structured<T>(req: StructuredRequest): Promise<StructuredResult<T>>;
  /** One chat completion with optional function tools; fails with ModelError (or OngridError cancelled). */
  chat(req: ChatRequest): Promise<ChatResult>;
}

/** One answered completion, after the checks every kind of call shares. */
interface Answered {
  choice: ChatCompletion.Choice | undefined;
  usage: ModelUsage;
  latencyMs: number;
  finishReason: string;
}

type Mode = StructuredResult<unknown>["mode"];

const HINT_KEY_FILE = "Point model.api_key_file at a readable file holding only the key, or set model.api_key instead.";
const MAX_SERVER_MESSAGE = 500;

/**
 * What servers say when they do not support `response_format: json_schema`, e.g. OpenAI
 * ("'response_format' of type 'json_schema' is not supported with this model"), vLLM before
 * 0.6 (validation error at ('body', 'response_format', 'type')), llama.cpp/ik_llama.cpp
 * ('response_format type must be one of "text" or "json_object"', HTTP 500), DeepSeek/TGI
 * (422 "response_format: ... `json_schema` is unavailable now").
 */
const REFUSES_JSON_SCHEMA = /response_format|json_schema|json schema|structured output/i;
const FALLBACK_STATUSES = new Set([400, 404, 422, 500, 501]);

/** A client, or undefined when base_url or model is empty (no model configured). */
export function createModelClient(settings: ModelSettings, log: Logger): ModelClient | undefined {
  const baseURL = settings.base_url.trim();
  const model = settings.model.trim();
  if (!baseURL || !model) return undefined;
  const apiKey = resolveApiKey(settings);
  const timeoutMs = parseSetting("model.timeout", () => parseDuration(settings.timeout));
  const maxRetries = settings.max_retries;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new OngridError("invalid_argument", `invalid model.max_retries ${JSON.stringify(maxRetries)}: expected a whole number >= 0`, "Set model.max_retries to e.g. 2, or 0 to disable retries.");
  }
  const redact = redactor(apiKey);
  const baseUrl = displayUrl(baseURL);
  const openai = new OpenAI({
    baseURL,
    apiKey,
    timeout: timeoutMs,
    maxRetries,
    // Never forward OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment to an arbitrary endpoint.
    organization: null,
    project: null,
    fetch: normalizingFetch,
    // The package's own info lines are retries; its debug lines carry request bodies, so they stay off.
    logLevel: "info",
    logger: {
      error: (msg: string) => log.error({ model }, redact(msg)),
      warn: (msg: string) => log.warn({ model }, redact(msg)),
      info: (msg: string) => log.debug({ model }, redact(msg)),
      debug: () => {},
    },
  });
  let mode: Mode = settings.structured_output === "json_object" ? "json_object" : "json_schema";
  const canFallBack = settings.structured_output === "auto";
  const validators = new WeakMap<Record<string, unknown>, ValidateFunction>();

  /**
   * One completion on the shared client (so the same timeout, retries, fetch and redaction apply):
   * measures latency, reads usage, logs the call at debug without any message content, and turns
   * a refusal into ModelError. Errors from the package propagate raw; callers pass them to classify.
   */
  async function complete(
    body: Omit<ChatCompletionCreateParamsNonStreaming, "model">,
    call: { signal?: AbortSignal; timeoutMs?: number },
    logFields: Record<string, unknown>,
  ): Promise<Answered> {
    const started = performance.now();
    const completion = await openai.chat.completions.create(
      { ...body, model },
      { signal: call.signal, ...(call.timeoutMs !== undefined ? { timeout: call.timeoutMs } : {}) },
    );
    const latencyMs = Math.round(performance.now() - started);
    const usage = usageOf(completion.usage);
    const choice = completion.choices?.[0];
    const finishReason = choice?.finish_reason ?? "none";
    const toolCalls = choice?.message?.tool_calls?.length;
    log.debug({ model, ...logFields, latencyMs, usage, finishReason, ...(toolCalls ? { toolCalls } : {}) }, "model call answered");
    const refusal = choice?.message?.refusal;
    if (refusal) throw new ModelError("refusal", `model refused to answer: ${redact(refusal.slice(0, MAX_SERVER_MESSAGE))}`, { usage });
    return { choice, usage, latencyMs, finishReason };
  }

  async function attempt<T>(req: StructuredRequest, validate: ValidateFunction, as: Mode): Promise<StructuredResult<T>> {
    const messages = as === "json_schema" ? req.messages : withSchemaInstruction(req.messages, req.schema);
    const response_format =
      as === "json_schema"
        ? { type: "json_schema" as const, json_schema: { name: req.schemaName, schema: req.schema, strict: true } }
        : { type: "json_object" as const };
    const { choice, usage, latencyMs, finishReason } = await complete({ messages, response_format }, req, { mode: as });
    const content = choice?.message?.content;
    if (typeof content !== "string" || content.trim() === "") {
      throw new ModelError("empty", `model returned no content (finish_reason: ${finishReason})`, { usage });
    }
    let value: unknown;
    try {
      value = JSON.parse(stripFence(content));
    } catch (err) {
      const cut = choice?.finish_reason === "length" ? "; the answer was cut off at the token limit" : "";
      throw new ModelError("malformed_json", `model answer is not JSON (${(err as Error).message})${cut}`, { usage });
    }
    if (!validate(value)) {
      throw new ModelError("schema_invalid", `model answer does not match schema "${req.schemaName}": ${describeErrors(validate.errors ?? [])}`, { usage });
    }
    // What a model writes reaches callers, the session store and logs: scrubbed of secrets here, once (S6).
    return { value: redactSecrets(value) as T, usage, mode: as, model, latencyMs };
  }

  async function structured<T>(req: StructuredRequest): Promise<StructuredResult<T>> {
    let validate = validators.get(req.schema);
    if (!validate) {
      validate = compileValidator(req.schema);
      validators.set(req.schema, validate);
    }
    const as = mode;
    try {
      return await attempt<T>(req, validate, as);
    } catch (err) {
      if (canFallBack && as === "json_schema" && refusesJsonSchema(err)) {
        if (mode === "json_schema") {
          mode = "json_object";
          log.info(
            { model, baseUrl, status: (err as APIError).status, reason: redact(serverText(err as APIError)) },
            "model endpoint does not accept response_format json_schema; using json_object with the schema in the prompt from now on",
          );
        }
        try {
          return await attempt<T>(req, validate, "json_object");
        } catch (err2) {
          throw classify(err2, req.signal, redact, model);
        }
      }
      throw classify(err, req.signal, redact, model);
    }
  }

  async function chat(req: ChatRequest): Promise<ChatResult> {
    const tools = req.tools?.length ? req.tools : undefined;
    const body: Omit<ChatCompletionCreateParamsNonStreaming, "model"> = {
      messages: req.messages.map(toOpenAIMessage),
      ...(tools ? { tools } : {}),
      ...(tools && req.toolChoice ? { tool_choice: req.toolChoice } : {}),
      ...(req.maxTokens !== undefined ? { max_tokens: req.maxTokens } : {}),
    };
    try {
      const { choice, usage, latencyMs, finishReason } = await complete(body, req, { mode: "chat", tools: tools?.length ?? 0 });
      const text = choice?.message?.content;
      // A model may repeat a secret it saw or invented; its text is scrubbed before anything shows or stores it (S6).
      const content = typeof text === "string" && text.trim() !== "" ? redactString(text) : null;
      const toolCalls: ToolCall[] = [];
      for (const [i, tc] of (choice?.message?.tool_calls ?? []).entries()) {
        if (tc?.type !== "function") continue;
        const args: unknown = tc.function?.arguments;
        toolCalls.push({
          id: tc.id || `call_${i}`,
          name: tc.function?.name ?? "",
          // Some servers send an object instead of JSON text; keep the contract of raw text.
          arguments: typeof args === "string" ? args : JSON.stringify(args ?? {}),
        });
      }
      if (content === null && toolCalls.length === 0) {
        throw new ModelError("empty", `model returned neither content nor tool calls (finish_reason: ${finishReason})`, { usage });
      }
      return { content, toolCalls, finishReason, usage, model, latencyMs };
    } catch (err) {
      throw classify(err, req.signal, redact, model);
    }
  }

  return { model, baseUrl, structured, chat };
}

/** Our message shape to the package's: assistant tool calls gain `type: "function"`. */
function toOpenAIMessage(m: ChatMessage): ChatCompletionMessageParam {
  switch (m.role) {
    case "system":
    case "user":
      return { role: m.role, content: m.content };
    case "assistant":
      return {
        role: "assistant",
        content: m.content,
        ...(m.tool_calls?.length
          ? { tool_calls: m.tool_calls.map((tc) => ({ id: tc.id, type: "function" as const, function: { name: tc.name, arguments: tc.arguments } })) }
          : {}),
      };
    case "tool":
      return { role: "tool", tool_call_id: m.tool_call_id, content: m.content };
  }
}

function resolveApiKey(settings: ModelSettings): string {
  if (settings.api_key) return settings.api_key;
  if (!settings.api_key_file) return "none";
  let text: string;
  try {
    text = readFileSync(settings.api_key_file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new OngridError("invalid_argument", `cannot read model.api_key_file ${JSON.stringify(settings.api_key_file)}: ${code}`, HINT_KEY_FILE);
  }
  const key = text.trim();
  if (!key) throw new OngridError("invalid_argument", `model.api_key_file ${JSON.stringify(settings.api_key_file)} is empty`, HINT_KEY_FILE);
  return key;
}

function parseSetting(name: string, parse: () => number): number {
  try {
    return parse();
  } catch (err) {
    const e = err as OngridError;
    throw new OngridError("invalid_argument", `${name}: ${e.message}`, e.hint ?? "");
  }
}

/** Removes the key from any text that may reach a log or a caller (servers sometimes echo it). */
function redactor(apiKey: string): (s: string) => string {
  if (apiKey === "none" || apiKey.length < 4) return (s) => s;
  return (s) => s.split(apiKey).join("[redacted]");
}

function displayUrl(raw: string): string {
  try {
    const u = new URL(raw);
    u.username = "";
    u.password = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    return raw;
  }
}

/**
 * Passes requests to fetch unchanged; on an error answer it reshapes vLLM's older top-level
 * `{object:"error", message}` body into OpenAI's `{error:{...}}` so the message survives, and
 * stops the package from retrying a 501 or a 5xx that only says json_schema is unsupported.
 */
async function normalizingFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const res = await fetch(input, init);
  if (res.ok) return res;
  const text = await res.text();
  let body = text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isRecord(parsed) && !("error" in parsed) && typeof parsed.message === "string") body = JSON.stringify({ error: parsed });
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  headers.delete("content-encoding");
  // 501 never heals on retry; neither does a 5xx that only says the format is unsupported.
  if (res.status === 501 || (res.status >= 500 && REFUSES_JSON_SCHEMA.test(text))) headers.set("x-should-retry", "false");
  return new Response(body, { status: res.status, statusText: res.statusText, headers });
}

function refusesJsonSchema(err: unknown): boolean {
  if (!(err instanceof APIError) || err instanceof APIConnectionError || err.status === undefined) return false;
  if (!FALLBACK_STATUSES.has(err.status)) return false;
  return err.status === 501 || REFUSES_JSON_SCHEMA.test(serverText(err));
}

function serverText(err: APIError): string {
  const detail = typeof err.error === "object" && err.error !== null ? JSON.stringify(err.error) : "";
  return `${err.message} ${detail}`.trim().slice(0, MAX_SERVER_MESSAGE * 2);
}

function classify(err: unknown, signal: AbortSignal | undefined, redact: (s: string) => string, model: string): Error {
  if (err instanceof ModelError) return err;
  if (err instanceof APIConnectionTimeoutError) {
    return new ModelError("timeout", `model ${model} did not answer in time`, { cause: err });
  }
  if (err instanceof APIUserAbortError || signal?.aborted) {
    const reason = signal?.reason as { name?: string } | undefined;
    if (reason?.name === "TimeoutError") return new ModelError("timeout", `model ${model} did not answer before the caller's deadline`);
    return new OngridError("cancelled", `model call to ${model} was cancelled`);
  }
  if (err instanceof APIConnectionError) {
    const cause = err.cause as (Error & { code?: string; cause?: { code?: string } }) | undefined;
    const code = cause?.code ?? cause?.cause?.code ?? cause?.message ?? err.message;
    return new ModelError("connection", `cannot reach the model endpoint: ${redact(String(code))}`, { cause: err });
  }
  if (err instanceof APIError) {
    const text = redact(err.message).slice(0, MAX_SERVER_MESSAGE);
    return new ModelError("http_error", `model endpoint answered HTTP ${err.status}: ${text}`, { status: err.status });
  }
  if (err instanceof OngridError) return err;
  return new ModelError("connection", `model call failed: ${redact(err instanceof Error ? err.message : String(err))}`, { cause: err });
}

/** The json_object fallback carries the schema as an instruction right after the leading system messages. */
function withSchemaInstruction(messages: StructuredRequest["messages"], schema: Record<string, unknown>): StructuredRequest["messages"] {
  const instruction = { role: "system" as const, content: `Answer with one JSON object that matches this JSON Schema: ${JSON.stringify(schema)}` };
  let i = 0;
  while (i < messages.length && messages[i].role === "system") i++;
  return [...messages.slice(0, i), instruction, ...messages.slice(i)];
}

function stripFence(content: string): string {
  const t = content.trim();
  const m = /^```[a-zA-Z]*[ \t]*\r?\n?([\s\S]*?)\r?\n?```$/.exec(t);
  return m ? m[1] : t;
}

function usageOf(u: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | undefined | null): ModelUsage {
  const promptTokens = u?.prompt_tokens ?? 0;
  const completionTokens = u?.completion_tokens ?? 0;
  return { promptTokens, completionTokens, totalTokens: u?.total_tokens ?? promptTokens + completionTokens };
}

/** `field: what (rule: keyword)` for each distinct problem, e.g. `confidence: must be <= 1 (rule: maximum)`. */
function describeErrors(errors: readonly ErrorObject[]): string {
  const lines: string[] = [];
  for (const e of errors) {
    const p = e.params as Record<string, unknown>;
    const segments = e.instancePath ? e.instancePath.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~")) : [];
    const child = p.missingProperty ?? p.additionalProperty ?? p.unevaluatedProperty;
    if (typeof child === "string") segments.push(child);
    let field = "";
    for (const s of segments) field += /^\d+$/.test(s) && field ? `[${s}]` : field ? `.${s}` : s;
    const what =
      e.keyword === "required"
        ? "is required"
        : e.keyword === "additionalProperties" || e.keyword === "unevaluatedProperties"
          ? "is not allowed"
          : e.keyword === "enum"
            ? `must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`
            : (e.message ?? `fails "${e.keyword}"`);
    const line = `${field || "(root)"}: ${what} (rule: ${e.keyword})`;
    if (!lines.includes(line)) lines.push(line);
  }
  return lines.slice(0, 5).join("; ") + (lines.length > 5 ? `; and ${lines.length - 5} more` : "");
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The same client, counting every call's tokens into `add`: successful answers and failed ones
 * whose server answered (a malformed or schema-invalid reply still cost tokens).
 */
export function metered(model: ModelClient, add: (u: ModelUsage) => void): ModelClient {
  const count = async <R extends { usage: ModelUsage }>(call: Promise<R>): Promise<R> => {
    try {
      const res = await call;
      add(res.usage);
      return res;
    } catch (err) {
      if (err instanceof ModelError && err.usage) add(err.usage);
      throw err;
    }
  };
  return {
    model: model.model,
    baseUrl: model.baseUrl,
    structured: (req) => count(model.structured(req)),
    chat: (req) => count(model.chat(req)),
  };
}
