/** restart_service's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/restart-service.ts). */
import { defineSkillMeta } from "../define.ts";

export const RESTART_SERVICE = defineSkillMeta({
  key: "restart_service",
  name: "Restart a systemd service",
  description:
    "Restart, reload or try-restart one systemd service and report its state afterwards (ActiveState, SubState, MainPID). Use when a diagnosis shows a service is hung, leaking or running stale configuration and a restart is the agreed remedy; it changes the host, so every call needs approval. Only .service units are accepted.",
  class: "mutating",
  scope: "host",
  category: "service",
  params: {
    unit: {
      type: "string",
      description: "The service unit, e.g. nginx or nginx.service or getty@tty1.service.",
      required: true,
      min: 1,
      max: 256,
      pattern: "^[A-Za-z0-9_@][A-Za-z0-9@._\\\\:-]*$",
    },
    mode: {
      type: "enum",
      description: "restart (stop and start), reload (re-read configuration, keeps the process) or try-restart (restart only if running).",
      values: ["restart", "reload", "try-restart"],
      default: "restart",
    },
  },
  resultPreview: JSON.stringify({ unit: "nginx.service", mode: "restart", active_state: "active", sub_state: "running", main_pid: 4242, duration_ms: 812 }),
});
