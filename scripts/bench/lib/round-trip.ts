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

/**
 * Like timeSequential for several calls compared with each other: `warmup` rounds untimed, then
 * `n` rounds, each running every call once, one after another; returns each call's milliseconds
 * (one list per call). Interleaving spreads drift in the machine's load evenly over the calls.
 */
export async function timeInterleaved(n: number, warmup: number, calls: ReadonlyArray<() => Promise<void>>): Promise<number[][]> {
  for (let i = 0; i < warmup; i++) for (const c of calls) await c();
  const out = calls.map(() => new Array<number>(n));
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < calls.length; k++) {
      const t0 = performance.now();
      await calls[k]!();
      out[k]![i] = performance.now() - t0;
    }
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

/**
 * One gRPC unary call on an open session, framed by hand (application/grpc, no compression):
 * resolves with the response message (its 5-byte frame header removed) and the call's
 * grpc-status and grpc-message, taken from the trailers (or from the headers of a
 * trailers-only answer).
 */
export function grpcUnary(session: http2.ClientHttp2Session, path: string, framed: Buffer, headers: Record<string, string> = {}): Promise<{ grpcStatus: number; grpcMessage: string; message: Buffer }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let message = "";
    const read = (h: http2.IncomingHttpHeaders) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      if (h["grpc-message"] !== undefined) message = decodeURIComponent(String(h["grpc-message"]));
    };
    stream.on("response", read);
    stream.on("trailers", read);
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const body = Buffer.concat(chunks);
      if (status === undefined) return reject(new Error("gRPC answer without grpc-status"));
      resolve({ grpcStatus: Number(status), grpcMessage: message, message: body.length >= 5 ? body.subarray(5, 5 + body.readUInt32BE(1)) : body });
    });
    stream.on("error", reject);
    stream.end(framed);
  });
}
