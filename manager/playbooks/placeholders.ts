/** Placeholders in fallback step arguments ({{url}}, {{host}}, {{port}}, {{unit}}, {{path}}) and filling them. */
import { isIP } from "node:net";
import type { PLACEHOLDERS } from "./parse.ts";

/** Values for the placeholders; a missing one skips the steps that need it. */
export type PlaceholderValues = Partial<Record<(typeof PLACEHOLDERS)[number], string | number>>;

const WHOLE = /^\{\{\s*([a-z]+)\s*\}\}$/;
const ANY = /\{\{\s*([a-z]+)\s*\}\}/g;

/**
 * Fills the placeholders of a step's arguments. A string that is exactly one placeholder takes the
 * value with its type ({{port}} stays a number); inside a longer string the value is text.
 * Answers the names without a value instead when any is missing.
 */
export function fillPlaceholders(args: Record<string, unknown>, values: PlaceholderValues): { args: Record<string, unknown> } | { missing: string[] } {
  const missing = new Set<string>();
  const get = (name: string) => {
    const v = values[name as keyof PlaceholderValues];
    if (v === undefined || v === "") missing.add(name);
    return v;
  };
  const fill = (value: unknown): unknown => {
    if (typeof value === "string") {
      const whole = WHOLE.exec(value);
      if (whole) return get(whole[1]);
      return value.replace(ANY, (_, name: string) => String(get(name) ?? ""));
    }
    if (Array.isArray(value)) return value.map(fill);
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
    return value;
  };
  const filled = fill(args) as Record<string, unknown>;
  return missing.size ? { missing: [...missing].sort() } : { args: filled };
}

const URL_RE = /\bhttps?:\/\/[^\s"'<>)\]]+/i;
const HOST_PORT_RE = /\b((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})\b/i;
const IP_RE = /\b\d{1,3}(?:\.\d{1,3}){3}\b/;
const FQDN_RE = /\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\b/i;
const PORT_WORD_RE = /\bport\s*[:=]?\s*(\d{1,5})\b|端口\s*[:：]?\s*(\d{1,5})/i;
const UNIT_RE = /\b([a-zA-Z0-9][a-zA-Z0-9@._-]{0,200}\.(?:service|socket|timer|mount))\b/;
const PATH_RE = /(?:^|[\s"'=(（:：])(\/(?:[\w.@-]+\/)*[\w.@-]+)/;
/** Names that look like host names but are files or units. */
const NOT_A_HOST = /\.(service|socket|timer|mount|log|conf|json|ya?ml|txt|sh|py|js|ts|go)$/i;

/**
 * Fills what it can from an alert text, deterministically: the first URL; host and port from
 * the URL, a host:port pair, "port N", an IP or a dotted host name; a systemd unit ending in
 * .service/.socket/.timer/.mount; an absolute path. Nothing is guessed beyond these patterns.
 */
export function extractPlaceholders(text: string): PlaceholderValues {
  const out: PlaceholderValues = {};
  const url = URL_RE.exec(text)?.[0]?.replace(/[.,;:!?]+$/, "");
  if (url) {
    out.url = url;
    try {
      const u = new URL(url);
      out.host = u.hostname.replace(/^\[|\]$/g, "");
      out.port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
    } catch {
      // Not a URL after all: the patterns below may still find a host.
    }
  }
  const withoutUrl = url ? text.replace(url, " ") : text;
  // "[FIRING:1]" and "12:30" are not host:port: skip all-capital words and bare numbers.
  const hp = [...withoutUrl.matchAll(new RegExp(HOST_PORT_RE, "gi"))].find((m) => Number(m[2]) >= 1 && Number(m[2]) <= 65535 && !/^\d+$/.test(m[1]) && !/^[A-Z_]+$/.test(m[1]));
  if (hp) {
    out.host ??= hp[1];
    out.port ??= Number(hp[2]);
  }
  const pw = PORT_WORD_RE.exec(withoutUrl);
  if (pw) {
    const n = Number(pw[1] ?? pw[2]);
    if (n >= 1 && n <= 65535) out.port ??= n;
  }
  if (!out.host) {
    const fqdn = [...withoutUrl.matchAll(new RegExp(FQDN_RE, "gi"))].map((m) => m[0]).find((h) => !NOT_A_HOST.test(h));
    out.host = IP_RE.exec(withoutUrl)?.[0] ?? fqdn;
    if (!out.host) delete out.host;
  }
  const unit = UNIT_RE.exec(text)?.[1];
  if (unit) out.unit = unit;
  const path = PATH_RE.exec(withoutUrl)?.[1];
  if (path && path.length > 1) out.path = path;
  return out;
}

/**
 * Why a step's `when` does not hold for these values (a step of probe_dns with when: {host: name}
 * and the host 127.0.0.1), or undefined when it holds. A placeholder without a value is left to
 * fillPlaceholders, which names it as missing.
 */
export function unmetCondition(when: Partial<Record<string, "name" | "ip">> | undefined, values: PlaceholderValues): string | undefined {
  for (const [name, kind] of Object.entries(when ?? {})) {
    const v = values[name as keyof PlaceholderValues];
    if (v === undefined || v === "") continue;
    const ip = isIP(String(v).replace(/^\[|\]$/g, "")) !== 0;
    if (kind === "name" && ip) return `{{${name}}} is the IP literal ${String(v).slice(0, 64)}: there is no name to resolve (when: ${name}: name)`;
    if (kind === "ip" && !ip) return `{{${name}}} is ${String(v).slice(0, 64)}, not an IP literal (when: ${name}: ip)`;
  }
  return undefined;
}
