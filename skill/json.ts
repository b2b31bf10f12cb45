const MAX_DEPTH = 1000;

/**
 * Deep copy of `value` as plain JSON data, following JSON.stringify's rules so that whatever a
 * skill returns can be redacted, truncated, stored and sent without a serialisation failure later:
 * bigint → decimal string; Date → ISO string (an invalid Date → null); toJSON() is honoured; boxed
 * primitives are unboxed; non-finite numbers → null; undefined, functions and symbols are dropped
 * from objects and become null in arrays; symbol keys are dropped. Unlike JSON.stringify it never
 * throws on shape: a cycle becomes "[Circular]", nesting deeper than 1000 levels "[nested too deep]",
 * and an Error {name, message}. Returns undefined only when the value itself is undefined, a
 * function or a symbol.
 */
export function toPlainJson(value: unknown): unknown {
  return plain(value, "", new Set(), 0);
}

function plain(v: unknown, key: string, stack: Set<object>, depth: number): unknown {
  // Called once per level, as JSON.stringify does; a chain of toJSON results is bounded by MAX_DEPTH below.
  if (typeof v === "object" && v !== null && !(v instanceof Date) && typeof (v as { toJSON?: unknown }).toJSON === "function") {
    v = (v as { toJSON(key: string): unknown }).toJSON(key);
  }
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      return Number.isFinite(v) ? (Object.is(v, -0) ? 0 : v) : null;
    case "bigint":
      return v.toString();
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (v === null) return null;
  const obj = v as object;
  if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? null : obj.toISOString();
  if (obj instanceof Number || obj instanceof String || obj instanceof Boolean) return plain(obj.valueOf(), key, stack, depth);
  if (obj instanceof BigInt) return obj.valueOf().toString();
  if (depth >= MAX_DEPTH) return "[nested too deep]";
  if (stack.has(obj)) return "[Circular]";
  stack.add(obj);
  try {
    if (Array.isArray(obj)) {
      return obj.map((item, i) => {
        const out = plain(item, String(i), stack, depth + 1);
        return out === undefined ? null : out;
      });
    }
    if (obj instanceof Error) return { name: String(obj.name), message: String(obj.message) };
    const entries: [string, unknown][] = [];
    for (const k of Object.keys(obj)) {
      const out = plain((obj as Record<string, unknown>)[k], k, stack, depth + 1);
      if (out !== undefined) entries.push([k, out]);
    }
    return Object.fromEntries(entries);
  } finally {
    stack.delete(obj);
  }
}
