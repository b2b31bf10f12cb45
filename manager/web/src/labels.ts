/** Labels as the admin forms show and take them: "env=prod, team=a". */

/** Labels as one line, "env=prod, team=a", sorted by key. */
export function labelsText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

/**
 * "env=prod, team=a" (commas or new lines) → { env: "prod", team: "a" }; a malformed pair or a
 * repeated key is an error naming the field. The manager checks keys and values again.
 */
export function parseLabels(text: string, field = "labels"): Record<string, string> {
  // A Map, not an object: a key like "__proto__" or "constructor" is only a key.
  const out = new Map<string, string>();
  for (const raw of text.split(/[,\n]/)) {
    const pair = raw.trim();
    if (!pair) continue;
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new Error(`${field}: "${pair}" is not key=value`);
    const key = pair.slice(0, eq).trim();
    if (out.has(key)) throw new Error(`${field}: key "${key}" is given twice`);
    out.set(key, pair.slice(eq + 1).trim());
  }
  return Object.fromEntries(out);
}
