/** query_traceql (K3): a TraceQL search, or one trace by id, against the configured Tempo, condensed for a model. */
import { SkillError } from "../../../../skill/errors.ts";
import { parseDuration } from "../../../../skill/duration.ts";
import { createTempoClient, type OtlpAttribute, type OtlpSpan, type OtlpTrace, type TempoSearch } from "../../../observability/tempo.ts";
import { defineBaseTool } from "../../define.ts";
import type { BaseToolDeps } from "../../deps.ts";
import { isoOfNanos, parseWindow, timeSchema } from "./time.ts";

/** Spans listed of one trace; the count of all is reported. */
export const MAX_TRACE_SPANS = 200;
/** Matched spans Tempo returns per span set (its spss), and listed per trace of a search. */
const SPANS_PER_SET = 3;
const MAX_MATCHED_SPANS = 5;
/** Attributes listed per span. */
const MAX_ATTRIBUTES = 12;
const DEFAULT_SPAN_MS = 3_600_000;

interface Params {
  query?: string;
  trace_id?: string;
  start?: string;
  end?: string;
  limit: number;
}

/** An OTLP attribute value as plain JSON. */
function plainValue(v: Record<string, unknown> | undefined): unknown {
  if (!v) return null;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("arrayValue" in v) return ((v.arrayValue as { values?: Array<Record<string, unknown>> })?.values ?? []).map(plainValue);
  if ("kvlistValue" in v) return attributes((v.kvlistValue as { values?: OtlpAttribute[] })?.values);
  return null;
}

/** OTLP attributes as an object, at most MAX_ATTRIBUTES of them. */
function attributes(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).slice(0, MAX_ATTRIBUTES).map((a) => [a.key, plainValue(a.value)]));
}

/** A span or trace id as lowercase hex: Tempo's JSON carries protobuf bytes as base64. */
export function hexId(id: string | undefined): string {
  if (!id) return "";
  if (/^[0-9a-f]+$/i.test(id) && (id.length === 16 || id.length === 32)) return id.toLowerCase();
  return Buffer.from(id, "base64").toString("hex");
}

/** Nanoseconds (a decimal string) as milliseconds with three decimals; 0 when absent or not a number. */
function ms(nanos: string | undefined): number {
  try {
    return nanos ? Math.max(0, Number(BigInt(nanos) / 1000n) / 1000) : 0;
  } catch {
    return 0;
  }
}

/** A nanosecond epoch string as a bigint; 0 when absent or not a number. */
function big(nanos: string | undefined): bigint {
  try {
    return BigInt(nanos ?? "0");
  } catch {
    return 0n;
  }
}

function condenseSearch(res: TempoSearch) {
  const traces = (res.traces ?? []).map((t) => {
    const sets = t.spanSets ?? (t.spanSet ? [t.spanSet] : []);
    const spans = sets.flatMap((s) => s.spans ?? []);
    return {
      trace_id: t.traceID,
      root_service: t.rootServiceName ?? "",
      root_name: t.rootTraceName ?? "",
      start: isoOfNanos(t.startTimeUnixNano),
      duration_ms: t.durationMs ?? 0,
      matched: sets.reduce((n, s) => n + (s.matched ?? (s.spans ?? []).length), 0),
      spans: spans.slice(0, MAX_MATCHED_SPANS).map((s) => ({
        span_id: s.spanID,
        ...(s.name ? { name: s.name } : {}),
        start: isoOfNanos(s.startTimeUnixNano),
        duration_ms: ms(s.durationNanos),
        attributes: attributes(s.attributes),
      })),
    };
  });
  const m = res.metrics ?? {};
  return { traces_returned: traces.length, traces, metrics: { inspected_traces: m.inspectedTraces ?? null, inspected_bytes: m.inspectedBytes ?? null } };
}

const STATUS: Record<string, string> = { "0": "unset", "1": "ok", "2": "error", STATUS_CODE_UNSET: "unset", STATUS_CODE_OK: "ok", STATUS_CODE_ERROR: "error" };
const KIND: Record<string, string> = { "1": "internal", "2": "server", "3": "client", "4": "producer", "5": "consumer" };

function condenseTrace(traceId: string, trace: OtlpTrace) {
  const rows: Array<{ span: OtlpSpan; service: string }> = [];
  for (const rs of trace.batches ?? trace.resourceSpans ?? []) {
    const service = String(attributes(rs.resource?.attributes)["service.name"] ?? "");
    for (const ss of [...(rs.scopeSpans ?? []), ...(rs.instrumentationLibrarySpans ?? [])]) for (const span of ss.spans ?? []) rows.push({ span, service });
  }
  if (!rows.length) throw new SkillError("not_found", `Tempo has no spans for trace ${traceId}`, "Check the id, or whether the trace is older than Tempo's retention.");
  rows.sort((a, b) => (big(a.span.startTimeUnixNano) < big(b.span.startTimeUnixNano) ? -1 : 1));
  const spans = rows.map(({ span, service }) => {
    const status = STATUS[String(span.status?.code ?? "0")] ?? "unset";
    const kind = String(span.kind ?? "");
    return {
      span_id: hexId(span.spanId),
      parent_span_id: hexId(span.parentSpanId),
      service,
      name: span.name ?? "",
      kind: KIND[kind] ?? kind.replace(/^SPAN_KIND_/, "").toLowerCase(),
      start: isoOfNanos(span.startTimeUnixNano),
      duration_ms: ms(String(big(span.endTimeUnixNano) - big(span.startTimeUnixNano))),
      status,
      ...(span.status?.message ? { status_message: span.status.message } : {}),
      attributes: attributes(span.attributes),
    };
  });
  const first = big(rows[0]!.span.startTimeUnixNano);
  const last = rows.reduce((m, r) => (big(r.span.endTimeUnixNano) > m ? big(r.span.endTimeUnixNano) : m), first);
  return {
    trace_id: traceId,
    start: isoOfNanos(first.toString()),
    duration_ms: ms(String(last - first)),
    services: [...new Set(spans.map((s) => s.service).filter(Boolean))],
    error_spans: spans.filter((s) => s.status === "error").length,
    spans_total: spans.length,
    spans_returned: Math.min(spans.length, MAX_TRACE_SPANS),
    // Error spans first so a cut never hides them; then by start time.
    spans: [...spans.filter((s) => s.status === "error"), ...spans.filter((s) => s.status !== "error")].slice(0, MAX_TRACE_SPANS),
  };
}

/** Builds query_traceql over the manager's Tempo settings. */
export function createQueryTraceql(deps: Pick<BaseToolDeps, "config">) {
  const { tempo_url, timeout } = deps.config.observability;
  const tempo = createTempoClient({ baseUrl: tempo_url, timeoutMs: parseDuration(timeout) });
  return defineBaseTool<Params>({
    key: "query_traceql",
    name: "Query Tempo (TraceQL)",
    description:
      'Search traces in the configured Tempo with a TraceQL query ({ resource.service.name = "api" && status = error }), over a window (start/end, default the last hour), or fetch one trace by trace_id. Use when a diagnosis needs the path of slow or failing requests across services: search returns matching traces with their root service and matched spans; a trace returns its spans (errors first) with service, duration, status and attributes.',
    class: "safe",
    category: "observability",
    schema: {
      type: "object",
      additionalProperties: false,
      properties: {
        query: { type: "string", minLength: 1, maxLength: 5000, description: 'The TraceQL query, e.g. { span.http.status_code >= 500 } or { duration > 2s && resource.service.name = "checkout" }. Not with trace_id.' },
        trace_id: { type: "string", pattern: "^[0-9a-fA-F]{1,32}$", description: "Fetch this one trace (hex id, as logs and search results show it) instead of searching." },
        start: timeSchema("Start of the search window (default: end minus 1 hour)."),
        end: timeSchema("End of the search window (default now)."),
        limit: { type: "integer", minimum: 1, maximum: 100, default: 20, description: "At most this many traces from a search." },
      },
    },
    resultPreview: {
      query: "{ status = error }",
      start: "2025-01-31T09:00:00.000Z",
      end: "2025-01-31T10:00:00.000Z",
      traces_returned: 1,
      traces: [
        {
          trace_id: "2f3e0cee77ae5dc9c17ade3689eb2e54",
          root_service: "shop-backend",
          root_name: "POST /checkout",
          start: "2025-01-31T09:58:47.699Z",
          duration_ms: 557,
          matched: 1,
          spans: [{ span_id: "563d623c76514f8e", start: "2025-01-31T09:58:47.735Z", duration_ms: 446.979, attributes: { status: "error" } }],
        },
      ],
      metrics: { inspected_traces: 1264, inspected_bytes: "2101984" },
    },
    async execute(ctx, p) {
      if (p.trace_id !== undefined) {
        if (p.query !== undefined || p.start !== undefined || p.end !== undefined) throw new SkillError("invalid_argument", "trace_id fetches one trace; query, start and end belong to a search", "Give either trace_id, or query (with start/end).");
        const id = p.trace_id.toLowerCase().padStart(32, "0");
        return condenseTrace(id, await tempo.trace(id, ctx.signal));
      }
      if (p.query === undefined) throw new SkillError("invalid_argument", "give query (a TraceQL search) or trace_id (one trace)", 'For example query: { resource.service.name = "api" && status = error }.');
      const { start, end } = parseWindow(p, DEFAULT_SPAN_MS, new Date());
      const res = await tempo.search({ query: p.query, start, end, limit: p.limit, spansPerSet: SPANS_PER_SET }, ctx.signal);
      return { query: p.query, start: start.toISOString(), end: end.toISOString(), ...condenseSearch(res) };
    },
  });
}
