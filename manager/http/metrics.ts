/**
 * GET /metrics: the manager's own series in the Prometheus text format 0.0.4 (K3).
 *
 * The port is the API port, so the page wants an API token like every RPC (any role; a viewer
 * user for Prometheus is enough: `authorization: { credentials_file: … }` in its scrape config).
 * A refused scrape is audited like a refused RPC (guard.ts, the guard of every plain-HTTP route);
 * an accepted one is not (it reads aggregates, and Prometheus scrapes every few seconds).
 */
import type { ServerResponse } from "node:http";
import type { Core } from "../core.ts";
import { errorBody, httpStatus, HttpError, sendJson } from "./errors.ts";
import { createGuard, type GuardRule } from "./guard.ts";
import type { HttpRoute } from "./route.ts";

/** Where the page is served. */
export const METRICS_PATH = "/metrics";

type Req = Parameters<HttpRoute>[0];
type Res = Parameters<HttpRoute>[1];

/** The guard rule of the page: any role; a refusal's row is tool /metrics with the request line. */
const RULE: GuardRule = {
  name: METRICS_PATH,
  args: (req) => ({ http: `${req.method} ${METRICS_PATH}` }),
  hints: { unauthenticated: "send an API token (any role) in the `authorization` header, as `Bearer` followed by the token; see docs/base-tools.md" },
  headers: { "cache-control": "no-store" },
};

/** The /metrics route over the manager's parts. */
export function createMetricsRoute(core: Core): HttpRoute {
  const { metrics, log } = core;
  const guard = createGuard(core);
  metrics.addProcessMetrics();

  function send(res: Res, status: number, headers: Record<string, string>, body: string): void {
    if (res.headersSent) {
      res.end();
      return;
    }
    (res as unknown as ServerResponse).writeHead(status, headers);
    res.end(body);
  }

  async function serve(req: Req, res: Res): Promise<void> {
    if (!(await guard.admit(req, res, RULE))) return;
    const text = await metrics.render();
    send(res, 200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" }, req.method === "HEAD" ? "" : text);
  }

  return (req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== METRICS_PATH) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      // Not audited: a wrong method is refused before any token is looked at, and tells nothing.
      const err = new HttpError(405, "invalid_argument", `${req.method} ${METRICS_PATH}: only GET is served`);
      sendJson(res, httpStatus(err), errorBody(err), { "cache-control": "no-store", allow: "GET, HEAD" });
      return true;
    }
    serve(req, res).catch((err: unknown) => {
      log.error({ err: (err as Error)?.message, path: METRICS_PATH }, "metrics scrape failed");
      sendJson(res, 500, { code: "internal", message: "could not render the metrics; see the manager log" }, { "cache-control": "no-store" });
    });
    return true;
  };
}
