/** analyze_output (J5): the seeds' ACI tool that condenses a long output deterministically, so a model never reads a 5 MB log. */
import { defineSkill } from "../../../skill/define.ts";
import { condense } from "../../agent/session/condense.ts";

export default defineSkill({
  key: "analyze_output",
  name: "Analyze output",
  description:
    "Condense a long text (a log, command output or another tool's JSON result) into line counts, the time range, the error and warning message patterns with counts and one example each, repeated messages folded, and the last distinct lines. Use when a tool output is long (more than a few thousand characters) or repetitive, before reasoning over it; pass focus to keep lines about one subject. Deterministic; no model is called.",
  class: "safe",
  scope: "manager",
  category: "analysis",
  params: {
    text: { type: "string", description: "The output to condense: plain lines or JSON (e.g. a tail_file or read_journal result).", required: true, min: 1, max: 6_000_000 },
    focus: { type: "string", description: "Keep lines containing any of these words (literal, case-insensitive, separated by spaces or commas), e.g. upstream 502.", min: 1, max: 200 },
    max_chars: { type: "integer", description: "Longest summary to return, in characters.", min: 500, max: 20_000, default: 4000 },
  },
  resultPreview: JSON.stringify({
    summary: "5242966 bytes, 58893 lines: 11 error, 1252 warning; …\n\n== errors: 1 patterns, 11 lines ==\n  11× <ts> ERROR db connection to <ip> refused …",
    stats: { bytes: 5242966, lines: 58893, errorLines: 11, warningLines: 1252, distinctLines: 6, foldedLines: 58893, timeRange: { first: "2025-01-31T10:00:00.000Z", last: "2025-01-31T14:05:23.000Z" } },
    patterns: [{ pattern: "<ts> ERROR db connection to <ip> refused (attempt <n>)", count: 11, example: "2025-01-31T10:20:49.750Z ERROR db connection to 10.0.0.1:5432 refused (attempt 1)", level: "error", first: "2025-01-31T10:20:49.750Z", last: "2025-01-31T13:49:09.750Z" }],
  }),
  async execute(_ctx, params) {
    return condense(params.text, { maxChars: params.max_chars, ...(params.focus !== undefined ? { focus: params.focus } : {}) });
  },
});
