/** host_load's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/host-load.ts). */
import { defineSkillMeta } from "../define.ts";

export const HOST_LOAD = defineSkillMeta({
  key: "host_load",
  name: "Host load snapshot",
  description:
    "Report the host's load averages (1, 5, 15 min) against its CPU count, uptime, running/total tasks, and memory and swap use. Use first when a host is reported slow, unresponsive or out of memory, before drilling into host_processes or host_files.",
  class: "safe",
  scope: "host",
  category: "host",
  params: {},
  resultPreview: JSON.stringify({
    hostname: "web-1",
    uptime_s: 864000,
    loadavg: [0.42, 0.55, 0.61],
    cpus: 4,
    load_per_cpu: 0.11,
    tasks: { running: 1, total: 312 },
    memory: { total_bytes: 8_254_390_272, available_bytes: 5_368_709_120, used_bytes: 2_885_681_152, used_pct: 35 },
    swap: { total_bytes: 2_147_479_552, free_bytes: 2_147_479_552, used_bytes: 0, used_pct: 0 },
    source: "proc",
  }),
});
