import { describe, expect, it } from "vitest";
import { edgeCandidates, exprsFromGeneratorUrl, parseAlertmanagerPayload } from "./alertmanager.ts";
import { mergeChanges, type ChangeEntry } from "./changes.ts";

describe("edgeCandidates", () => {
  it("takes edge, then instance without its port (IPv6 too), then host, without duplicates", () => {
    expect(edgeCandidates({ edge: "web-01", instance: "web-01:9100", host: "web-01.example" })).toEqual(["web-01", "web-01.example"]);
    expect(edgeCandidates({ instance: "[fe80::1]:9100" })).toEqual(["fe80::1"]);
    expect(edgeCandidates({ instance: "db-01" })).toEqual(["db-01"]);
    expect(edgeCandidates({ alertname: "X" })).toEqual([]);
  });
});

describe("exprsFromGeneratorUrl", () => {
  it("reads every gN.expr of a Prometheus graph link and nothing from anything else", () => {
    expect(exprsFromGeneratorUrl("http://prom:9090/graph?g0.expr=rate%28x%5B5m%5D%29+%3E+1&g0.tab=1&g1.expr=up")).toEqual(["rate(x[5m]) > 1", "up"]);
    expect(exprsFromGeneratorUrl("not a url")).toEqual([]);
    expect(exprsFromGeneratorUrl("")).toEqual([]);
  });
});

describe("parseAlertmanagerPayload", () => {
  it("treats Go's zero time as no end, and keeps what incidents need", () => {
    const [a] = parseAlertmanagerPayload({ version: "4", alerts: [{ status: "firing", labels: { alertname: "A" }, startsAt: "2026-01-31T14:00:00.123456789Z", endsAt: "0001-01-01T00:00:00Z", fingerprint: "abc", generatorURL: "" }] });
    expect(a.endsAt).toBeUndefined();
    expect(a.startsAt.toISOString()).toBe("2026-01-31T14:00:00.123Z");
    expect(a.annotations).toEqual({});
  });
});

describe("mergeChanges", () => {
  const c = (at: string, origin: ChangeEntry["origin"], kind: string): ChangeEntry => ({ at, origin, kind, summary: kind, edge_id: "", actor: "" });
  it("orders newest first, an audit change before an external one at the same instant", () => {
    const merged = mergeChanges([[c("2026-01-31T13:10:00.000Z", "audit", "a1"), c("2026-01-31T13:00:00.000Z", "audit", "a2")], [c("2026-01-31T13:10:00.000Z", "external", "e1"), c("2026-01-31T13:20:00.000Z", "external", "e2")]]);
    expect(merged.map((x) => x.kind)).toEqual(["e2", "a1", "e1", "a2"]);
  });
});
