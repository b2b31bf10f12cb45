/** Command-line flags the benchmarks share. */

/** An integer flag value of at least `min`; anything else stops the bench naming the flag. */
export function intFlag(name: string, value: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: must be an integer >= ${min}, got "${value}"`);
  return n;
}
