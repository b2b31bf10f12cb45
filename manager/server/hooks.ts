/** Webhooks on the manager's port: Alertmanager's alerts become incidents; deploy tools post change events (K3). */
import type { HttpRoute } from "./http-route.ts";
import type { Core } from "../main.ts";

/** The webhook routes over the manager's parts. */
export function createHookRoutes(_core: Core): HttpRoute {
  return () => false;
}
