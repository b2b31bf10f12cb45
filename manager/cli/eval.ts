/**
 * `ongrid eval`: runs the playbooks' evaluation cases (J6) through the real diagnosis path on a
 * throwaway manager and a simulated edge serving each case's recorded outputs, and reports per
 * case and in total. No model by default (the fallback path); --model uses the configured one.
 */
import { Command } from "commander";
import { pino } from "pino";
import { OngridError } from "../../skill/errors.ts";
import { openPlaybooks } from "../core.ts";
import { loadEvalCases, requireNoProblems } from "../eval/cases.ts";
import { runEval, type CaseResult } from "../eval/run.ts";
import { createManagerRegistry } from "../skills/builtin/index.ts";
import { cliConfig, printTable, type CoreOptions } from "./common.ts";

const pct = (x: number | null) => (x === null ? "—" : `${Math.round(x * 100)}%`);

/** Builds `ongrid eval`. */
export function evalCommand(): Command {
  return new Command("eval")
    .description("run the playbooks' evaluation cases against recorded fleet state (a simulated edge) and score routing, evidence, findings, unsupported claims, steps, tokens and time")
    .option("--config <file>", "config file (YAML); also ONGRID_CONFIG: its model (with --model), playbook and pack directories")
    .option("--playbook <name>", "only the cases of this playbook's eval anchor")
    .option("--case <id>", "only this case")
    .option("--model", "use the configured model (model.base_url, model.model); without it the fallback path (no model) is measured")
    .option("--json", 'print {"cases":[…],"summary":{…}} on stdout')
    .action(async (opts: CoreOptions & { playbook?: string; case?: string; model?: boolean; json?: boolean }) => {
      const config = cliConfig(opts);
      const log = pino({ level: "silent" });
      const playbooks = openPlaybooks(config, createManagerRegistry(log), () => [], log).current().playbooks;
      if (opts.playbook && !playbooks.has(opts.playbook)) throw new OngridError("invalid_argument", `--playbook: "${opts.playbook}" is not a loaded playbook (rule: known_playbook)`, `loaded: ${[...playbooks.keys()].sort().join(", ")}`);
      if (opts.model && (!config.model.base_url || !config.model.model)) throw new OngridError("failed_precondition", "--model: no model is configured (model.base_url and model.model)", "set them in the config file or ONGRID_MODEL_BASE_URL and ONGRID_MODEL, or run without --model to measure the fallback path");
      const loaded = loadEvalCases(playbooks.values());
      requireNoProblems(loaded.problems);
      const cases = loaded.cases.filter((c) => (!opts.playbook || c.anchor === opts.playbook) && (!opts.case || c.id === opts.case));
      if (!cases.length) throw new OngridError("not_found", "no evaluation case matches", "every playbook's cases are in eval.yaml beside its SKILL.md; `ongrid eval` without filters runs them all");
      const progress = (r: CaseResult) => {
        if (!opts.json) console.error(`${r.routing_ok ? "ok " : "MISS"} ${r.id}: ${r.routed ?? "(refused)"}${r.routing_ok ? "" : ` (expected ${r.expected_playbook ?? "(refused)"})`}, evidence ${pct(r.evidence.coverage)}, findings ${pct(r.findings.share)}${r.unsupported.count ? `, ${r.unsupported.count} unsupported` : ""}`);
      };
      const out = await runEval({ cases, config, model: Boolean(opts.model), log, onCase: progress });
      if (opts.json) {
        console.log(JSON.stringify(out));
        return;
      }
      printTable(
        out.cases.map((r) => ({
          case: r.id,
          lang: r.lang,
          expected: r.expected_playbook ?? "(refuse)",
          routed: r.routed ?? "(refused)",
          evidence: pct(r.evidence.coverage),
          findings: pct(r.findings.share),
          unsupported: String(r.unsupported.count),
          steps: String(r.steps),
          tokens: String(r.tokens),
          ms: String(r.latency_ms),
        })),
        ["case", "lang", "expected", "routed", "evidence", "findings", "unsupported", "steps", "tokens", "ms"],
      );
      const s = out.summary;
      console.log(
        `\n${s.cases} cases, ${s.path} path${s.model ? ` (${s.model})` : ""}: routing ${pct(s.routing_accuracy)}, evidence coverage ${pct(s.evidence_coverage)}, findings stated ${pct(s.findings_stated)}, unsupported claims ${s.unsupported_claims}, steps ${s.steps_mean} a case, tokens ${s.tokens_total}, latency p50 ${s.latency_ms_p50} ms${s.failed_cases ? `; ${s.failed_cases} sessions failed` : ""}`,
      );
    });
}
