/** Sequential request timing: the ongrid Execute round trip and the bare node:http2 echo it is compared with. */
import type http2 from "node:http2";

/** Runs `call` `warmup` times untimed, then `n` times one after another; returns each call's milliseconds. */
export async function timeSequential(n: number, warmup: number, call: () => Promise<void>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await call();
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call();
    out[i] = performance.now() - t0;
  }
  return out;
}

/** One unary request on an open session: POST `path` with `body`, resolves with the response body. */
export function unary(session: http2.ClientHttp2Session, path: string, body: Buffer): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/octet-stream" });
    const chunks: Buffer[] = [];
    let status = 0;
    stream.on("response", (h) => (status = Number(h[":status"])));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve({ status, body: Buffer.concat(chunks) }));
    stream.on("error", reject);
    stream.end(body);
  });
}
