import { createHmac, randomBytes } from "node:crypto";
import { describe, expect, test } from "vitest";
import { canonicalJson } from "./canonical.ts";
import { evidenceKey, evidenceMac, evidenceProblem, evidenceValid, type EvidenceFields, type ReceivedEvidence } from "./evidence.ts";
import type { SkillClass } from "./types.ts";

const EDGE_TOKEN = "ogt_edge-a_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG";
const KEY = evidenceKey(EDGE_TOKEN);
const OTHER_KEY = evidenceKey("ogt_edge-b_somebody-elses-token");

const BASE: EvidenceFields = {
  callId: "call-7",
  key: "service_restart",
  params: { unit: "nginx.service", opts: { now: true, delay: 5 }, hosts: ["a", "b"] },
  approvalId: "apr_0011223344556677",
  approvers: ["alice", "bob"],
  sopHash: "ab".repeat(32),
  effectiveClass: "dangerous",
  reasonType: "approved",
};

describe("evidenceMac / evidenceValid", () => {
  test("evidenceKey is the sha256 hex of the token", () => {
    expect(KEY).toMatch(/^[0-9a-f]{64}$/);
    expect(evidenceKey(EDGE_TOKEN)).toBe(KEY);
    expect(OTHER_KEY).not.toBe(KEY);
  });

  test("round trip: a MAC over the fields verifies with the same key and fields", () => {
    const mac = evidenceMac(KEY, BASE);
    expect(mac).toHaveLength(32);
    expect(evidenceValid(KEY, BASE, mac)).toBe(true);
    expect(evidenceValid(KEY, { ...BASE }, new Uint8Array(mac))).toBe(true);
    expect(evidenceMac(KEY, BASE).equals(mac)).toBe(true); // deterministic
  });

  test("the MAC is HMAC-SHA256 keyed by the hex key over the canonical JSON of the fields (v1), pinned", () => {
    const text = canonicalJson({ v: 1, ...BASE });
    expect(evidenceMac(KEY, BASE).equals(createHmac("sha256", KEY).update(text, "utf8").digest())).toBe(true);
  });

  test("param key order does not matter, at any depth", () => {
    const mac = evidenceMac(KEY, BASE);
    const reordered = { ...BASE, params: { hosts: ["a", "b"], opts: { delay: 5, now: true }, unit: "nginx.service" } };
    expect(evidenceValid(KEY, reordered, mac)).toBe(true);
    // Missing params are the empty object.
    expect(evidenceValid(KEY, { ...BASE, params: undefined }, evidenceMac(KEY, { ...BASE, params: {} }))).toBe(true);
  });

  const changes: Array<[string, Partial<EvidenceFields>]> = [
    ["callId", { callId: "call-8" }],
    ["key", { key: "service_stop" }],
    ["a param value", { params: { unit: "sshd.service", opts: { now: true, delay: 5 }, hosts: ["a", "b"] } }],
    ["a nested param value", { params: { unit: "nginx.service", opts: { now: true, delay: 6 }, hosts: ["a", "b"] } }],
    ["a param type (5 → \"5\")", { params: { unit: "nginx.service", opts: { now: true, delay: "5" }, hosts: ["a", "b"] } }],
    ["an added param", { params: { ...(BASE.params as object), force: true } }],
    ["a removed param", { params: { unit: "nginx.service", opts: { now: true, delay: 5 } } }],
    ["array order in params", { params: { unit: "nginx.service", opts: { now: true, delay: 5 }, hosts: ["b", "a"] } }],
    ["approvalId", { approvalId: "apr_ffffffffffffffff" }],
    ["approvers (one more)", { approvers: ["alice", "bob", "carol"] }],
    ["approvers (one fewer)", { approvers: ["alice"] }],
    ["approvers (another name)", { approvers: ["alice", "mallory"] }],
    ["approvers (order)", { approvers: ["bob", "alice"] }],
    ["sopHash", { sopHash: "cd".repeat(32) }],
    ["sopHash (empty)", { sopHash: "" }],
    ["class", { effectiveClass: "mutating" }],
    ["class (safe)", { effectiveClass: "safe" }],
    ["reasonType", { reasonType: "bypass" }],
  ];
  test.each(changes)("changing %s breaks the MAC", (_, change) => {
    const mac = evidenceMac(KEY, BASE);
    expect(evidenceValid(KEY, { ...BASE, ...change }, mac)).toBe(false);
    expect(evidenceMac(KEY, { ...BASE, ...change }).equals(mac)).toBe(false);
  });

  test("another key, a flipped bit, a truncated or an empty MAC do not verify", () => {
    const mac = evidenceMac(KEY, BASE);
    expect(evidenceValid(OTHER_KEY, BASE, mac)).toBe(false);
    const flipped = Buffer.from(mac);
    flipped[31] ^= 1;
    expect(evidenceValid(KEY, BASE, flipped)).toBe(false);
    expect(evidenceValid(KEY, BASE, mac.subarray(0, 31))).toBe(false);
    expect(evidenceValid(KEY, BASE, new Uint8Array(0))).toBe(false);
    expect(evidenceValid(KEY, BASE, Buffer.concat([mac, Buffer.from([0])]))).toBe(false);
  });
});

describe("evidenceProblem", () => {
  const call = (cls: SkillClass, over: Partial<{ callId: string; key: string; params: unknown }> = {}) => ({
    callId: BASE.callId,
    key: BASE.key,
    params: BASE.params,
    cls,
    ...over,
  });
  /** Evidence as the manager would send it for `f`, MAC'd with `key`. */
  function sent(over: Partial<EvidenceFields> = {}, key = KEY): ReceivedEvidence {
    const f = { ...BASE, ...over };
    return { approvalId: f.approvalId, approvers: f.approvers, sopHash: f.sopHash, effectiveClass: f.effectiveClass, reasonType: f.reasonType, mac: evidenceMac(key, f) };
  }

  test("a safe call needs nothing, whatever evidence comes with it", () => {
    expect(evidenceProblem(KEY, call("safe"), undefined)).toBeUndefined();
    expect(evidenceProblem(KEY, call("safe"), { ...sent(), mac: randomBytes(32) })).toBeUndefined();
  });

  test("a non-safe call without evidence is refused", () => {
    for (const cls of ["mutating", "dangerous"] as const) {
      expect(evidenceProblem(KEY, call(cls), undefined)).toBe(`"service_restart" is ${cls} for these params and the manager sent no approval evidence`);
    }
  });

  test("the legitimate cases pass: dangerous with two approvers and an SOP, mutating with one, bypass with none", () => {
    expect(evidenceProblem(KEY, call("dangerous"), sent())).toBeUndefined();
    expect(evidenceProblem(KEY, call("mutating"), sent({ effectiveClass: "mutating", approvers: ["alice"], sopHash: "" }))).toBeUndefined();
    // A call the manager classed higher than the edge does is fine.
    expect(evidenceProblem(KEY, call("mutating"), sent())).toBeUndefined();
    for (const cls of ["mutating", "dangerous"] as const) {
      expect(evidenceProblem(KEY, call(cls), sent({ effectiveClass: cls, approvalId: "", approvers: [], sopHash: "", reasonType: "bypass" }))).toBeUndefined();
    }
  });

  const DOES_NOT_VERIFY = /^the approval evidence for "service_restart" does not verify/;

  test("a forged MAC (random bytes) is refused", () => {
    for (let i = 0; i < 5; i++) expect(evidenceProblem(KEY, call("dangerous"), { ...sent(), mac: randomBytes(32) })).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("mutating"), { ...sent({ reasonType: "bypass" }), mac: randomBytes(32) })).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("mutating"), { ...sent(), mac: new Uint8Array(0) })).toMatch(DOES_NOT_VERIFY);
  });

  test("evidence MAC'd with another edge's token key is refused", () => {
    expect(evidenceProblem(KEY, call("dangerous"), sent({}, OTHER_KEY))).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(OTHER_KEY, call("dangerous"), sent())).toMatch(DOES_NOT_VERIFY);
  });

  test("evidence for another call (id, key, params) is refused; reordered param keys are the same call", () => {
    const ev = sent();
    expect(evidenceProblem(KEY, call("dangerous", { callId: "call-9" }), ev)).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("dangerous", { key: "service_stop" }), ev)).toMatch(/^the approval evidence for "service_stop" does not verify/);
    expect(evidenceProblem(KEY, call("dangerous", { params: { ...(BASE.params as object), unit: "sshd.service" } }), ev)).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("dangerous", { params: { hosts: ["a", "b"], unit: "nginx.service", opts: { delay: 5, now: true } } }), ev)).toBeUndefined();
  });

  test("evidence fields altered in transit are refused", () => {
    const ev = sent({ effectiveClass: "mutating", approvers: ["alice"], sopHash: "" });
    expect(evidenceProblem(KEY, call("mutating"), { ...ev, approvers: ["alice", "bob"] })).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("mutating"), { ...ev, reasonType: "bypass", approvers: [] })).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("mutating"), { ...ev, effectiveClass: "dangerous" })).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("mutating"), { ...ev, approvalId: "apr_other" })).toMatch(DOES_NOT_VERIFY);
    expect(evidenceProblem(KEY, call("mutating"), { ...ev, effectiveClass: undefined })).toMatch(DOES_NOT_VERIFY);
  });

  test("a class lower than the edge's own classification is refused, even with a valid MAC", () => {
    expect(evidenceProblem(KEY, call("dangerous"), sent({ effectiveClass: "mutating" }))).toBe(
      'the manager approved "service_restart" as mutating, but this edge classifies these params as dangerous',
    );
    expect(evidenceProblem(KEY, call("mutating"), sent({ effectiveClass: "safe", approvers: [], sopHash: "", reasonType: "safe" }))).toBe(
      'the manager approved "service_restart" as safe, but this edge classifies these params as mutating',
    );
    // Bypass does not get around the class check.
    expect(evidenceProblem(KEY, call("dangerous"), sent({ effectiveClass: "mutating", approvers: [], reasonType: "bypass" }))).toMatch(/approved "service_restart" as mutating/);
  });

  test("a mutating call without approvers is refused unless bypassed", () => {
    expect(evidenceProblem(KEY, call("mutating"), sent({ effectiveClass: "mutating", approvers: [], sopHash: "" }))).toBe('"service_restart" is mutating and the evidence names no approver');
    expect(evidenceProblem(KEY, call("mutating"), sent({ effectiveClass: "mutating", approvers: [], sopHash: "", reasonType: "approval_required" }))).toMatch(/names no approver/);
  });

  test("a dangerous call needs two distinct approvers and an SOP hash", () => {
    expect(evidenceProblem(KEY, call("dangerous"), sent({ approvers: ["alice"] }))).toBe(
      '"service_restart" is dangerous and needs two approvers and an SOP; the evidence has 1 and an SOP',
    );
    expect(evidenceProblem(KEY, call("dangerous"), sent({ sopHash: "" }))).toBe('"service_restart" is dangerous and needs two approvers and an SOP; the evidence has 2 and no SOP');
    expect(evidenceProblem(KEY, call("dangerous"), sent({ approvers: [] }))).toMatch(/names no approver/);
    expect(evidenceProblem(KEY, call("dangerous"), sent({ approvers: ["alice", "bob", "carol"] }))).toBeUndefined();
  });

  test("duplicate approver names count once", () => {
    expect(evidenceProblem(KEY, call("dangerous"), sent({ approvers: ["alice", "alice"] }))).toMatch(/the evidence has 1 and an SOP/);
    expect(evidenceProblem(KEY, call("dangerous"), sent({ approvers: ["alice", "alice", "alice"] }))).toMatch(/needs two approvers/);
    expect(evidenceProblem(KEY, call("dangerous"), sent({ approvers: ["alice", "bob", "alice"] }))).toBeUndefined();
    expect(evidenceProblem(KEY, call("mutating"), sent({ effectiveClass: "mutating", approvers: ["alice", "alice"], sopHash: "" }))).toBeUndefined();
  });
});
