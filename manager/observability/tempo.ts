/**
 * A small client of Tempo's HTTP query API: TraceQL search (/api/search?q=…) and a trace by id
 * (/api/traces/<id>, asked for as JSON: Tempo answers protobuf otherwise).
 */
import { SkillError } from "../../skill/errors.ts";
import { backend, getJson } from "./http.ts";

/** An OTLP attribute as Tempo's JSON carries it. */
export interface OtlpAttribute {
  key: string;
  value?: Record<string, unknown>;
}

/** One trace of a search answer. */
export interface TempoTraceHit {
  traceID: string;
  rootServiceName?: string;
  rootTraceName?: string;
  startTimeUnixNano?: string;
  durationMs?: number;
  spanSet?: TempoSpanSet;
  spanSets?: TempoSpanSet[];
}

/** Spans of a trace that matched the query. */
export interface TempoSpanSet {
  spans?: Array<{ spanID: string; name?: string; startTimeUnixNano?: string; durationNanos?: string; attributes?: OtlpAttribute[] }>;
  matched?: number;
  attributes?: OtlpAttribute[];
}

/** A search answer. */
export interface TempoSearch {
  traces?: TempoTraceHit[];
  metrics?: Record<string, unknown>;
}

/** A trace as OTLP JSON: `batches` (Tempo's /api/traces) or `resourceSpans`. */
export interface OtlpTrace {
  batches?: OtlpResourceSpans[];
  resourceSpans?: OtlpResourceSpans[];
}

/** Spans of one resource (service). */
export interface OtlpResourceSpans {
  resource?: { attributes?: OtlpAttribute[] };
  scopeSpans?: Array<{ scope?: { name?: string }; spans?: OtlpSpan[] }>;
  /** The pre-1.0 OTLP name of scopeSpans, still in older Tempo answers. */
  instrumentationLibrarySpans?: Array<{ spans?: OtlpSpan[] }>;
}

/** One span; ids are base64 in Tempo's JSON (protobuf bytes), hex in some other producers. */
export interface OtlpSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  kind?: string | number;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  attributes?: OtlpAttribute[];
  status?: { code?: string | number; message?: string };
}

/** The client. */
export interface TempoClient {
  search(q: { query: string; start: Date; end: Date; limit: number; spansPerSet: number }, signal?: AbortSignal): Promise<TempoSearch>;
  trace(traceId: string, signal?: AbortSignal): Promise<OtlpTrace>;
}

const seconds = (d: Date) => String(Math.floor(d.getTime() / 1000));

/** Builds a client for `baseUrl` (empty: every call fails with not_configured). */
export function createTempoClient(opts: { baseUrl: string; timeoutMs: number }): TempoClient {
  const b = backend("Tempo", opts.baseUrl, "observability.tempo_url (ONGRID_TEMPO_URL)", opts.timeoutMs);
  return {
    search: (q, signal) =>
      getJson<TempoSearch>(b, "/api/search", { q: q.query, start: seconds(q.start), end: seconds(q.end), limit: String(q.limit), spss: String(q.spansPerSet) }, { signal }),
    trace: (traceId, signal) =>
      getJson<OtlpTrace>(b, `/api/traces/${encodeURIComponent(traceId)}`, {}, {
        signal,
        onStatus(status) {
          if (status === 404) throw new SkillError("not_found", `Tempo has no trace ${traceId}`, "Check the id (hex, as in logs and the search results), or whether the trace is older than Tempo's retention.");
        },
      }),
  };
}
