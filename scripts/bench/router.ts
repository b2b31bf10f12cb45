/**
 * The router benchmark (I3): labelled alert texts (English and Chinese) go through the real router
 * without a model (createRouter, no model client, an in-memory store, the built-in playbooks), so
 * the scope check and the ranking decide (rank.ts). Accuracy is compared with "always
 * generic_oncall" (refuses nothing) measured on the same cases in the same run.
 *
 * Two sets: the tuning set (router-cases.json and router-cases-holdout.json: the playbooks'
 * `examples` come from it, so its plain accuracy is training accuracy; its leave-one-out accuracy
 * — each case ranked against playbooks whose examples leave it out — is what the calibration
 * maximises) and the held-back set (router-cases-heldback.json: written apart from the router,
 * never read while tuning; its accuracy is the figure for unseen incidents). `--calibrate` prints
 * the leave-one-out grid over RANK_CALIBRATION. It also measures the router prompt (routerMessages)
 * with no recall, with recalled pages as index lines and as whole pages. No network; seconds.
 * Prints a table and writes JSON (scripts/bench/results/router.json).
 *
 *   npx tsx scripts/bench/router.ts [--cases FILE] [--tuning FILE,FILE] [--recall-dir DIR] [--out FILE] [--calibrate]
 *
 * A case is {text, expected: playbook name | null (not an operations question), lang: "en" | "zh"};
 * a decision is right when expected is null and the router refused (isOncall false), or when it
 * routed to the expected playbook. Tokens are estimated as ⌈characters / 4⌉ of all message contents,
 * which undercounts Chinese text (about one token per character); the characters are reported too.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { createDirectoryRecall, type RecalledPage } from "../../manager/agent/router/recall.ts";
import { createRouter, recallBlock, routerMessages, type RecallLevel, type RouteDecision } from "../../manager/agent/router/router.ts";
import { createRanker, decideRoute, decideScope, RANK_CALIBRATION, type RankCalibration, type RankFeatures } from "../../manager/agent/router/rank.ts";
import type { Playbook } from "../../manager/playbooks/parse.ts";
import { OFF_TOPIC_EXAMPLES } from "../../manager/agent/router/scope-reference.ts";
import { createPlaybookRegistry, GENERIC_PLAYBOOK } from "../../manager/playbooks/registry.ts";
import { redactString } from "../../skill/redact.ts";
import { infoRow, table, writeJson, type Row } from "./lib/report.ts";
import { quantile } from "./lib/stats.ts";

const HERE = import.meta.dirname;
/** Pages recalled per route: the router's default recallLimit. */
const RECALL_LIMIT = 3;
const CHARS_PER_TOKEN = 4;

function flags() {
  const { values } = parseArgs({
    options: {
      cases: { type: "string" },
      tuning: { type: "string" },
      "recall-dir": { type: "string" },
      out: { type: "string" },
      calibrate: { type: "boolean" },
    },
  });
  return {
    cases: resolve(values.cases ?? join(HERE, "router-cases-heldback3.json")),
    tuning: (values.tuning ?? ["router-cases.json", "router-cases-holdout.json", "router-cases-heldback.json", "router-cases-heldback2.json"].map((f) => join(HERE, f)).join(",")).split(",").map((f) => resolve(f)),
    calibrate: Boolean(values.calibrate),
    recallDir: resolve(values["recall-dir"] ?? join(HERE, "fixtures", "past-diagnoses")),
    out: resolve(values.out ?? join(HERE, "results", "router.json")),
  };
}

/** One labelled alert text. */
interface Case {
  text: string;
  /** The playbook it should be routed to; null when it is not an operations question. */
  expected: string | null;
  lang: string;
}

/** Reads and checks the labelled set; every expected name must be a loaded playbook. */
function readCases(file: string, names: ReadonlySet<string>): Case[] {
  const raw: unknown = JSON.parse(readFileSync(file, "utf8"));
  if (!Array.isArray(raw) || raw.length === 0) throw new Error(`${file}: must be a non-empty JSON array of {text, expected, lang}`);
  return raw.map((c: Partial<Case>, i) => {
    const at = `${file}: case ${i}`;
    if (typeof c?.text !== "string" || c.text.trim() === "") throw new Error(`${at}: text must be a non-empty string`);
    if (c.expected !== null && typeof c.expected !== "string") throw new Error(`${at}: expected must be a playbook name or null`);
    if (c.expected !== null && !names.has(c.expected)) throw new Error(`${at}: expected "${c.expected}" is not a loaded playbook (${[...names].join(", ")})`);
    if (typeof c.lang !== "string" || c.lang === "") throw new Error(`${at}: lang must be a string such as "en" or "zh"`);
    return { text: c.text, expected: c.expected, lang: c.lang };
  });
}

/** The decision as a label: the playbook, or null when the router refused. */
const labelOf = (d: RouteDecision): string | null => (d.isOncall ? d.skillName : null);
const show = (label: string | null) => label ?? "(refused)";
const pct = (hits: number, n: number) => (n ? (100 * hits) / n : Number.NaN);

/** Accuracy of `got` against the cases, overall and grouped by `key`. */
function accuracy(cases: readonly Case[], got: ReadonlyArray<string | null>, key: (c: Case) => string) {
  const groups = new Map<string, { n: number; correct: number }>();
  cases.forEach((c, i) => {
    const g = groups.get(key(c)) ?? { n: 0, correct: 0 };
    g.n++;
    if (got[i] === c.expected) g.correct++;
    groups.set(key(c), g);
  });
  return Object.fromEntries([...groups].map(([k, g]) => [k, { ...g, accuracy_pct: pct(g.correct, g.n) }]));
}

/** mean / p50 / max of a sample. */
function summary(values: readonly number[]) {
  return { mean: values.reduce((a, b) => a + b, 0) / values.length, p50: quantile(values, 0.5), max: Math.max(...values) };
}

/**
 * The features of each case with that case left out of the playbooks' examples (leave-one-out):
 * what the router would read had the case never been an example.
 */
function leaveOneOutFeatures(cases: readonly Case[], playbooks: readonly Playbook[]): RankFeatures[] {
  return cases.map((c) =>
    createRanker(
      playbooks.map((p) => ({ ...p, examples: p.examples.filter((e) => e !== c.text) })),
      RANK_CALIBRATION,
      OFF_TOPIC_EXAMPLES.filter((e) => e !== c.text),
    ).features(redactString(c.text.trim())),
  );
}

/** The no-model decision from features under a calibration. */
const decide = (f: RankFeatures, calibration: RankCalibration): string | null => (decideScope(f, calibration).outOfScope ? null : decideRoute(f, calibration).skillName);

/** Leave-one-out accuracy over a grid around RANK_CALIBRATION: the calibration's evidence. */
function calibrate(cases: readonly Case[], features: readonly RankFeatures[]) {
  const grid: Array<{ calibration: RankCalibration; correct: number }> = [];
  // Routing and scope are decided apart (a refused case never reaches the ranking), so the grid is
  // their product: every routing point with every scope point.
  for (const triggerWeight of [1.5, 2, 3])
    for (const minScore of [2, 3, 4])
      for (const minMargin of [0.1, 0.15, 0.2, 0.3])
        for (const offTopicRatio of [0.25, 0.5, 0.75, 1, 1.5])
          for (const minOpsShare of [0, 0.1, 0.2, 0.25, 0.3])
            for (const specificOps of [0, 1])
              for (const everydayWeight of [0, 0.1, 0.25, 0.5, 1]) {
                const calibration = { triggerWeight, minScore, minMargin, offTopicRatio, minOpsShare, technicalWeight: 1, specificOps, everydayWeight };
                grid.push({ calibration, correct: features.filter((f, i) => decide(f, calibration) === cases[i].expected).length });
              }
  return grid.sort((a, b) => b.correct - a.correct);
}

type Variant = "none" | RecallLevel;
const VARIANTS: readonly Variant[] = ["none", "index", "full"];

async function main(): Promise<number> {
  const began = performance.now();
  const opt = flags();
  const silent = pino({ level: "silent" });
  const registry = createPlaybookRegistry({ dirs: [], disabled: [], log: silent });
  const playbooks = [...registry.current().playbooks.values()];
  const names = new Set(playbooks.map((p) => p.name));
  const cases = readCases(opt.cases, names);
  const corpus = readdirSync(opt.recallDir, { recursive: true }).filter((f) => String(f).endsWith(".md")).length;
  if (corpus === 0) throw new Error(`${opt.recallDir}: no past diagnoses (*.md) to recall from; pass --recall-dir`);

  // 1. Routing: the real router, no model → pre-check, then rules.
  const stored: RouteDecision[] = [];
  const router = createRouter({ playbooks: registry, store: { insert: async (d) => void stored.push(d) }, log: silent });
  const decisions: RouteDecision[] = [];
  for (const c of cases) decisions.push(await router.route({ text: c.text }));
  if (stored.length !== cases.length) throw new Error(`the router stored ${stored.length} decisions for ${cases.length} cases`);
  const got = decisions.map(labelOf);
  const baseline = cases.map(() => GENERIC_PLAYBOOK);

  const byLang = (c: Case) => c.lang;
  const byLabel = (c: Case) => show(c.expected);
  const all = () => "all";
  const byScope = (c: Case) => (c.expected === null ? "off_topic" : "operations");
  const rules = { overall: accuracy(cases, got, all).all, by_scope: accuracy(cases, got, byScope), by_lang: accuracy(cases, got, byLang), by_expected: accuracy(cases, got, byLabel) };
  const always = { overall: accuracy(cases, baseline, all).all, by_scope: accuracy(cases, baseline, byScope), by_lang: accuracy(cases, baseline, byLang), by_expected: accuracy(cases, baseline, byLabel) };

  // The pre-check as a classifier of "not an operations question" (positive = refused).
  const refused = decisions.map((d) => d.path === "out_of_scope");
  const tp = cases.filter((c, i) => c.expected === null && refused[i]).length;
  const fp = cases.filter((c, i) => c.expected !== null && refused[i]).length;
  const fn = cases.filter((c, i) => c.expected === null && !refused[i]).length;
  const scope = { true_positives: tp, false_positives: fp, false_negatives: fn, precision_pct: pct(tp, tp + fp), recall_pct: pct(tp, tp + fn) };

  const misses = cases.flatMap((c, i) =>
    got[i] === c.expected ? [] : [{ text: c.text, lang: c.lang, expected: show(c.expected), got: show(got[i]), path: decisions[i].path, reason: decisions[i].reason }],
  );
  const confusion: Record<string, Record<string, number>> = {};
  cases.forEach((c, i) => {
    const row = (confusion[show(c.expected)] ??= {});
    row[show(got[i])] = (row[show(got[i])] ?? 0) + 1;
  });

  // The tuning set: training accuracy (its cases are the playbooks' examples) and leave-one-out accuracy.
  const tuningCases = opt.tuning.flatMap((f) => readCases(f, names));
  const tuningRouter = createRouter({ playbooks: registry, store: { insert: async () => {} }, log: silent });
  const tuningGot: Array<string | null> = [];
  for (const c of tuningCases) tuningGot.push(labelOf(await tuningRouter.route({ text: c.text })));
  const looFeatures = leaveOneOutFeatures(tuningCases, playbooks);
  const looGot = looFeatures.map((f) => decide(f, RANK_CALIBRATION));
  const tuning = {
    cases: tuningCases.length,
    training: accuracy(tuningCases, tuningGot, all).all,
    leave_one_out: accuracy(tuningCases, looGot, all).all,
    leave_one_out_by_lang: accuracy(tuningCases, looGot, byLang),
    leave_one_out_misses: tuningCases.flatMap((c, i) => (looGot[i] === c.expected ? [] : [{ text: c.text, expected: show(c.expected), got: show(looGot[i]) }])),
  };
  const grid = opt.calibrate ? calibrate(tuningCases, looFeatures) : [];

  // 2. Prompt size: the messages the model would get, with the router's own input handling (trim, redact).
  const recall = createDirectoryRecall(opt.recallDir);
  const chars: Record<Variant, number[]> = { none: [], index: [], full: [] };
  const recalledCounts: number[] = [];
  for (const c of cases) {
    const text = redactString(c.text.trim());
    const pages: RecalledPage[] = recall.search(text, RECALL_LIMIT);
    recalledCounts.push(pages.length);
    for (const v of VARIANTS) {
      const messages = routerMessages(text, playbooks, v === "none" ? "" : recallBlock(pages, v));
      chars[v].push(messages.reduce((n, m) => n + m.content.length, 0));
    }
  }
  const tokens = (v: Variant) => chars[v].map((n) => Math.ceil(n / CHARS_PER_TOKEN));
  const withRecall = recalledCounts.filter((n) => n > 0).length;
  const prompt = Object.fromEntries(VARIANTS.map((v) => [v, { chars: summary(chars[v]), tokens: summary(tokens(v)) }])) as Record<Variant, { chars: ReturnType<typeof summary>; tokens: ReturnType<typeof summary> }>;

  // The table: ongrid = the rules (or index lines), baseline = always generic_oncall (or whole pages).
  const rows: Row[] = [
    infoRow("accuracy, all cases", "%", rules.overall.accuracy_pct, always.overall.accuracy_pct),
    ...(rules.by_scope.operations ? [infoRow(`accuracy, operations cases (n=${rules.by_scope.operations.n})`, "%", rules.by_scope.operations.accuracy_pct, always.by_scope.operations.accuracy_pct)] : []),
    ...Object.keys(rules.by_lang).map((k) => infoRow(`accuracy, ${k}`, "%", rules.by_lang[k].accuracy_pct, always.by_lang[k].accuracy_pct)),
    ...Object.keys(rules.by_expected).map((k) => infoRow(`accuracy, expected ${k} (n=${rules.by_expected[k].n})`, "%", rules.by_expected[k].accuracy_pct, always.by_expected[k].accuracy_pct)),
    infoRow(`tuning set, leave-one-out (n=${tuning.cases})`, "%", tuning.leave_one_out.accuracy_pct),
    infoRow(`tuning set, training (its cases are the examples)`, "%", tuning.training.accuracy_pct),
    infoRow("out-of-scope pre-check precision", "%", scope.precision_pct),
    infoRow("out-of-scope pre-check recall", "%", scope.recall_pct, 0),
    infoRow(`cases recalling >= 1 page (${withRecall} of ${cases.length})`, "%", pct(withRecall, cases.length)),
    ...(["mean", "p50", "max"] as const).map((s) => infoRow(`router prompt ${s}, index lines vs whole pages`, "tokens", prompt.index.tokens[s], prompt.full.tokens[s])),
    ...(["mean", "p50", "max"] as const).map((s) => infoRow(`router prompt ${s}, no recall`, "tokens", prompt.none.tokens[s])),
  ];

  const totalS = (performance.now() - began) / 1000;
  console.log(`\nongrid router benchmark — ${cases.length} cases (${Object.entries(rules.by_lang).map(([k, g]) => `${g.n} ${k}`).join(", ")}), no model: pre-check + rules; node ${process.version}`);
  console.log(`accuracy baseline: always ${GENERIC_PLAYBOOK} (refuses nothing); prompt baseline: whole recalled pages; recall: top ${RECALL_LIMIT} of ${corpus} pages in ${opt.recallDir}\n`);
  console.log(table(rows));
  console.log(`\nprompt size per case (chars / tokens ≈ chars/${CHARS_PER_TOKEN}):`);
  for (const v of VARIANTS) {
    const p = prompt[v];
    console.log(`  ${(v === "none" ? "no recall" : v === "index" ? "index lines" : "whole pages").padEnd(12)} chars mean ${p.chars.mean.toFixed(0).padStart(6)}  p50 ${String(p.chars.p50).padStart(6)}  max ${String(p.chars.max).padStart(6)}   tokens mean ${p.tokens.mean.toFixed(0).padStart(5)}  p50 ${String(p.tokens.p50).padStart(5)}  max ${String(p.tokens.max).padStart(5)}`);
  }
  if (grid.length) {
    console.log(`\ncalibration (leave-one-out on the ${tuning.cases} tuning cases), best 15 of ${grid.length}; in use: ${JSON.stringify(RANK_CALIBRATION)}`);
    for (const g of grid.slice(0, 15)) console.log(`  ${g.correct}/${tuning.cases}  ${JSON.stringify(g.calibration)}`);
  }
  console.log(`\ntuning set leave-one-out misses (${tuning.leave_one_out_misses.length} of ${tuning.cases}):`);
  for (const m of tuning.leave_one_out_misses) console.log(`  ${m.text.slice(0, 100)}\n       got ${m.got}, expected ${m.expected}`);
  console.log(`\nmisses on ${opt.cases} (${misses.length} of ${cases.length}):`);
  for (const m of misses) console.log(`  [${m.lang}] ${m.text}\n       got ${m.got} (${m.path}), expected ${m.expected}`);

  writeJson(opt.out, {
    benchmark: "router",
    date: new Date().toISOString(),
    duration_s: totalS,
    machine: { node: process.version, platform: `${process.platform}/${process.arch}` },
    params: { cases_file: opt.cases, cases: cases.length, recall_dir: opt.recallDir, recall_pages: corpus, recall_limit: RECALL_LIMIT, chars_per_token: CHARS_PER_TOKEN, playbooks: [...names] },
    variants: {
      rules: "createRouter without a model client (in-memory store, built-in playbooks): the scope check, then the ranking (rank.ts createRanker: triggers + BM25 over playbook fields and examples, RANK_CALIBRATION)",
      baseline: `always ${GENERIC_PLAYBOOK}: refuses nothing`,
      prompt: "routerMessages(redacted text, playbooks, recallBlock(createDirectoryRecall(recall_dir).search(text, recall_limit), level)); size = characters of all message contents, tokens = ceil(chars / chars_per_token)",
    },
    metrics: rows,
    details: {
      accuracy: { rules, baseline: always },
      tuning,
      calibration: { in_use: RANK_CALIBRATION, grid_best: grid.slice(0, 30), grid_all: opt.calibrate ? grid : undefined },
      out_of_scope_precheck: scope,
      confusion,
      misses,
      prompt: { ...prompt, cases_recalling_at_least_one_page: withRecall, pages_recalled_mean: recalledCounts.reduce((a, b) => a + b, 0) / cases.length },
    },
  });
  console.log(`\nJSON: ${opt.out}\ntotal time: ${totalS.toFixed(1)} s`);
  return 0;
}

main()
  .catch((err: Error) => {
    console.error(`bench failed: ${err.stack ?? err}`);
    return 1;
  })
  .then((code) => process.exit(code));
