/** GET /metrics: the manager's own series in the Prometheus text format (K3). */
import type { HttpRoute } from "./http-route.ts";
import type { Core } from "../main.ts";

/** The /metrics route over the manager's parts. */
export function createMetricsRoute(_core: Core): HttpRoute {
  return () => false;
}
