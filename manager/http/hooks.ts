/**
 * Webhooks on the manager's port (K3): Alertmanager's alerts become incidents
 * (POST /hooks/alertmanager, webhook payload version 4); deploy tools post change events
 * (POST /hooks/change-events). Both need an ongrid API token of role operator or above
 * (`authorization: Bearer …`), checked by the guard every plain-HTTP route uses (guard.ts: the
 * same identity store as the RPC interceptor). This file is the HTTP side only: method, body size,
 * JSON, the guard, the answer; what a post does is incidents/webhook.ts. Every post is logged;
 * every refused one answers 4xx with a JSON {code, message, hint} naming the field and rule, and
 * writes an audit row (decision deny), like a refused RPC. Nothing here can end the manager: a
 * failure answers 500 and the manager keeps serving.
 */
import { OngridError } from "../../skill/errors.ts";
import { redactString } from "../../skill/redact.ts";
import type { Caller } from "../identity/caller.ts";
import type { Role } from "../identity/store.ts";
import { createWebhooks, type WebhookOutcome } from "../incidents/webhook.ts";
import type { Core } from "../core.ts";
import { HttpError, sendJson } from "./errors.ts";
import { createGuard, type GuardRule } from "./guard.ts";
import type { HttpRoute } from "./route.ts";

/** The least role that may post to the webhooks: they write incidents and change events others rely on. */
export const HOOK_ROLE: Role = "operator";

/** Paths of the webhooks. */
export const ALERTMANAGER_PATH = "/hooks/alertmanager";
export const CHANGE_EVENTS_PATH = "/hooks/change-events";

type Req = Parameters<HttpRoute>[0];
type Res = Parameters<HttpRoute>[1];

/** One webhook: its guard rule, what a post does, and the status of an accepted one. */
interface Hook {
  rule: GuardRule;
  act: (body: unknown, caller: Caller, path: string) => Promise<WebhookOutcome>;
  status: number;
}

const pathOf = (req: Req) => (req.url ?? "").split("?")[0];

/** The guard rule of a webhook: its name in audit rows, role operator, the path in a refusal's row. */
const hookRule = (name: string): GuardRule => ({
  name,
  role: HOOK_ROLE,
  args: (req) => ({ path: pathOf(req) }),
  hints: { permission_denied: "Post with the token of a user with role operator (e.g. a dedicated alertmanager user)." },
});

/**
 * Reads a body up to `cap` bytes. A larger one is drained (up to a hard limit, so the client
 * reads the 413 instead of a reset connection) and reported as undefined.
 */
function readBody(req: Req, cap: number): Promise<Buffer | undefined> {
  const hardLimit = Math.max(cap * 16, 64 * 1024 * 1024);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size <= cap) chunks.push(c);
      else if (size > hardLimit) {
        req.destroy();
        resolve(undefined);
      }
    });
    req.on("end", () => resolve(size <= cap ? Buffer.concat(chunks) : undefined));
    req.on("error", reject);
    req.on("aborted", () => reject(new Error("the client went away")));
  });
}

/** Parses JSON, refusing it with the position only (the text around it may hold a secret). */
function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (err) {
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new OngridError("invalid_argument", `body: is not valid JSON (rule: json)${at ? ` at position ${at}` : ""}`, "Send a JSON object with content-type application/json.");
  }
}

/** The webhook routes over the manager's parts. */
export function createHookRoutes(core: Core): HttpRoute {
  const { log, config } = core;
  const guard = createGuard(core);
  const webhooks = createWebhooks(core);
  const cap = config.server.max_request_bytes;

  const routes: Record<string, Hook> = {
    [ALERTMANAGER_PATH]: { rule: hookRule("hooks.alertmanager"), act: webhooks.recordAlerts, status: 200 },
    [CHANGE_EVENTS_PATH]: { rule: hookRule("hooks.change_events"), act: (body, caller) => webhooks.addChangeEvent(body, caller), status: 201 },
  };

  async function handle(req: Req, res: Res, hook: Hook): Promise<void> {
    const { name } = hook.rule;
    let who: Caller | undefined;
    try {
      if (req.method !== "POST") {
        res.setHeader("allow", "POST");
        throw new HttpError(405, "invalid_argument", `method: ${String(req.method).slice(0, 16)} is not allowed (rule: POST)`, "POST the payload.");
      }
      who = await guard.admit(req, res, hook.rule);
      if (!who) return;
      const body = await readBody(req, cap);
      if (!body) throw new OngridError("resource_exhausted", `body: is larger than ${cap} bytes (rule: server.max_request_bytes)`, "Send fewer alerts per post (Alertmanager: max_alerts in webhook_configs) or raise server.max_request_bytes.");
      const out = await hook.act(parseJson(body), who, pathOf(req));
      sendJson(res, hook.status, out.body);
      log.info({ hook: name, user: who.userId, status: hook.status, ...out.log }, "webhook post accepted");
    } catch (err) {
      if (!(err instanceof OngridError)) {
        log.error({ hook: name, err: redactString(String((err as Error)?.stack ?? err)) }, "webhook post failed");
        sendJson(res, 500, { code: "internal", message: "internal error while handling the post; see the manager log" });
        return;
      }
      await guard.refuse(req, res, hook.rule, err, who);
    }
  }

  return (req, res) => {
    const hook = routes[pathOf(req)];
    if (!hook) return false;
    handle(req, res, hook).catch((err: unknown) => {
      log.error({ hook: hook.rule.name, err: String(err) }, "webhook handler failed");
      if (!res.headersSent) sendJson(res, 500, { code: "internal", message: "internal error" });
      else res.end();
    });
    return true;
  };
}
