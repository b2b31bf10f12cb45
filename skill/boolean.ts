/** The words a boolean setting may be written as (config files, flags and environment variables). */

/** true/1/yes → true, false/0/no → false (any case, surrounding blanks ignored); anything else → undefined. */
export function parseBoolean(raw: string): boolean | undefined {
  const v = raw.trim().toLowerCase();
  if (v === "true" || v === "1" || v === "yes") return true;
  if (v === "false" || v === "0" || v === "no") return false;
  return undefined;
}
