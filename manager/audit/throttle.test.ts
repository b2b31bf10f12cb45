import { describe, expect, it } from "vitest";
import { OngridError } from "../../skill/errors.ts";
import { createRefusalAudit, createRefusalThrottle } from "./throttle.ts";
import type { AuditLog, AuditRecord } from "./types.ts";

describe("createRefusalThrottle", () => {
  it("writes `burst` rows per key and window, counts the rest, and reports them in the next row", () => {
    let t = 0;
    const th = createRefusalThrottle({ windowMs: 1000, burst: 2, now: () => t });
    expect([th.admit("a"), th.admit("a"), th.admit("a"), th.admit("a")].map((v) => v.write)).toEqual([true, true, false, false]);
    expect(th.admit("b").write).toBe(true);
    t = 1000;
    expect(th.admit("a")).toEqual({ write: true, suppressed: 2 });
    expect(th.admit("a")).toEqual({ write: true, suppressed: 0 });
    expect(th.suppressedTotal()).toBe(2);
  });

  it("keeps a bounded number of keys (a flood of distinct keys cannot grow it without bound)", () => {
    const th = createRefusalThrottle({ maxKeys: 100, burst: 1 });
    for (let i = 0; i < 10_000; i++) th.admit(`k${i}`);
    // The oldest keys were dropped: an early key is admitted again.
    expect(th.admit("k0").write).toBe(true);
    expect(th.admit("k9999").write).toBe(false);
  });
});

describe("createRefusalAudit", () => {
  it("writes every refusal of a caller, throttles those of nobody by key, and says in the next row how many it left out", async () => {
    const rows: AuditRecord[] = [];
    let t = 0;
    const refused = createRefusalAudit({ append: async (r: AuditRecord) => (rows.push(r), {}) } as unknown as AuditLog, { windowMs: 1000, burst: 1, now: () => t });
    const err = new OngridError("unauthenticated", "no API token");
    const what = { toolName: "/metrics", args: { http: "GET /metrics" } };
    expect(await refused(what, err, { userId: "", role: "" }, "a")).toBe(true);
    expect(await refused(what, err, { userId: "", role: "" }, "a")).toBe(false);
    expect(await refused(what, err, { userId: "vic", role: "viewer" }, "a")).toBe(true);
    expect(await refused(what, err, { userId: "vic", role: "viewer" }, "a")).toBe(true);
    t = 1000;
    expect(await refused(what, err, { userId: "", role: "" }, "a")).toBe(true);
    expect(rows.map((r) => [r.callerUserId, r.args])).toEqual([
      ["", { http: "GET /metrics" }],
      ["vic", { http: "GET /metrics" }],
      ["vic", { http: "GET /metrics" }],
      ["", { http: "GET /metrics", suppressed_since_last_row: 1 }],
    ]);
    expect(rows[0]).toMatchObject({ toolName: "/metrics", deviceId: "", decision: "deny", decisionReason: "unauthenticated: no API token", error: "unauthenticated: no API token" });
  });
});
