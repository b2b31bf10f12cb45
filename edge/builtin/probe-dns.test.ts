import dgram from "node:dgram";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSkill } from "../../skill/registry.ts";
import { validateParams } from "../../skill/validate.ts";
import { runSkill } from "../../skill/run.ts";
import { lintSkill } from "../../skill/lint.ts";
import probeDns, { parseResolver, reverseName } from "./probe-dns.ts";

const skill = buildSkill(probeDns);
const log = pino({ level: "silent" });

function run(params: Record<string, unknown>) {
  return runSkill(skill, validateParams(skill, params), { callId: "t", timeoutMs: 10_000, outputCapBytes: 65536, log });
}

const TYPE = { A: 1, NS: 2, CNAME: 5, PTR: 12, MX: 15, TXT: 16, AAAA: 28, SRV: 33 } as const;

function encodeName(name: string): Buffer {
  return Buffer.concat([...name.split(".").map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, "ascii")])), Buffer.from([0])]);
}

function txt(...strings: string[]): Buffer {
  return Buffer.concat(strings.map((s) => Buffer.concat([Buffer.from([Buffer.byteLength(s)]), Buffer.from(s)])));
}

/** The zone the test server answers from: name → type → [ttl, rdata][]; names not listed get NXDOMAIN, broken.test SERVFAIL. */
const ZONE: Record<string, Partial<Record<number, [number, Buffer][]>>> = {
  "web.test": { [TYPE.A]: [[300, Buffer.from([192, 0, 2, 10])], [60, Buffer.from([192, 0, 2, 11])]] },
  "txt.test": { [TYPE.TXT]: [[120, txt("v=spf1 -all")], [120, txt("part one ", "part two")]] },
  "mail.test": { [TYPE.MX]: [[300, Buffer.concat([Buffer.from([0, 20]), encodeName("mx2.test")])], [300, Buffer.concat([Buffer.from([0, 10]), encodeName("mx1.test")])]] },
  "10.2.0.192.in-addr.arpa": { [TYPE.PTR]: [[300, encodeName("web.test")]] },
};

/** A tiny authoritative DNS server on UDP 127.0.0.1 with hand-encoded answers; it records each question it gets. */
async function startDnsServer(): Promise<{ port: number; questions: string[]; close(): Promise<void> }> {
  const questions: string[] = [];
  const sock = dgram.createSocket("udp4");
  sock.on("message", (msg, peer) => {
    let off = 12;
    const labels: string[] = [];
    while (msg[off] !== 0) {
      labels.push(msg.toString("ascii", off + 1, off + 1 + msg[off]));
      off += msg[off] + 1;
    }
    off += 1;
    const qtype = msg.readUInt16BE(off);
    const question = msg.subarray(12, off + 4);
    const name = labels.join(".").toLowerCase();
    questions.push(`${name}/${qtype}`);
    const records = ZONE[name]?.[qtype] ?? [];
    const rcode = name === "broken.test" ? 2 : ZONE[name] ? 0 : 3;
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    header.writeUInt16BE(0x8000 | 0x0400 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | rcode, 2); // QR AA RD RA rcode
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    const answers = records.map(([ttl, rdata]) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // name: pointer to the question
      rr.writeUInt16BE(qtype, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(ttl, 6);
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    sock.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
  });
  await new Promise<void>((r) => sock.bind(0, "127.0.0.1", r));
  return { port: sock.address().port, questions, close: () => new Promise((r) => sock.close(() => r())) };
}

let dns: Awaited<ReturnType<typeof startDnsServer>>;
let resolver: string;
beforeAll(async () => {
  dns = await startDnsServer();
  resolver = `127.0.0.1:${dns.port}`;
});
afterAll(() => dns.close());

describe("probe_dns", () => {
  it("returns A records with their TTLs from the resolver it is given", async () => {
    const r = await run({ name: "web.test", resolver });
    expect(r.success).toBe(true);
    expect(r.output).toMatchObject({
      name: "web.test",
      type: "A",
      resolver,
      rcode: "NOERROR",
      records: [
        { address: "192.0.2.10", ttl: 300 },
        { address: "192.0.2.11", ttl: 60 },
      ],
      latency_ms: expect.any(Number),
    });
    expect(dns.questions).toContain("web.test/1");
  });

  it("joins the strings of each TXT record", async () => {
    const r = await run({ name: "txt.test", type: "TXT", resolver });
    expect(r.output).toMatchObject({ rcode: "NOERROR", records: [{ text: "v=spf1 -all" }, { text: "part one part two" }] });
  });

  it("sorts MX records by priority", async () => {
    const r = await run({ name: "mail.test", type: "MX", resolver });
    expect((r.output as { records: unknown[] }).records).toEqual([
      { exchange: "mx1.test", priority: 10 },
      { exchange: "mx2.test", priority: 20 },
    ]);
  });

  it("asks for the in-addr.arpa name when PTR is given an IP address", async () => {
    const r = await run({ name: "192.0.2.10", type: "PTR", resolver });
    expect(r.output).toMatchObject({ name: "192.0.2.10", query_name: "10.2.0.192.in-addr.arpa", records: [{ name: "web.test" }] });
  });

  it("does not query for an IP literal (A or AAAA), which would answer NXDOMAIN, and says so", async () => {
    const before = dns.questions.length;
    for (const [name, type] of [["127.0.0.1", "A"], ["::1", "AAAA"], ["[fd00::1]", "A"]] as const) {
      const r = await run({ name, type, resolver });
      expect(r.success).toBe(true);
      expect(r.output).toMatchObject({ name, type, ip_literal: true, records: [] });
      expect(r.output).not.toHaveProperty("rcode");
      expect((r.output as { note: string }).note).toMatch(/IP literal: it needs no resolution, so no DNS query was made/);
    }
    expect(dns.questions.length).toBe(before);
  });

  it("answers NXDOMAIN, no data and SERVFAIL as successful probes with empty records and the rcode", async () => {
    const nx = await run({ name: "missing.test", resolver });
    expect(nx.success).toBe(true);
    expect(nx.output).toMatchObject({ rcode: "NXDOMAIN", records: [] });
    const noData = await run({ name: "txt.test", type: "A", resolver });
    expect(noData.output).toMatchObject({ rcode: "NOERROR", records: [] });
    const servfail = await run({ name: "broken.test", resolver });
    expect(servfail.output).toMatchObject({ rcode: "SERVFAIL", records: [] });
  });

  it("fails with resolver_unreachable when nothing listens at the resolver's port", async () => {
    const closed = dgram.createSocket("udp4");
    await new Promise<void>((r) => closed.bind(0, "127.0.0.1", r));
    const port = closed.address().port;
    await new Promise<void>((r) => closed.close(() => r()));
    const r = await run({ name: "web.test", resolver: `127.0.0.1:${port}`, timeout: "2s" });
    expect(r.error).toMatchObject({ code: "resolver_unreachable" });
    expect(r.error!.hint).toMatch(/port/);
  });

  it("fails with timeout when the resolver never answers", async () => {
    const mute = dgram.createSocket("udp4");
    await new Promise<void>((r) => mute.bind(0, "127.0.0.1", r));
    try {
      const r = await run({ name: "web.test", resolver: `127.0.0.1:${mute.address().port}`, timeout: "300ms" });
      expect(r.error).toMatchObject({ code: "timeout" });
      expect(r.error!.hint).toMatch(/another resolver/);
    } finally {
      await new Promise<void>((r) => mute.close(() => r()));
    }
  });

  it("refuses a resolver that is not an IP address, naming the param", async () => {
    expect(() => validateParams(skill, { name: "web.test", resolver: "8.8.8.8; rm -rf /" })).toThrow(/param "resolver"/);
    const r = await run({ name: "web.test", resolver: "300.1.1.1:53" });
    expect(r.error).toMatchObject({ code: "invalid_argument" });
    expect(r.error!.message).toMatch(/param "resolver"/);
    expect(() => validateParams(skill, { name: "bad name!" })).toThrow(/param "name"/);
  });

  it("passes the new-tool checklist with no error", () => {
    expect(lintSkill(probeDns).filter((f) => f.severity === "error")).toEqual([]);
  });
});

describe("parseResolver and reverseName", () => {
  it("normalise resolver addresses for setServers", () => {
    expect(parseResolver("10.0.0.2")).toBe("10.0.0.2");
    expect(parseResolver("10.0.0.2:5353")).toBe("10.0.0.2:5353");
    expect(parseResolver("[fd00::53]:53")).toBe("[fd00::53]:53");
    expect(parseResolver("fd00::53")).toBe("fd00::53");
    expect(() => parseResolver("10.0.0.2:70000")).toThrow(/port/);
  });

  it("build reverse names for IPv4 and IPv6", () => {
    expect(reverseName("192.0.2.10")).toBe("10.2.0.192.in-addr.arpa");
    expect(reverseName("2001:db8::1")).toBe(`1.0.0.0.${"0.".repeat(20)}8.b.d.0.1.0.0.2.ip6.arpa`);
    expect(reverseName("web.test")).toBe("web.test");
  });
});
