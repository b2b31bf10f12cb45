/** query_logql (K3): a LogQL query against the configured Loki; log lines merged across streams, metric results condensed. */
import { SkillError } from "../../../../skill/errors.ts";
import { parseDuration } from "../../../../skill/duration.ts";
import { createLokiClient, type LokiData, type LokiDirection, type LokiStream } from "../../../observability/loki.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { condenseResult } from "./series.ts";
import { isoOfNanos, parseTime, parseWindow, timeSchema } from "./time.ts";

/** Characters kept of one log line. */
export const MAX_LINE_CHARS = 1000;
/** Series kept of a metric query's result. */
const MAX_SERIES = 100;
const DEFAULT_SPAN_MS = 3_600_000;

interface Params {
  query: string;
  time?: string;
  start?: string;
  end?: string;
  limit: number;
  direction: LokiDirection;
}

/** Cuts a line to MAX_LINE_CHARS, saying how much was dropped. */
function cutLine(line: string): string {
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… [+${line.length - MAX_LINE_CHARS} chars]` : line;
}

/** Streams merged into one list ordered by time (newest first when backward), each line naming its stream. */
export function condenseStreams(streams: LokiStream[], limit: number, direction: LokiDirection) {
  const lines: Array<{ ns: bigint; stream: number; line: string }> = [];
  streams.forEach((s, i) => {
    for (const [ts, line] of s.values ?? []) {
      let ns: bigint;
      try {
        ns = BigInt(ts);
      } catch {
        ns = 0n;
      }
      lines.push({ ns, stream: i, line: String(line) });
    }
  });
  lines.sort((a, b) => (a.ns === b.ns ? 0 : (a.ns < b.ns) === (direction === "forward") ? -1 : 1));
  const kept = lines.slice(0, limit);
  return {
    result_type: "streams",
    streams: streams.map((s, i) => ({ id: i, labels: s.stream ?? {}, lines: (s.values ?? []).length })),
    lines_total: lines.length,
    lines_returned: kept.length,
    limit_reached: lines.length >= limit,
    lines: kept.map((l) => ({ at: isoOfNanos(l.ns.toString()), stream: l.stream, line: cutLine(l.line) })),
  };
}

function condense(data: LokiData, limit: number, direction: LokiDirection) {
  const summary = (data.stats as { summary?: { totalBytesProcessed?: number; execTime?: number } } | undefined)?.summary;
  const stats = summary ? { stats: { bytes_processed: summary.totalBytesProcessed ?? null, exec_seconds: summary.execTime ?? null } } : {};
  if (data.resultType === "streams") return { ...condenseStreams((data.result as LokiStream[]) ?? [], limit, direction), ...stats };
  return { ...condenseResult(data, MAX_SERIES), ...stats };
}

/** Builds query_logql over the manager's Loki settings. */
export function createQueryLogql(deps: Pick<BaseToolDeps, "config">) {
  const { loki_url, timeout } = deps.config.observability;
  const loki = createLokiClient({ baseUrl: loki_url, timeoutMs: parseDuration(timeout) });
  return defineBaseTool<Params>({
    key: "query_logql",
    name: "Query Loki (LogQL)",
    description:
      'Run a LogQL query against the configured Loki: a log query ({app="api"} |= "error") returns the matching lines of every stream merged by time, newest first unless direction is forward; a metric query (sum by (level) (count_over_time({app="api"}[5m]))) returns series. Use when a diagnosis needs logs across hosts and services, over a window (start/end, default the last hour) or at one instant (time).',
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      required: ["query"],
      properties: {
        query: { type: "string", minLength: 1, maxLength: 5000, description: 'The LogQL query, e.g. {namespace="shop", app="api"} |= "timeout" | logfmt | level="error".' },
        time: timeSchema("Evaluate at this instant (Loki's /query, for metric queries); not with start/end."),
        start: timeSchema("Start of the window (default: end minus 1 hour)."),
        end: timeSchema("End of the window (default now)."),
        limit: { type: "integer", minimum: 1, maximum: 5000, default: 100, description: "At most this many log lines (over all streams)." },
        direction: { type: "string", enum: ["backward", "forward"], default: "backward", description: "backward: newest lines first; forward: oldest first." },
      },
    },
    resultPreview: {
      query: '{app="api"} |= "timeout"',
      kind: "range",
      start: "2025-01-31T09:00:00.000Z",
      end: "2025-01-31T10:00:00.000Z",
      result_type: "streams",
      streams: [{ id: 0, labels: { app: "api", host: "web-3", level: "error" }, lines: 1 }],
      lines_total: 1,
      lines_returned: 1,
      limit_reached: false,
      lines: [{ at: "2025-01-31T09:58:12.345Z", stream: 0, line: "level=error msg=\"upstream timeout\" upstream=10.0.0.7:8080" }],
    },
    async execute(ctx, p) {
      const now = new Date();
      if (p.time !== undefined) {
        if (p.start !== undefined || p.end !== undefined) throw new SkillError("invalid_argument", "time is for an instant query; a window takes start and end", "Give either time, or start/end.");
        const time = parseTime(p.time, "time", now);
        const data = await loki.query({ query: p.query, time, limit: p.limit, direction: p.direction }, ctx.signal);
        return { query: p.query, kind: "instant", time: time.toISOString(), ...condense(data, p.limit, p.direction) };
      }
      const { start, end } = parseWindow(p, DEFAULT_SPAN_MS, now);
      const data = await loki.queryRange({ query: p.query, start, end, limit: p.limit, direction: p.direction }, ctx.signal);
      return { query: p.query, kind: "range", start: start.toISOString(), end: end.toISOString(), ...condense(data, p.limit, p.direction) };
    },
  });
}
