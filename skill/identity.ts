/** Names shared by edge and manager: edge ids and labels, checked the same way on both sides. */

/** Edge ids: a lower-case DNS label, so the default (the host's name) fits. */
export const EDGE_ID_PATTERN = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;
/** Label keys (Kubernetes-like: letters, digits, . _ - /). */
export const LABEL_KEY_PATTERN = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,62}[A-Za-z0-9])?$/;
/** Label values (may be empty). */
export const LABEL_VALUE_PATTERN = /^[A-Za-z0-9._-]{0,63}$/;
/** At most this many labels per edge. */
export const MAX_LABELS = 64;

/** The edge id for this host's name: lower-cased, other characters replaced by dashes. */
export function edgeIdFromHostname(hostname: string): string {
  const id = hostname.toLowerCase().replace(/[^a-z0-9.-]/g, "-").replace(/^[-.]+|[-.]+$/g, "").slice(0, 63).replace(/[-.]+$/, "");
  return id || "edge";
}

/** The first problem with a label set, or undefined when it is valid. */
export function labelProblem(labels: Readonly<Record<string, string>>): string | undefined {
  const entries = Object.entries(labels);
  if (entries.length > MAX_LABELS) return `at most ${MAX_LABELS} labels, got ${entries.length}`;
  for (const [k, v] of entries) {
    if (!LABEL_KEY_PATTERN.test(k)) return `label key "${k.slice(0, 80)}" must match ${LABEL_KEY_PATTERN.source}`;
    if (!LABEL_VALUE_PATTERN.test(v)) return `label ${k}: value "${v.slice(0, 80)}" must match ${LABEL_VALUE_PATTERN.source}`;
  }
  return undefined;
}
