/** probe_dns's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/probe-dns.ts). */
import { defineSkillMeta } from "../define.ts";
import { HOST_PATTERN } from "./probe-tcp.ts";

/** The record types probe_dns asks for. */
export const RECORD_TYPES = ["A", "AAAA", "CNAME", "MX", "TXT", "NS", "SRV", "PTR"] as const;
/** An IPv4 address, [IPv6] or bare IPv6, with an optional :port (not for bare IPv6); checked again with net.isIP. */
export const RESOLVER_PATTERN = "^(?:\\d{1,3}(?:\\.\\d{1,3}){3}(?::\\d{1,5})?|\\[[0-9A-Fa-f:.]+\\](?::\\d{1,5})?|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*)$";

export const PROBE_DNS = defineSkillMeta({
  key: "probe_dns",
  name: "Probe DNS",
  description:
    "Resolve one name for one record type (A, AAAA, CNAME, MX, TXT, NS, SRV, PTR) from this host, with its DNS servers or a given resolver, and report the records, the response code and the latency. Use when a service name may not resolve, resolves differently on this host, or a resolver may be down. NXDOMAIN, SERVFAIL and REFUSED are answers: they return success with empty records and that rcode; only getting no answer fails (resolver_unreachable, timeout). An IP literal (other than for PTR) is not queried: the answer says ip_literal.",
  class: "safe",
  scope: "host",
  category: "network",
  params: {
    name: { type: "string", description: "Name to look up, e.g. api.internal; for PTR an IP address works too.", required: true, min: 1, max: 253, pattern: HOST_PATTERN },
    type: { type: "enum", description: "Record type to ask for.", values: RECORD_TYPES, default: "A" },
    resolver: { type: "string", description: 'DNS server to ask instead of this host\'s (from /etc/resolv.conf): an IP with an optional port, e.g. "10.0.0.2" or "10.0.0.2:5353".', max: 64, pattern: RESOLVER_PATTERN },
    timeout: { type: "duration", description: "How long to wait for the answer.", default: "3s", min: 1, max: 30_000 },
  },
  resultPreview: JSON.stringify({
    name: "api.internal",
    type: "A",
    resolver: "system",
    servers: ["10.0.0.2"],
    rcode: "NOERROR",
    records: [{ address: "10.0.0.12", ttl: 300 }],
    latency_ms: 2.4,
  }),
});
