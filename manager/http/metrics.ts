/**
 * GET /metrics: the manager's own series in the Prometheus text format 0.0.4 (K3).
 *
 * The port is the API port, so the page wants an API token like every RPC (any role; a viewer
 * user for Prometheus is enough: `authorization: { credentials_file: … }` in its scrape config).
 * A refused scrape is audited like a refused RPC; an accepted one is not (it reads aggregates,
 * and Prometheus scrapes every few seconds).
 */
import type { ServerResponse } from "node:http";
import { OngridError } from "../../skill/errors.ts";
import { auditRecord } from "../audit/types.ts";
import type { Core } from "../core.ts";
import { bearerToken } from "../rpc/auth.ts";
import type { HttpRoute } from "./route.ts";

/** Where the page is served. */
export const METRICS_PATH = "/metrics";

type Req = Parameters<HttpRoute>[0];
type Res = Parameters<HttpRoute>[1];

/** The /metrics route over the manager's parts. */
export function createMetricsRoute(core: Core): HttpRoute {
  const { metrics, identity, audit, log } = core;
  metrics.addProcessMetrics();

  function send(res: Res, status: number, headers: Record<string, string>, body: string): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    (res as unknown as ServerResponse).writeHead(status, headers);
    res.end(body);
  }

  const json = (res: Res, status: number, body: unknown, extra: Record<string, string> = {}) =>
    send(res, status, { "content-type": "application/json", "cache-control": "no-store", ...extra }, JSON.stringify(body));

  async function serve(req: Req, res: Res): Promise<void> {
    const raw = bearerToken((req.headers.authorization as string | undefined) ?? null);
    try {
      await identity.authenticate(raw === "\u0000malformed" ? "malformed" : raw);
    } catch (err) {
      if (!(err instanceof OngridError)) throw err;
      log.info({ path: METRICS_PATH, reason: err.message }, "metrics scrape refused: not authenticated");
      await audit.append(
        auditRecord({
          toolName: METRICS_PATH,
          args: { http: `${req.method} ${METRICS_PATH}` },
          error: `${err.code}: ${err.message}`,
          callerUserId: "",
          callerRole: "",
          decision: "deny",
          decisionReason: `${err.code}: ${err.message}`,
        }),
      );
      json(res, 401, { code: err.code, message: err.message, hint: "send an API token (any role) as `authorization: Bearer <token>`; see docs/base-tools.md" }, { "www-authenticate": 'Bearer realm="ongrid"' });
      return;
    }
    const text = await metrics.render();
    send(res, 200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" }, req.method === "HEAD" ? "" : text);
  }

  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== METRICS_PATH) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      json(res, 405, { code: "invalid_argument", message: `${req.method} ${METRICS_PATH}: only GET is served` }, { allow: "GET, HEAD" });
      return true;
    }
    serve(req, res).catch((err: unknown) => {
      log.error({ err: (err as Error)?.message, path: METRICS_PATH }, "metrics scrape failed");
      json(res, 500, { code: "internal", message: "could not render the metrics; see the manager log" });
    });
    return true;
  };
}
