/**
 * send_message (K4): posts a message ({"text": …}, Slack-compatible) to the configured webhook.
 * Class safe — it changes nothing on any host — but it is a notification tool (F4): it is on
 * gate.notification_tools by default, so the gate denies it until gate.allow_notifications is on,
 * and under a playbook it must be listed in allowed_tools (guardrail tools are not exempt).
 */
import { SkillError } from "../../../../skill/errors.ts";
import { parseDuration } from "../../../../skill/duration.ts";
import { redactString } from "../../../../skill/redact.ts";
import { urlProblem } from "../../../config/url.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";

/** Longest message; chat webhooks cut or refuse longer ones. */
export const MAX_MESSAGE_CHARS = 4000;

/** A network-level error code (ECONNREFUSED, ENOTFOUND, UND_ERR_CONNECT_TIMEOUT, …) from a fetch failure: a fixed word, never the URL. */
function networkCode(err: unknown): string | undefined {
  for (let e: any = err, depth = 0; e && depth < 4; e = e.cause, depth++) {
    if (typeof e.code === "string" && /^[A-Z][A-Z0-9_]{1,40}$/.test(e.code)) return e.code;
  }
  return undefined;
}

/** The tool, bound to the manager's parts. */
export function createSendMessage(deps: BaseToolDeps) {
  return defineBaseTool<{ text: string }>({
    key: "send_message",
    name: "Send a message",
    description:
      "Post a short message to the team's chat channel through the configured webhook (skills.send_message.webhook_url). Use when a diagnosis found something people must know now, e.g. to report a confirmed root cause or ask a human to act. A notification tool: denied unless the manager enables notifications (gate.allow_notifications). Secrets in the text are redacted before it is sent.",
    class: "safe",
    category: "notification",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["text"],
      properties: { text: { type: "string", minLength: 1, maxLength: MAX_MESSAGE_CHARS, description: "The message, plain text or Slack-style markdown; say which edge and incident it is about." } },
    },
    resultPreview: { sent: true, status: 200, chars: 42 },
    async execute(ctx, p) {
      const settings = { ...deps.config.skills.send_message, ...(ctx.settings as { webhook_url?: string; timeout?: string }) };
      const url = settings.webhook_url ?? "";
      if (!url) throw new SkillError("not_configured", "send_message has no webhook to post to", "Set skills.send_message.webhook_url (ONGRID_SEND_MESSAGE_WEBHOOK_URL) on the manager.");
      // The URL is a setting and may carry a secret (chat webhooks do): no message quotes it, nor an error's text that might.
      const problem = urlProblem(url);
      if (problem) throw new SkillError("not_configured", `the webhook URL could not be used: skills.send_message.webhook_url ${problem.what} (rule: ${problem.rule})`, "Fix skills.send_message.webhook_url (ONGRID_SEND_MESSAGE_WEBHOOK_URL) on the manager.");
      const timeoutMs = parseDuration(settings.timeout || "10s");
      const text = redactString(p.text);
      const timeout = AbortSignal.timeout(timeoutMs);
      let res: Response;
      try {
        res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text }), signal: AbortSignal.any([ctx.signal, timeout]), redirect: "error" });
      } catch (err) {
        // Node's fetch errors (and their causes) can quote the URL: only a fixed message and an error code.
        if (timeout.aborted) throw new SkillError("timeout", `the message webhook did not answer within ${timeoutMs} ms`, "Retry later; check skills.send_message.timeout.");
        if (ctx.signal.aborted) throw new SkillError("cancelled", "the call was cancelled before the message webhook answered");
        const code = networkCode(err);
        throw new SkillError("upstream_unavailable", `the webhook could not be reached (network error${code ? `: ${code}` : ""})`, "Check skills.send_message.webhook_url and that the chat service is reachable from the manager.");
      }
      await res.body?.cancel().catch(() => {});
      if (!res.ok) throw new SkillError("upstream_error", `the message webhook refused the message: HTTP ${res.status}`, "Check the webhook's configuration on the chat service's side.");
      return { sent: true, status: res.status, chars: text.length, ...(text !== p.text ? { redacted: true } : {}) };
    },
  });
}
