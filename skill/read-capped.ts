/** Reads an HTTP response body up to a size cap: more is an error rather than unbounded memory. */

/** The body as text, at most `max` bytes; past the cap the body is cancelled and `tooBig()` thrown. */
export async function readCapped(res: Response, max: number, tooBig: () => Error): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw tooBig();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
