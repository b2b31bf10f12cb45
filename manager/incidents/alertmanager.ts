/**
 * Alertmanager's webhook payload (version 4), checked field by field: a refusal names the field
 * and the rule, like every other validation in ongrid. Only what incidents keep is read.
 */
import { OngridError } from "../../skill/errors.ts";
import { calendarProblem } from "./time.ts";

/** One alert as the incidents store takes it. */
export interface AlertIn {
  status: "firing" | "resolved";
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: Date;
  /** Undefined when Alertmanager sent none (or its zero time, 0001-01-01). */
  endsAt?: Date;
  generatorUrl: string;
  fingerprint: string;
}

/** Most alerts one post may carry (Alertmanager's max_alerts can bound it on its side). */
export const MAX_ALERTS = 1000;
const MAX_LABELS = 64;
const MAX_VALUE_CHARS = 4096;

const bad = (field: string, what: string, rule: string) =>
  new OngridError("invalid_argument", `${field}: ${what} (rule: ${rule})`, "Send Alertmanager's webhook payload (version 4) as it is: point a webhook_configs receiver at /hooks/alertmanager.");

/** RFC 3339 time; Go's zero time (0001-01-01…) means "not set". */
function time(v: unknown, field: string, required: boolean): Date | undefined {
  if (v === undefined || v === null || v === "") {
    if (required) throw bad(field, "is required", "required");
    return undefined;
  }
  if (typeof v !== "string" || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/.test(v)) throw bad(field, "must be an RFC 3339 time", "format date-time");
  if (v.startsWith("0001-01-01")) {
    if (required) throw bad(field, "is the zero time", "required");
    return undefined;
  }
  // Date would roll an impossible date over (2025-02-30 → March 2): refuse it, saying what is wrong.
  const impossible = calendarProblem(v);
  if (impossible) throw bad(field, `is not a real date and time: ${impossible}`, "format date-time");
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw bad(field, "must be an RFC 3339 time", "format date-time");
  return d;
}

function stringMap(v: unknown, field: string, required: boolean): Record<string, string> {
  if (v === undefined || v === null) {
    if (required) throw bad(field, "is required", "required");
    return {};
  }
  if (typeof v !== "object" || Array.isArray(v)) throw bad(field, "must be an object of strings", "type object");
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_LABELS) throw bad(field, `has ${entries.length} entries, more than ${MAX_LABELS}`, "maxProperties");
  for (const [k, val] of entries) {
    if (typeof val !== "string") throw bad(`${field}.${k.slice(0, 64)}`, "must be a string", "type string");
    if (val.length > MAX_VALUE_CHARS) throw bad(`${field}.${k.slice(0, 64)}`, `is longer than ${MAX_VALUE_CHARS} characters`, "maxLength");
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Checks a decoded payload and returns its alerts. */
export function parseAlertmanagerPayload(body: unknown): AlertIn[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw bad("body", "must be a JSON object", "type object");
  const p = body as Record<string, unknown>;
  if (p.version !== undefined && p.version !== "4") throw bad("version", `is ${JSON.stringify(p.version).slice(0, 20)}; only "4" is understood`, "const 4");
  if (p.alerts === undefined) throw bad("alerts", "is required", "required");
  if (!Array.isArray(p.alerts)) throw bad("alerts", "must be an array", "type array");
  if (p.alerts.length > MAX_ALERTS) throw bad("alerts", `has ${p.alerts.length} items, more than ${MAX_ALERTS}`, "maxItems");
  return p.alerts.map((raw, i) => {
    const f = `alerts[${i}]`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw bad(f, "must be an object", "type object");
    const a = raw as Record<string, unknown>;
    if (a.status === undefined) throw bad(`${f}.status`, "is required", "required");
    if (a.status !== "firing" && a.status !== "resolved") throw bad(`${f}.status`, `is ${JSON.stringify(a.status).slice(0, 40)}`, "enum firing|resolved");
    if (a.fingerprint === undefined || a.fingerprint === "") throw bad(`${f}.fingerprint`, "is required", "required");
    if (typeof a.fingerprint !== "string" || !/^[A-Za-z0-9_.:-]{1,128}$/.test(a.fingerprint)) throw bad(`${f}.fingerprint`, "must be Alertmanager's fingerprint (1-128 letters, digits, _.:-)", "pattern");
    const labels = stringMap(a.labels, `${f}.labels`, true);
    const generatorUrl = a.generatorURL ?? "";
    if (typeof generatorUrl !== "string" || generatorUrl.length > MAX_VALUE_CHARS) throw bad(`${f}.generatorURL`, `must be a string of at most ${MAX_VALUE_CHARS} characters`, "type string");
    return {
      status: a.status,
      labels,
      annotations: stringMap(a.annotations, `${f}.annotations`, false),
      startsAt: time(a.startsAt, `${f}.startsAt`, true)!,
      endsAt: time(a.endsAt, `${f}.endsAt`, false),
      generatorUrl,
      fingerprint: a.fingerprint,
    };
  });
}

/**
 * Names an alert may give its host by, most specific first: the "edge" label, the "instance"
 * label without its port (also [v6]:port), and the "host" label.
 */
export function edgeCandidates(labels: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  if (labels.edge) out.push(labels.edge);
  if (labels.instance) {
    const inst = labels.instance.trim();
    const v6 = /^\[([^\]]+)\](?::\d+)?$/.exec(inst);
    out.push(v6 ? v6[1] : inst.replace(/:\d+$/, ""));
  }
  if (labels.host) out.push(labels.host);
  return [...new Set(out.filter(Boolean))];
}

/** PromQL expressions in a Prometheus generatorURL (…/graph?g0.expr=…&g1.expr=…); none when it has none. */
export function exprsFromGeneratorUrl(url: string): string[] {
  if (!url) return [];
  try {
    const u = new URL(url);
    return [...u.searchParams.entries()].filter(([k, v]) => /^g\d+\.expr$/.test(k) && v.trim() !== "").map(([, v]) => v.trim());
  } catch {
    return [];
  }
}
