/** The driver's reason for a failed database call, without drizzle's "Failed query" wrapper. */
export function errorText(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    if (e instanceof AggregateError && e.errors.length > 0) e = e.errors[0];
    const msg = e instanceof Error ? e.message : String(e);
    const code = (e as { code?: unknown }).code;
    const text = msg.startsWith("Failed query:") ? "" : msg || (typeof code === "string" ? code : "");
    if (text && !parts.some((p) => p.includes(text))) parts.push(text);
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join(": ") || (err instanceof Error ? err.message.split("\n")[0]! : String(err));
}
