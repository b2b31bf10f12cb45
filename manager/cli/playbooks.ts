/** `ongrid playbooks list|show|reload|check` and `ongrid route "text"`: the playbook registry and the router from the command line. */
import { Command } from "commander";
import { toJson } from "@bufbuild/protobuf";
import { pino } from "pino";
import { PlaybookSchema, RoutePath, type Playbook as PlaybookProto, type PlaybookProblem as ProblemProto } from "../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { OngridError } from "../../skill/errors.ts";
import { createManagerRegistry } from "../skills/builtin/index.ts";
import { playbookToProto, decisionToProto, listPlaybooksResponse } from "../rpc/messages/playbook.ts";
import { formatPlaybookProblem, type PlaybookProblem } from "../playbooks/parse.ts";
import { openPlaybooks } from "../core.ts";
import type { ManagerConfig } from "../config/schema.ts";
import { cliConfig, managerUrl, managerUrlOrLocal, printTable, rpcClients, withCore, withCoreOptions, type CoreOptions } from "./common.ts";

/** The registry as this machine's config and the given extra directories would load it, without a manager. */
function localRegistry(config: ManagerConfig, extraDirs: string[] = []) {
  const log = pino({ level: "silent" });
  const withExtra = { ...config, playbooks: { ...config.playbooks, dirs: [config.playbooks.dirs, ...extraDirs].filter(Boolean).join(":") } };
  return openPlaybooks(withExtra, createManagerRegistry(log), () => [], log);
}

async function listed(opts: CoreOptions): Promise<{ playbooks: PlaybookProto[]; problems: Array<Omit<ProblemProto, "$typeName">>; skipped: Array<{ name: string; file: string; reason: string }> }> {
  const url = managerUrl(opts);
  if (url) return rpcClients(url, opts).playbooks.listPlaybooks({});
  return listPlaybooksResponse(localRegistry(cliConfig(opts)).current());
}

const problemLine = (p: Omit<PlaybookProblem, "severity"> & { severity: string }) => `${p.severity}: ${formatPlaybookProblem(p)}`;

/** Builds the `playbooks` command group. */
export function playbooksCommand(): Command {
  const cmd = new Command("playbooks").description("SKILL.md playbooks: how to diagnose a class of incident and which tools to use");

  withCoreOptions(cmd.command("list").description("list the playbooks (of a running manager with --manager, else as this config loads them)"))
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions) => {
      const r = await listed(opts);
      if (opts.json) return console.log(JSON.stringify({ playbooks: r.playbooks.map((p) => toJson(PlaybookSchema, p)), problems: r.problems, skipped: r.skipped }));
      printTable(
        r.playbooks.map((p) => ({ name: p.name, risk: p.riskLevel, source: p.source, tools: String(p.allowedTools.length), steps: String(p.fallbackSteps.length), title: p.displayName })),
        ["name", "risk", "source", "tools", "steps", "title"],
      );
      for (const s of r.skipped) console.error(`skipped: ${s.name} (${s.file}): ${s.reason}`);
      for (const p of r.problems) console.error(problemLine(p));
    });

  withCoreOptions(cmd.command("show").description("print one playbook: frontmatter summary and body").argument("<name>"))
    .option("--json", "print JSON")
    .action(async (name: string, opts: CoreOptions) => {
      const url = managerUrl(opts);
      let p: PlaybookProto | undefined;
      if (url) p = (await rpcClients(url, opts).playbooks.getPlaybook({ name })).playbook;
      else {
        const found = localRegistry(cliConfig(opts)).get(name);
        if (!found) throw new OngridError("not_found", `no playbook named "${name}"`, "`ongrid playbooks list` shows the loaded playbooks");
        p = playbookToProto(found, true);
      }
      if (!p) throw new OngridError("internal", "the manager answered without a playbook");
      if (opts.json) return console.log(JSON.stringify(toJson(PlaybookSchema, p)));
      console.log(`# ${p.displayName} (${p.name})\n${p.description}\nrisk: ${p.riskLevel}  source: ${p.file}`);
      console.log(`allowed tools: ${p.allowedTools.join(", ") || "-"}\ntriggers: ${p.triggers.join(", ") || "-"}`);
      p.fallbackSteps.forEach((s, i) => console.log(`fallback ${i + 1}: ${s.tool} ${JSON.stringify(s.args ?? {})}${s.note ? `  # ${s.note}` : ""}`));
      console.log(`\n${p.body}`);
    });

  withCoreOptions(cmd.command("reload").description("make the running manager read its playbook directories again"))
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions) => {
      const url = managerUrlOrLocal(opts);
      const r = await rpcClients(url, opts).playbooks.reload({});
      if (opts.json) {
        console.log(JSON.stringify({ added: r.added, changed: r.changed, removed: r.removed, loaded: r.loaded, problems: r.problems, skipped: r.skipped, generation: Number(r.generation) }));
      } else {
        console.log(`added: ${r.added.join(", ") || "-"}\nchanged: ${r.changed.join(", ") || "-"}\nremoved: ${r.removed.join(", ") || "-"}\nloaded (${r.loaded.length}): ${r.loaded.join(", ")}`);
        for (const p of r.problems) console.error(problemLine(p));
      }
      if (r.problems.some((p) => p.severity === "error")) process.exitCode = 1;
    });

  withCoreOptions(
    cmd
      .command("check")
      .description("load the built-in playbooks, the configured ones and the given directories without a manager; exit 1 on any refused file (--strict: on warnings too)")
      .argument("[dir...]"),
  )
    .option("--strict", "also fail on warnings (unknown tools, fallback args a tool would refuse, missing body sections)")
    .option("--json", "print JSON")
    .action((dirs: string[], opts: CoreOptions & { strict?: boolean }) => {
      const set = localRegistry(cliConfig(opts), dirs).current();
      if (opts.json) console.log(JSON.stringify({ loaded: [...set.playbooks.keys()].sort(), problems: set.problems, skipped: set.skipped }));
      else {
        for (const p of [...set.playbooks.values()].sort((a, b) => a.name.localeCompare(b.name))) console.log(`ok: ${p.name} (${p.file})`);
        for (const s of set.skipped) console.log(`skipped: ${s.name} (${s.file}): ${s.reason}`);
        for (const p of set.problems) console.error(problemLine(p));
      }
      if (set.problems.some((p) => p.severity === "error" || opts.strict)) process.exitCode = 1;
    });
  return cmd;
}

/** Builds `ongrid route "text"`. */
export function routeCommand(): Command {
  return withCoreOptions(
    new Command("route")
      .description("pick the playbook for an incident description (model when configured, else the ranking: triggers, then BM25 over the playbooks); the decision is stored")
      .argument("<text...>", "the alert or question"),
  )
    .option("--rules-only", "skip the model and decide by rules")
    .option("--json", "print JSON")
    .action(async (words: string[], opts: CoreOptions & { rulesOnly?: boolean }) => {
      const text = words.join(" ");
      const url = managerUrl(opts);
      let d: ReturnType<typeof decisionToProto>;
      if (url) {
        const r = await rpcClients(url, opts).playbooks.route({ text, rulesOnly: Boolean(opts.rulesOnly) });
        if (!r.decision) throw new OngridError("internal", "the manager answered without a decision");
        d = r.decision;
      } else {
        d = await withCore(opts, async (core) => decisionToProto(await core.router.route({ text, rulesOnly: opts.rulesOnly, userId: "cli" })));
      }
      const path = RoutePath[d.path].toLowerCase();
      if (opts.json) {
        console.log(
          JSON.stringify({
            id: d.id,
            is_oncall: d.isOncall,
            skill_name: d.skillName,
            confidence: d.confidence,
            reason: d.reason,
            path,
            fallback_cause: d.fallbackCause,
            recalled: d.recalled,
            model: d.model,
            usage: { prompt_tokens: d.usage?.promptTokens ?? 0, completion_tokens: d.usage?.completionTokens ?? 0 },
            latency_ms: d.latencyMs,
          }),
        );
      } else if (!d.isOncall) {
        console.log(`not routed: ${d.reason}\npath: ${path}`);
      } else {
        console.log(`${d.skillName}  (confidence ${d.confidence.toFixed(2)})\nreason: ${d.reason}\npath: ${path}${d.fallbackCause ? ` (${d.fallbackCause})` : ""}${d.model ? `\nmodel: ${d.model}, tokens ${d.usage?.promptTokens ?? 0}+${d.usage?.completionTokens ?? 0}` : ""}`);
        for (const l of d.recalled) console.log(`recalled: ${l}`);
      }
      if (!d.isOncall) process.exitCode = 3;
    });
}
