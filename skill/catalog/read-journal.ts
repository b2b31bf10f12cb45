/** read_journal's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/read-journal.ts). */
import { defineSkillMeta } from "../define.ts";

/** syslog priorities in numeric order (0 = emerg). */
export const PRIORITIES = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"] as const;

/** A systemd unit name or glob (nginx, nginx.service, getty@tty1.service, docker-*.scope); never starts with "-". */
export const UNIT_PATTERN = "^[A-Za-z0-9_][A-Za-z0-9:_.@*\\\\-]{0,254}$";

/** What since and until accept: now, today, yesterday, an ISO date/time, or a relative time such as "1h ago", "2 days ago", "-30min". */
export const SINCE_PATTERN =
  "^(?:now|today|yesterday|\\d{4}-\\d{2}-\\d{2}(?:[ T]\\d{2}:\\d{2}(?::\\d{2}(?:\\.\\d{1,6})?)?)?(?:Z|[+-]\\d{2}:?\\d{2})?|-?(?:\\d{1,6} ?[a-z]{1,7} ?){1,4}(?:ago)?)$";

export const READ_JOURNAL = defineSkillMeta({
  key: "read_journal",
  name: "Read the systemd journal",
  description:
    "Return the newest systemd journal entries on this host (time, unit, priority, pid, message), filtered by unit, time window (since, until), minimum priority and a regular expression. Use when diagnosing a systemd service that failed, restarted or logs errors, before restarting it. Fails with journal_unavailable on hosts without journald; use tail_file there.",
  class: "safe",
  scope: "host",
  category: "logs",
  params: {
    unit: { type: "string", description: "systemd unit to read, e.g. nginx or nginx.service; globs like docker-* work.", min: 1, max: 255, pattern: UNIT_PATTERN },
    since: { type: "string", description: 'Only entries from this time on: "1h ago", "30min ago", "2 days ago", "today", "yesterday" or an ISO time.', min: 1, max: 40, pattern: SINCE_PATTERN },
    until: { type: "string", description: 'Only entries up to this time (same forms as since), so lines gives the newest entries of a past window, e.g. since "2025-01-31T13:00:00Z", until "2025-01-31T14:00:00Z".', min: 1, max: 40, pattern: SINCE_PATTERN },
    priority: { type: "enum", description: "Only entries of this priority or more severe.", values: PRIORITIES },
    lines: { type: "integer", description: "How many of the newest matching entries to return (the newest up to until, when given).", min: 1, max: 2000, default: 200 },
    grep: { type: "string", description: "Regular expression the message must match (journalctl --grep); case-insensitive unless it contains an uppercase letter.", min: 1, max: 512 },
  },
  resultPreview: JSON.stringify({
    unit: "nginx.service",
    since: "2025-01-31T13:00:00.000Z",
    until: "2025-01-31T14:00:00.000Z",
    entries: [{ time: "2025-01-31T13:58:01.123Z", unit: "nginx.service", identifier: "nginx", priority: "err", pid: 812, message: "upstream timed out (110: Connection timed out)" }],
    returned: 1,
  }),
});
