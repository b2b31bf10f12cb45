/**
 * Approval evidence on a non-safe tunnel call (defence in depth): the manager signs what let the
 * call through with an HMAC keyed by the SHA-256 (hex) of the edge's token, over the call itself,
 * so an edge can refuse a non-safe call that its manager's gate did not release.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { canonicalJson } from "./canonical.ts";
import type { SkillClass } from "./types.ts";

/** What the evidence states about one call. */
export interface EvidenceFields {
  callId: string;
  key: string;
  params: unknown;
  approvalId: string;
  approvers: readonly string[];
  sopHash: string;
  effectiveClass: SkillClass;
  reasonType: string;
}

/** The MAC key both sides know: sha256 hex of the edge's token (the manager stores only that). */
export function evidenceKey(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** HMAC-SHA256 over the canonical JSON of the fields. */
export function evidenceMac(keyHex: string, f: EvidenceFields): Buffer {
  const text = canonicalJson({
    v: 1,
    callId: f.callId,
    key: f.key,
    params: f.params ?? {},
    approvalId: f.approvalId,
    approvers: [...f.approvers],
    sopHash: f.sopHash,
    effectiveClass: f.effectiveClass,
    reasonType: f.reasonType,
  });
  return createHmac("sha256", keyHex).update(text, "utf8").digest();
}

/** Checks a MAC in constant time. */
export function evidenceValid(keyHex: string, f: EvidenceFields, mac: Uint8Array): boolean {
  const want = evidenceMac(keyHex, f);
  return mac.length === want.length && timingSafeEqual(want, Buffer.from(mac));
}

const RANK: Record<SkillClass, number> = { safe: 0, mutating: 1, dangerous: 2 };

/** Evidence as an edge receives it (class already converted from the contract). */
export interface ReceivedEvidence {
  approvalId: string;
  approvers: readonly string[];
  sopHash: string;
  effectiveClass: SkillClass | undefined;
  reasonType: string;
  mac: Uint8Array;
}

/**
 * The edge's check of a call it classifies as `cls`: undefined when it may run, else why not.
 * A safe call needs nothing; a non-safe one needs evidence whose MAC verifies, whose class is at
 * least the edge's own classification, and (unless the manager ran it in BYPASS mode) one
 * approver for mutating, or two and an SOP hash for dangerous.
 */
export function evidenceProblem(keyHex: string, call: { callId: string; key: string; params: unknown; cls: SkillClass }, ev: ReceivedEvidence | undefined): string | undefined {
  if (call.cls === "safe") return undefined;
  if (!ev) return `"${call.key}" is ${call.cls} for these params and the manager sent no approval evidence`;
  const fields: EvidenceFields = {
    callId: call.callId,
    key: call.key,
    params: call.params,
    approvalId: ev.approvalId,
    approvers: ev.approvers,
    sopHash: ev.sopHash,
    effectiveClass: ev.effectiveClass ?? "safe",
    reasonType: ev.reasonType,
  };
  if (!ev.effectiveClass || !evidenceValid(keyHex, fields, ev.mac)) return `the approval evidence for "${call.key}" does not verify (not from this edge's manager, or for another call)`;
  if (RANK[ev.effectiveClass] < RANK[call.cls]) return `the manager approved "${call.key}" as ${ev.effectiveClass}, but this edge classifies these params as ${call.cls}`;
  if (ev.reasonType === "bypass") return undefined;
  const approvers = new Set(ev.approvers);
  if (approvers.size < 1) return `"${call.key}" is ${call.cls} and the evidence names no approver`;
  if (call.cls === "dangerous" && (approvers.size < 2 || !ev.sopHash)) return `"${call.key}" is dangerous and needs two approvers and an SOP; the evidence has ${approvers.size} and ${ev.sopHash ? "an SOP" : "no SOP"}`;
  return undefined;
}
