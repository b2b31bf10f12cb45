/**
 * The Verifier of a session (J2): isolated (no tools, no conversation), the model reads only the
 * report and the evidence and lists the claims no evidence supports. A failure says so rather
 * than passing the report as supported.
 */
import { evidenceText, type EvidenceItem } from "./evidence.ts";
import { failureOf, type AgentEvent } from "./events.ts";
import type { ModelClient } from "../llm.ts";

/** The verifier's structured answer. */
export const VERDICT_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["verdict", "unsupported_claims", "notes"],
  properties: {
    verdict: { enum: ["supported", "unsupported_claims"] },
    unsupported_claims: { type: "array", maxItems: 20, items: { type: "string", maxLength: 500 } },
    notes: { type: "string", maxLength: 1000 },
  },
} as const;

interface Verdict {
  verdict: "supported" | "unsupported_claims";
  unsupported_claims: string[];
  notes: string;
}

/** What the verifier is given. */
export interface VerifierInput {
  model: ModelClient;
  /** The executor's report, Markdown. */
  report: string;
  evidence: readonly EvidenceItem[];
  signal?: AbortSignal;
}

/** Checks the report against the evidence: a structured call, so the request carries no tools. */
export async function runVerifier(o: VerifierInput): Promise<Extract<AgentEvent, { type: "verdict" }>> {
  try {
    const res = await o.model.structured<Verdict>({
      schemaName: "verdict",
      schema: VERDICT_SCHEMA as unknown as Record<string, unknown>,
      signal: o.signal,
      messages: [
        { role: "system", content: "You verify an SRE diagnosis report. List every claim about the systems that no evidence item supports (unsupported_claims); verdict is supported only when there is none. Do not judge style." },
        { role: "user", content: `Report:\n<<<\n${o.report}\n>>>\n\nEvidence:\n<<<\n${evidenceText(o.evidence)}\n>>>` },
      ],
    });
    return { type: "verdict", verdict: res.value.verdict, unsupported: res.value.unsupported_claims, notes: res.value.notes };
  } catch (err) {
    return { type: "verdict", verdict: "not_verified", unsupported: [], notes: `the verifier failed (${failureOf(err)}); read the report against the evidence yourself` };
  }
}
