/** tail_file's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/tail-file.ts). */
import { defineSkillMeta } from "../define.ts";

export const TAIL_FILE = defineSkillMeta({
  key: "tail_file",
  name: "Tail a log file",
  description:
    "Return the last lines of a text file on this host, optionally only lines matching a regular expression, reading backwards from the end (at most a few MiB). Use when diagnosing a service from its log file (nginx, application or system logs under the directories the edge allows). Paths outside the configured allowed roots, and symlinks leading out of them, are refused.",
  class: "safe",
  scope: "host",
  category: "logs",
  params: {
    path: { type: "string", description: "Absolute path of the file, e.g. /var/log/nginx/error.log.", required: true, min: 2, max: 4096, pattern: "^/[^\\u0000]*$" },
    lines: { type: "integer", description: "How many lines to return, counted from the end.", min: 1, max: 5000, default: 100 },
    grep: { type: "string", description: "Regular expression (JavaScript syntax) a line must match to count, applied before taking the last lines; case-insensitive unless it contains an uppercase letter.", min: 1, max: 512 },
  },
  resultPreview: JSON.stringify({
    path: "/var/log/nginx/error.log",
    lines: ["2025/01/01 12:00:00 [error] 123#0: *1 upstream timed out (110: Connection timed out)"],
    returned: 1,
    truncated_from_start: true,
    size_bytes: 1048576,
    modified_at: "2025-01-01T12:00:00.000Z",
    bytes_scanned: 65536,
    scan_limit_reached: false,
  }),
});
