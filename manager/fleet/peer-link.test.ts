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
import { encodedResult, readEncodedResult } from "./encoded-result.ts";
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

const secret = "s".repeat(32);
type StreamHandler = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void;

/** A holder from before encoded_results: it answers every call with envelope_json, the text `answer` gives for its edge. */
function oldHolder(answer: (edgeId: string) => string): StreamHandler {
  return (stream, headers) => {
    const c = acceptBidi(stream, headers, LinkRequestSchema, LinkResponseSchema, 4 << 20, {
      onMessage(m) {
        if (m.frame.case !== "batch") return;
        const { batchId, request } = m.frame.value;
        c.send({ batchId, outcomes: request!.calls.map((call, index) => ({ index, outcome: { case: "envelopeJson" as const, value: answer(call.edgeId) } })) });
      },
      onClose() {},
    });
  };
}

/** An HTTP/2 server on loopback handing every stream to `handler`, and a peer link (m1) to it, closed after the test. */
async function holderAt(handler: StreamHandler): Promise<{ url: string; link: PeerLink; close(): void }> {
  const server = http2.createServer();
  server.on("stream", (stream, headers) => handler(stream, headers));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const link = createPeerLink({ self: "m1", secret: () => secret, log: pino({ level: "silent" }) });
  links.push(link);
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, link, close: () => server.close() };
}

/** The outcomes of one encoded batch of calls to `ids`, by index, once all have come. */
function encodedOutcomes(link: PeerLink, url: string, ids: string[]): Promise<EncodedOutcome[]> {
  return new Promise((resolve) => {
    const out: EncodedOutcome[] = [];
    let n = 0;
    link.callEncoded({ id: "m2", url }, ids.map((edgeId) => ({ ...call, edgeId })), undefined, (i, o) => {
      out[i] = o;
      if (++n === ids.length) resolve(out);
    });
  });
}

describe("encoded batches: a fan-out's share (M2)", () => {
  const envelope = (edgeId: string): ResultEnvelope => ({ success: edgeId !== "e2", output: { up: edgeId, n: [1, 2] }, ...(edgeId === "e2" ? { error: { code: "upstream_unavailable", message: "refused", hint: "" } } : {}), duration_ms: 2, truncated: false, edge_id: edgeId });
  /** The holder as this version serves PeerService.Link, its tunnel stood in for. */
  const current: StreamHandler = createPeerLinkHandler({ call: async (edgeId) => envelope(edgeId), holds: () => true, self: "m2", secret: () => secret, log: pino({ level: "silent" }), readMaxBytes: 4 << 20 });
  const old = oldHolder((edgeId) => JSON.stringify(envelope(edgeId)));

  for (const [name, handler] of [["this version's holder encodes", current], ["a holder from before encoded_results answers envelope_json, and the entry encodes", old]] as const) {
    test(`each call comes back as the caller's FanOutEdgeResult bytes and the row's canonical JSON: ${name}`, async () => {
      const { url, link, close } = await holderAt(handler);
      const ids = ["e1", "e2", "e3"];
      try {
        const got = await encodedOutcomes(link, url, ids);
        for (const [i, edgeId] of ids.entries()) {
          const o = got[i]!;
          expect("encoded" in o, JSON.stringify("error" in o ? o.error.message : "")).toBe(true);
          if (!("encoded" in o)) continue;
          const env = envelope(edgeId);
          expect(JSON.parse(o.encoded.resultJson)).toEqual(env);
          // What the entry checks and records.
          const read = readEncodedResult("m2", edgeId, o.encoded);
          expect(read.envelope).toEqual(env);
          expect(read.stored.canonical()).toBe(canonicalJson(env));
          const decoded = toJson(FanOutEdgeResultSchema, fromBinary(FanOutEdgeResultSchema, o.encoded.edgeResult));
          expect(decoded).toMatchObject({ edgeId, result: { output: env.output, durationMs: 2, edgeId } });
          expect(decoded).not.toHaveProperty("auditSeq");
        }
      } finally {
        close();
      }
    });
  }
});

describe("a holder's answers the entry cannot use (M2)", () => {
  test("envelope_json that is not an envelope fails its own call unavailable, naming the field and rule; the link and the other calls carry on", async () => {
    const answers: Record<string, string> = {
      e1: "null",
      e2: "5",
      e3: '{"success":"yes","duration_ms":1}',
      e4: '{"success":true,"duration_ms":-1}',
      e5: '{"success":true,"duration_ms":1,"error":"boom"}',
      e6: "{not json",
      e7: JSON.stringify({ success: true, output: "fine", duration_ms: 1, truncated: false, edge_id: "e7" }),
    };
    const { url, link, close } = await holderAt(oldHolder((edgeId) => answers[edgeId]!));
    const ids = Object.keys(answers);
    try {
      // Encoded (a fan-out's share) and not (single calls): the same refusals either way.
      const encoded = await encodedOutcomes(link, url, ids);
      const single = await Promise.all(ids.map((edgeId) => link.call({ id: "m2", url }, { ...call, edgeId }).then((env) => env, (e: OngridError) => e)));
      const expected = [/envelope_json is not a JSON object/, /envelope_json is not a JSON object/, /envelope_json\.success: is not a boolean/, /envelope_json\.duration_ms: is not a non-negative number/, /envelope_json\.error: is not an object/, /envelope_json is not JSON/];
      for (const [i, re] of expected.entries()) {
        const e = encoded[i]!;
        expect("error" in e && e.error.code, ids[i]).toBe("unavailable");
        expect("error" in e && e.error.message, ids[i]).toMatch(re);
        expect(single[i], ids[i]).toBeInstanceOf(OngridError);
        expect((single[i] as OngridError).message, ids[i]).toMatch(re);
      }
      expect("encoded" in encoded[6]!).toBe(true);
      expect(single[6]).toMatchObject({ success: true, output: "fine" });
    } finally {
      close();
    }
  });

  test("readEncodedResult refuses bytes that do not decode or disagree with the JSON, and JSON that is not an envelope; it records the JSON in its own canonical form", () => {
    const env: ResultEnvelope = { success: true, output: { b: 1, a: [2, 1] }, duration_ms: 3, truncated: false, edge_id: "e1" };
    const good = encodedResult("e1", env);
    // Keys out of order and spaces: stored canonical, so the row's hash matches what verify() rebuilds.
    const read = readEncodedResult("m2", "e1", { ...good, resultJson: '{ "truncated":false, "success":true, "output":{"b":1,"a":[2,1]}, "edge_id":"e1", "duration_ms":3 }' } as never);
    expect(read.stored.canonical()).toBe(canonicalJson(env));
    const failed = encodedResult("e1", { ...env, success: false, error: { code: "x", message: "y", hint: "" } });
    const refusals: Array<[Partial<typeof good>, RegExp]> = [
      [{ edgeResult: new Uint8Array([0x0a, 0xff]) }, /edge_result: is not a FanOutEdgeResult \(rule: protobuf\)/],
      [{ edgeResult: failed.edgeResult }, /edge_result: does not carry the result result_json holds \(rule: match\)/],
      [{ edgeResult: new Uint8Array() }, /rule: match/],
      [{ resultJson: "[1]" }, /result_json: is not a JSON object/],
      [{ resultJson: 'null},{"seq":1' }, /result_json: is not JSON/],
      [{ resultJson: '{"success":1,"duration_ms":1}' }, /result_json: success: is not a boolean/],
    ];
    for (const [change, re] of refusals) {
      expect(() => readEncodedResult("m2", "e1", { ...good, ...change } as never), String(re)).toThrow(re);
      try {
        readEncodedResult("m2", "e1", { ...good, ...change } as never);
      } catch (err) {
        expect((err as OngridError).code).toBe("unavailable");
        expect((err as OngridError).message).toMatch(/^manager "m2" answered the call on edge "e1" with a result this manager cannot pass on: /);
      }
    }
  });
});
