import { describe, expect, it } from "vitest";
import { edgeCandidates, exprsFromGeneratorUrl, parseAlertmanagerPayload } from "./alertmanager.ts";
import { mergeChanges, type ChangeEntry } from "./changes.ts";
import { calendarProblem } from "./time.ts";

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

  it("refuses an impossible date instead of rolling it over, naming the field and the rule", () => {
    const payload = (startsAt: string) => ({ version: "4", alerts: [{ status: "firing", labels: { alertname: "A" }, startsAt, fingerprint: "abc" }] });
    // new Date("2025-02-30T10:00:00Z") is March 2: it would be stored as a time nobody sent.
    expect(() => parseAlertmanagerPayload(payload("2025-02-30T10:00:00Z"))).toThrow("alerts[0].startsAt: is not a real date and time: February 2025 has 28 days, not 30 (rule: format date-time)");
    expect(() => parseAlertmanagerPayload(payload("2025-06-31T10:00:00+02:00"))).toThrow("alerts[0].startsAt: is not a real date and time: June 2025 has 30 days, not 31 (rule: format date-time)");
    expect(() => parseAlertmanagerPayload(payload("2025-01-31T24:00:00Z"))).toThrow("alerts[0].startsAt: is not a real date and time: hour 24 is not 00-23 (rule: format date-time)");
    expect(() => parseAlertmanagerPayload(payload("2025-00-10T10:00:00Z"))).toThrow("alerts[0].startsAt: is not a real date and time: month 00 is not 01-12 (rule: format date-time)");
    expect(parseAlertmanagerPayload(payload("2024-02-29T10:00:00Z"))[0].startsAt.toISOString()).toBe("2024-02-29T10:00:00.000Z");
  });
});

describe("calendarProblem", () => {
  it("says what is impossible about a date and time, and nothing about a real one", () => {
    expect(calendarProblem("2025-02-30T10:00:00Z")).toBe("February 2025 has 28 days, not 30");
    expect(calendarProblem("2100-02-29")).toBe("February 2100 has 28 days, not 29");
    expect(calendarProblem("2025-13-01T00:00:00Z")).toBe("month 13 is not 01-12");
    expect(calendarProblem("2025-01-00T00:00:00Z")).toBe("January 2025 has 31 days, not 0");
    expect(calendarProblem("2025-01-01T23:60:00Z")).toBe("minute 60 is not 00-59");
    expect(calendarProblem("2025-01-01 24:00")).toBe("hour 24 is not 00-23");
    for (const ok of ["2000-02-29T00:00:00Z", "2024-02-29", "2025-12-31T23:59:59.999+14:00", "2016-12-31T23:59:60Z", "now", "1738317600"]) expect(calendarProblem(ok), ok).toBeUndefined();
  });
});

describe("mergeChanges", () => {
  const c = (at: string, origin: ChangeEntry["origin"], kind: string): ChangeEntry => ({ at, origin, kind, summary: kind, edge_id: "", actor: "" });
  it("orders newest first, an audit change before an external one at the same instant", () => {
    const merged = mergeChanges([[c("2026-01-31T13:10:00.000Z", "audit", "a1"), c("2026-01-31T13:00:00.000Z", "audit", "a2")], [c("2026-01-31T13:10:00.000Z", "external", "e1"), c("2026-01-31T13:20:00.000Z", "external", "e2")]]);
    expect(merged.map((x) => x.kind)).toEqual(["e2", "a1", "e1", "a2"]);
  });
});
