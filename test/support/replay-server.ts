/**
 * A loopback HTTP server that answers with recorded responses of a backend's documented HTTP API
 * (Loki, Tempo, Prometheus) and records every request it got, for tests of the clients and tools.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** A request as the server saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  headers: http.IncomingHttpHeaders;
}

/** A recorded answer: a JSON value (sent as application/json) or text with its content type. */
export type Reply = { status?: number; json: unknown } | { status?: number; text: string; contentType?: string };

/** A running replay server. */
export interface ReplayServer {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

/** Starts a server answering each request with `answer(request)`; an unknown path answers 404 like the backends do. */
export async function startReplayServer(answer: (req: SeenRequest) => Reply | undefined): Promise<ReplayServer> {
  const requests: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://replay");
    const seen: SeenRequest = { method: req.method ?? "", path: url.pathname, params: Object.fromEntries(url.searchParams), headers: req.headers };
    requests.push(seen);
    const reply = answer(seen) ?? { status: 404, text: "404 page not found\n", contentType: "text/plain; charset=utf-8" };
    if ("json" in reply) {
      res.writeHead(reply.status ?? 200, { "content-type": "application/json" });
      res.end(JSON.stringify(reply.json));
    } else {
      res.writeHead(reply.status ?? 200, { "content-type": reply.contentType ?? "text/plain; charset=utf-8" });
      res.end(reply.text);
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
