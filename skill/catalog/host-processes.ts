/** host_processes's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/host-processes.ts). */
import { defineSkillMeta } from "../define.ts";

export const HOST_PROCESSES = defineSkillMeta({
  key: "host_processes",
  name: "Top processes",
  description:
    "List the host's top processes by CPU (sampled over 200 ms, 100% = one core) or by resident memory, with pid, parent, user, state, threads and command line. Use when host_load shows high load or memory pressure, to find which process is responsible.",
  class: "safe",
  scope: "host",
  category: "host",
  params: {
    sort_by: { type: "enum", description: "Rank by cpu (usage over the sample) or mem (resident set size).", values: ["cpu", "mem"], default: "cpu" },
    limit: { type: "integer", description: "How many processes to return.", min: 1, max: 100, default: 10 },
  },
  resultPreview: JSON.stringify({
    sort_by: "cpu",
    sample_ms: 200,
    total_processes: 214,
    processes: [{ pid: 4242, ppid: 1, user: "www-data", uid: 33, name: "nginx", state: "R", threads: 1, rss_bytes: 52_428_800, cpu_pct: 97.5, command: "nginx: worker process" }],
  }),
});
