/** probe_http's metadata (D1–D5): what the manager trusts and the edge runs with (edge/builtin/probe-http.ts). */
import { defineSkillMeta } from "../define.ts";

export const PROBE_HTTP = defineSkillMeta({
  key: "probe_http",
  name: "Probe an HTTP(S) endpoint",
  description:
    "Send one GET or HEAD request from this host and report the status, total latency and time to first byte, selected headers and, for https, the TLS certificate (issuer, expiry, days left, whether this host trusts it). Use when a web service or health endpoint may be down, slow, redirecting or serving a bad or expiring certificate. ok is true for 2xx/3xx unless expect_status is given. The body is counted (at most 64 KiB), never returned.",
  class: "safe",
  scope: "host",
  category: "network",
  params: {
    url: { type: "string", description: "Absolute http:// or https:// URL, e.g. https://api.internal/healthz.", required: true, min: 8, max: 2048, pattern: "^https?://" },
    method: { type: "enum", description: "HTTP method; HEAD skips the body.", values: ["GET", "HEAD"], default: "GET" },
    timeout: { type: "duration", description: "Time allowed for the whole probe, redirects included.", default: "5s", min: 1, max: 60_000 },
    expect_status: { type: "integer", description: "Status code that counts as ok (e.g. 204); without it any 2xx or 3xx is ok.", min: 100, max: 599 },
    follow_redirects: { type: "boolean", description: "Follow up to 5 redirects and report the final response.", default: false },
    credential: { type: "credential", description: "Stored credential sent as the Authorization header, e.g. for a health endpoint behind auth; it is not sent on to a redirect to another origin." },
    auth_scheme: { type: "enum", description: 'How the credential is sent: bearer ("Bearer <value>") or basic (the value is "user:password", sent base64-encoded).', values: ["bearer", "basic"], default: "bearer" },
  },
  resultPreview: JSON.stringify({
    url: "https://api.internal/healthz",
    status: 200,
    status_text: "OK",
    ok: true,
    address: "10.0.0.12",
    latency_ms: 38.2,
    ttfb_ms: 37.5,
    timings: { dns_ms: 1.1, connect_ms: 0.9, tls_ms: 12.4 },
    headers: { server: "nginx", "content-type": "application/json", "content-length": "15" },
    tls: {
      protocol: "TLSv1.3",
      cipher: "TLS_AES_256_GCM_SHA384",
      subject: "CN=api.internal",
      issuer: "CN=Internal CA",
      san: ["DNS:api.internal"],
      valid_to: "2026-03-01T12:00:00.000Z",
      days_left: 41,
      authorized: true,
      authorization_error: null,
    },
    body_bytes: 15,
    body_truncated: false,
  }),
});
