/** probe_tcp's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/probe-tcp.ts). */
import { defineSkillMeta } from "../define.ts";

/** A DNS name: dot-separated labels of letters, digits, `_` and inner `-`, optional final dot (the length is bounded by the param's max). */
export const DNS_NAME_PATTERN =
  "^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\\.)*[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\\.?$";
/** A host to connect to: a DNS name, an IPv4 address, or an IPv6 address with or without brackets. */
export const HOST_PATTERN = `${DNS_NAME_PATTERN}|^\\[?[0-9A-Fa-f:.]+\\]?$`;

export const PROBE_TCP = defineSkillMeta({
  key: "probe_tcp",
  name: "Probe a TCP port",
  description:
    "Open a TCP connection from this host to host:port and report the connect time, the address reached and the first bytes the service sends (e.g. an SSH, SMTP or Redis banner). Use when a service may be down, firewalled or listening on the wrong port, before probing HTTP or restarting anything. Read-only: nothing is sent.",
  class: "safe",
  scope: "host",
  category: "network",
  params: {
    host: { type: "string", description: "Host name or IP address to connect to, e.g. db1.internal or 10.0.0.5.", required: true, min: 1, max: 253, pattern: HOST_PATTERN },
    port: { type: "integer", description: "TCP port, 1-65535.", required: true, min: 1, max: 65535 },
    timeout: { type: "duration", description: "How long to wait for name resolution and the connection.", default: "3s", min: 1, max: 60_000 },
    read_banner: { type: "boolean", description: "Wait briefly for the service to speak first and return what it says.", default: true },
    banner_bytes: { type: "integer", description: "Most banner bytes to read.", min: 1, max: 4096, default: 256 },
  },
  resultPreview: JSON.stringify({
    host: "git.internal",
    port: 22,
    connected: true,
    address: "10.0.0.7",
    family: 4,
    dns_ms: 1.2,
    connect_ms: 0.8,
    banner: "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n",
    banner_read_bytes: 32,
    closed_by_peer: false,
  }),
});
