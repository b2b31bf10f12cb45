/** Placeholders in fallback step arguments ({{url}}, {{host}}, {{port}}, {{unit}}, {{path}}) and filling them. */
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
