/** A scripted server on loopback that speaks OpenAI chat completions, for tests of the model client. */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** One scripted answer. */
export type Reply =
  /** A well-formed chat.completion whose content is JSON.stringify(json). */
  | { json: unknown }
  /** Raw message content, e.g. malformed JSON or a fenced block. */
  | { content: string; finishReason?: string }
  /** An error: OpenAI's `{error:{message,type,code}}` shape from `error`, or `body` sent verbatim (string or JSON). */
  | { status: number; error?: { message?: string; type?: string; code?: unknown; param?: unknown }; body?: string | object; headers?: Record<string, string> }
  /** Never answers (for timeouts); closed when the server closes. */
  | { hang: true }
  /** A refusal with null content. */
  | { refusal: string }
  /**
   * An assistant message with function tool calls (finish_reason "tool_calls") and optional text:
   * ids are generated when absent, object arguments are sent as JSON text.
   */
  | { toolCalls: Array<{ name: string; arguments: string | object; id?: string }>; content?: string };

/** Answers one request: a Reply, or a function of the request body that returns one. */
export type Responder = Reply | ((body: any) => Reply | Promise<Reply>);

/** A running scripted model: base URL (ends in /v1), every request seen, more script, and stop. */
export interface ScriptedModel {
  url: string;
  requests: Array<{ body: any; headers: Record<string, string> }>;
  push(...r: Responder[]): void;
  close(): Promise<void>;
}

/** Starts the server; each POST /v1/chat/completions consumes the next responder of the script. */
export async function startScriptedModel(script: Responder[] = []): Promise<ScriptedModel> {
  const queue = [...script];
  const requests: ScriptedModel["requests"] = [];
  let seq = 0;
  let callSeq = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void handle(req, res, Buffer.concat(chunks).toString("utf8")).catch((err: Error) => {
        if (!res.headersSent) send(res, 500, { error: { message: `scripted model failed: ${err.message}`, type: "server_error", code: null } });
      });
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): Promise<void> {
    if (req.method !== "POST" || req.url?.split("?")[0] !== "/v1/chat/completions") {
      send(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: "invalid_request_error", code: "not_found" } });
      return;
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      body = raw;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(", ") : v;
    requests.push({ body, headers });
    const next = queue.shift();
    if (next === undefined) {
      send(res, 500, { error: { message: `scripted model: script exhausted after ${requests.length - 1} answers`, type: "server_error", code: null } });
      return;
    }
    const reply = typeof next === "function" ? await next(body) : next;
    if ("hang" in reply) return;
    if ("status" in reply) {
      const payload = reply.body ?? { error: { message: "scripted error", type: "server_error", code: null, ...reply.error } };
      send(res, reply.status, payload, reply.headers);
      return;
    }
    const content = "json" in reply ? JSON.stringify(reply.json) : "content" in reply ? (reply.content ?? null) : null;
    const refusal = "refusal" in reply ? reply.refusal : null;
    const toolCalls =
      "toolCalls" in reply
        ? reply.toolCalls.map((c) => ({
            id: c.id ?? `call_scripted_${++callSeq}`,
            type: "function",
            function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments) },
          }))
        : undefined;
    const promptChars = Array.isArray(body?.messages) ? body.messages.reduce((n: number, m: { content?: unknown }) => n + String(m.content ?? "").length, 0) : 0;
    const prompt = Math.ceil(promptChars / 4);
    const completionChars = (content ?? refusal ?? "").length + (toolCalls ?? []).reduce((n, c) => n + c.function.name.length + c.function.arguments.length, 0);
    const completion = Math.ceil(completionChars / 4);
    const finishReason = toolCalls ? "tool_calls" : "finishReason" in reply && reply.finishReason ? reply.finishReason : "stop";
    send(res, 200, {
      id: `chatcmpl-scripted-${++seq}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: body?.model ?? "scripted",
      choices: [
        {
          index: 0,
          message: { role: "assistant", content, refusal, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
          finish_reason: finishReason,
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    push: (...r) => {
      queue.push(...r);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: http.ServerResponse, status: number, payload: string | object, headers: Record<string, string> = {}): void {
  const text = typeof payload === "string" ? payload : JSON.stringify(payload);
  const type = typeof payload === "string" ? "text/plain; charset=utf-8" : "application/json";
  res.writeHead(status, { "content-type": type, ...headers });
  res.end(text);
}

/**
 * What an executor request offers the model: the tools given in full, and (agent.tool_list
 * on_demand) the ones catalogued in load_tools, by name. `all` is both, the agent's own
 * functions (load_tools, update_plan) left out.
 */
export function offeredTools(body: any): { full: string[]; catalogued: string[]; all: string[] } {
  const tools: any[] = Array.isArray(body?.tools) ? body.tools : [];
  const full = tools.map((t) => t.function.name as string).filter((n) => n !== "load_tools" && n !== "update_plan");
  const catalogued: string[] = tools.find((t) => t.function.name === "load_tools")?.function.parameters.properties.names.items.enum ?? [];
  return { full, catalogued, all: [...full, ...catalogued] };
}
