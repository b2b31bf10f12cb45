/**
 * The Verifier of a session (J2): isolated (no tools, no conversation), the model reads only the
 * report and the evidence and lists the claims no evidence supports. A failure says so rather
 * than passing the report as supported. Before the model, a rule (I4): a report must cite at
 * least one evidence step, and only steps that exist; guidance (the playbook read with
 * read_skill) is not evidence and is never given to the verifier as such. A report that cites no
 * evidence fails without asking the model.
 */
import { citedSteps, evidenceText, type EvidenceItem } from "./evidence.ts";
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
  // Only evidence items count, whatever the caller passed.
  const evidence = o.evidence.filter((e) => !e.guidance);
  const steps = new Set(evidence.map((e) => e.step));
  const cited = citedSteps(o.report);
  const unknown = [...cited].filter((n) => !steps.has(n)).sort((a, b) => a - b);
  const citesEvidence = [...cited].some((n) => steps.has(n));
  if (!evidence.length) {
    return { type: "verdict", verdict: "unsupported_claims", unsupported: ["the report rests on no evidence: no evidence tool ran in this session (a playbook read with read_skill is guidance, not evidence)"], notes: "not sent to the model: with no evidence every claim about the systems is unsupported" };
  }
  if (!citesEvidence) {
    return {
      type: "verdict",
      verdict: "unsupported_claims",
      unsupported: [`the report cites no evidence step: its claims must cite what a tool returned by step number [1]…[${Math.max(...steps)}]`, ...(unknown.length ? [`cites ${unknown.map((n) => `[${n}]`).join(", ")}, which is no evidence step of this session`] : [])],
      notes: "not sent to the model: a report that cites no evidence tool fails verification",
    };
  }
  const ruled = unknown.length ? [`cites ${unknown.map((n) => `[${n}]`).join(", ")}, which is no evidence step of this session`] : [];
  try {
    const res = await o.model.structured<Verdict>({
      schemaName: "verdict",
      schema: VERDICT_SCHEMA as unknown as Record<string, unknown>,
      signal: o.signal,
      messages: [
        { role: "system", content: "You verify an SRE diagnosis report. List every claim about the systems that no evidence item supports (unsupported_claims); verdict is supported only when there is none. Do not judge style." },
        { role: "user", content: `Report:\n<<<\n${o.report}\n>>>\n\nEvidence:\n<<<\n${evidenceText(evidence)}\n>>>` },
      ],
    });
    const unsupported = [...ruled, ...res.value.unsupported_claims];
    return { type: "verdict", verdict: unsupported.length ? "unsupported_claims" : res.value.verdict, unsupported, notes: res.value.notes };
  } catch (err) {
    return { type: "verdict", verdict: "not_verified", unsupported: [], notes: `the verifier failed (${failureOf(err)}); read the report against the evidence yourself` };
  }
}
