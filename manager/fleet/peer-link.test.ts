import http2 from "node:http2";
import net from "node:net";
import { fromBinary, toJson } from "@bufbuild/protobuf";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, test } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { LinkRequestSchema, LinkResponseSchema } from "../../proto/gen/ongrid/v1/peer_service_pb.ts";
import { FanOutEdgeResultSchema } from "../../proto/gen/ongrid/v1/skill_service_pb.ts";
import { canonicalJson } from "../../skill/canonical.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import { acceptBidi } from "./grpc-stream.ts";
import { createPeerLink, type EncodedOutcome, type PeerLink } from "./peer-link.ts";
import { createPeerLinkHandler } from "./peer-service.ts";

/** A logger whose lines this test reads. */
function capturedLog() {
  const lines: Array<{ level: number; msg: string; url?: string }> = [];
  const log = pino(
    { level: "info" },
    new Writable({
      write(chunk, _enc, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  return { log, lines };
}

/** A TCP server that takes connections and says nothing: dials to it open, and counting them shows whether a link was opened. */
async function silentPeer(): Promise<{ url: (host: string) => string; connections: () => number; close: () => void }> {
  let n = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    n++;
    sockets.add(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: (host) => `http://${host}:${port}`,
    connections: () => n,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const call = { edgeId: "e1", key: "probe_tcp", params: { host: "x", port: 1 }, timeoutMs: 5_000 };
const links: PeerLink[] = [];
afterEach(() => {
  for (const l of links.splice(0)) l.close();
});

describe("peer link over plaintext (M2)", () => {
  test("with server.require_tls, a call for an edge held behind a plaintext http:// URL is refused unavailable, naming the holder and the rule, and nothing is dialled", async () => {
    const peer = await silentPeer();
    const { log } = capturedLog();
    const link = createPeerLink({ self: "m1", secret: () => "s".repeat(32), requireTls: true, log });
    links.push(link);
    const err = await link.call({ id: "m2", url: peer.url("127.0.0.1") }, call).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OngridError);
    expect((err as OngridError).code).toBe("unavailable");
    expect((err as OngridError).message).toContain('manager "m2"');
    expect((err as OngridError).message).toContain("server.require_tls");
    await new Promise((r) => setTimeout(r, 100));
    expect(peer.connections()).toBe(0);
    peer.close();
  });

  test("without it, the first call to a plaintext peer off loopback logs a warning once; a loopback peer logs none", async () => {
    const { log, lines } = capturedLog();
    const link = createPeerLink({ self: "m1", secret: () => "s".repeat(32), log });
    links.push(link);
    const stop = new AbortController();
    const pending: Array<Promise<unknown>> = [];
    const settle = (p: Promise<unknown>) => pending.push(p.catch(() => undefined));
    // Off loopback (TEST-NET-1, never answered here): the warning comes with the call, before any dial.
    settle(link.call({ id: "m2", url: "http://192.0.2.10:7070" }, call, stop.signal));
    settle(link.call({ id: "m2", url: "http://192.0.2.10:7070" }, { ...call, edgeId: "e2" }, stop.signal));
    settle(link.call({ id: "m3", url: "http://127.0.0.1:7071" }, call, stop.signal));
    settle(link.call({ id: "m4", url: "http://[::1]:7072" }, call, stop.signal));
    const warnings = lines.filter((l) => l.level === 40 && /plaintext/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.url).toBe("http://192.0.2.10:7070");
    expect(warnings[0]!.msg).toContain("in clear");
    stop.abort();
    await Promise.all(pending);
  });

  test("an https:// peer is dialled under require_tls, and not warned about", async () => {
    const { log, lines } = capturedLog();
    const link = createPeerLink({ self: "m1", secret: () => "s".repeat(32), requireTls: true, log });
    links.push(link);
    // TEST-NET-1 is not routed here: the dial fails, which shows the call went out to be dialled.
    const err = await link.call({ id: "m2", url: "https://192.0.2.10:7070" }, call).catch((e: unknown) => e);
    expect((err as OngridError).code).toBe("unavailable");
    expect((err as OngridError).message).toContain("could not be reached");
    expect((err as OngridError).message).not.toContain("require_tls");
    expect(lines.filter((l) => /plaintext/.test(l.msg))).toHaveLength(0);
  });
});

describe("encoded batches: a fan-out's share (M2)", () => {
  const envelope = (edgeId: string): ResultEnvelope => ({ success: edgeId !== "e2", output: { up: edgeId, n: [1, 2] }, ...(edgeId === "e2" ? { error: { code: "upstream_unavailable", message: "refused", hint: "" } } : {}), duration_ms: 2, truncated: false, edge_id: edgeId });
  const secret = "s".repeat(32);
  type StreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;
  /** The holder as this version serves PeerService.Link, its tunnel stood in for. */
  const current: StreamHandler = createPeerLinkHandler({ call: async (edgeId) => envelope(edgeId), holds: () => true, self: "m2", secret: () => secret, log: pino({ level: "silent" }), readMaxBytes: 4 << 20 });
  /** A holder from before encoded_results: it answers every call with envelope_json. */
  const old: StreamHandler = (stream, headers) => {
    const c = acceptBidi(stream, headers, LinkRequestSchema, LinkResponseSchema, 4 << 20, {
      onMessage(m) {
        if (m.frame.case !== "batch") return;
        const { batchId, request } = m.frame.value;
        c.send({ batchId, outcomes: request!.calls.map((call, index) => ({ index, outcome: { case: "envelopeJson" as const, value: JSON.stringify(envelope(call.edgeId)) } })) });
      },
      onClose() {},
    });
  };

  for (const [name, handler] of [["this version's holder encodes", current], ["a holder from before encoded_results answers envelope_json, and the entry encodes", old]] as const) {
    test(`each call comes back as the caller's FanOutEdgeResult bytes and the row's canonical JSON: ${name}`, async () => {
      const server = http2.createServer();
      server.on("stream", (stream, headers) => handler(stream, headers));
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
      const link = createPeerLink({ self: "m1", secret: () => secret, log: pino({ level: "silent" }) });
      links.push(link);
      const ids = ["e1", "e2", "e3"];
      try {
        const got = await new Promise<EncodedOutcome[]>((resolve) => {
          const out: EncodedOutcome[] = [];
          let n = 0;
          link.callEncoded({ id: "m2", url }, ids.map((edgeId) => ({ ...call, edgeId })), undefined, (i, o) => {
            out[i] = o;
            if (++n === ids.length) resolve(out);
          });
        });
        for (const [i, edgeId] of ids.entries()) {
          const o = got[i]!;
          expect("encoded" in o, JSON.stringify("error" in o ? o.error.message : "")).toBe(true);
          if (!("encoded" in o)) continue;
          const env = envelope(edgeId);
          expect(o.encoded.resultJson).toBe(canonicalJson(env));
          expect([o.encoded.success, o.encoded.errorCode, o.encoded.errorMessage]).toEqual([env.success, env.error?.code ?? "", env.error?.message ?? ""]);
          const decoded = toJson(FanOutEdgeResultSchema, fromBinary(FanOutEdgeResultSchema, o.encoded.edgeResult));
          expect(decoded).toMatchObject({ edgeId, result: { output: env.output, durationMs: 2, edgeId } });
          expect(decoded).not.toHaveProperty("auditSeq");
        }
      } finally {
        server.close();
      }
    });
  }
});
