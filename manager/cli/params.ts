/** `--param name=value` flags as typed params, by the skill's JSON Schema (skills run, skills classify). */
import { flagError } from "./common.ts";

/** Turns `--param k=v` strings into typed params using the skill's JSON Schema. */
export function coerceParams(pairs: string[], jsonSchema: { properties?: Record<string, { type?: string | string[] }> }): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) flagError("--param", `"${pair}" must look like name=value`);
    const name = pair.slice(0, eq);
    const raw = pair.slice(eq + 1);
    const t = jsonSchema.properties?.[name]?.type;
    const type = Array.isArray(t) ? t[0] : t;
    if ((type === "integer" || type === "number") && raw.trim() !== "" && !Number.isNaN(Number(raw))) out[name] = Number(raw);
    else if (type === "boolean" && (raw === "true" || raw === "false")) out[name] = raw === "true";
    else if (type === "array") out[name] = raw.startsWith("[") ? safeJson(raw, name) : raw === "" ? [] : raw.split(",");
    else if (type === "object") out[name] = safeJson(raw, name);
    else out[name] = raw;
  }
  return out;
}

function safeJson(raw: string, name: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return flagError("--param", `${name}: value is not valid JSON`);
  }
}
