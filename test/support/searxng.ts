/** A real HTTP server on loopback that answers like SearXNG's JSON API, for web_search tests. */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** A running fake SearXNG: its search URL, the queries it saw, and a way to stop it. */
export interface FakeSearx {
  url: string;
  queries: URLSearchParams[];
  /** Replace the answer for later requests. */
  respond: (fn: (q: URLSearchParams) => { status: number; body: string }) => void;
  close(): Promise<void>;
}

/** Starts the server; by default it returns `n` results echoing the query. */
export async function startFakeSearx(): Promise<FakeSearx> {
  const queries: URLSearchParams[] = [];
  let responder = (q: URLSearchParams) => ({
    status: q.get("format") === "json" ? 200 : 403,
    body: JSON.stringify({
      query: q.get("q"),
      number_of_results: 3,
      results: [1, 2, 3].map((i) => ({
        title: `Result ${i} for ${q.get("q")}`,
        url: `https://example.invalid/${i}`,
        content: `snippet ${i}`,
        engine: "fake",
      })),
      answers: [],
    }),
  });
  const server = http.createServer((req, res) => {
    const q = new URL(req.url ?? "/", "http://x").searchParams;
    queries.push(q);
    const r = responder(q);
    res.writeHead(r.status, { "content-type": "application/json" });
    res.end(r.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/search`,
    queries,
    respond: (fn) => {
      responder = fn;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
