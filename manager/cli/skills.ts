/** `ongrid skills list|get|run|lint`. */
import { Command } from "commander";
import { toJson } from "@bufbuild/protobuf";
import { MetadataSchema, PermissionMode, SkillResultSchema } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { ApprovalSchema, type Approval } from "../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { readFileSync } from "node:fs";
import { parseDuration } from "../../skill/duration.ts";
import type { SkillDefinition } from "../../skill/types.ts";
import { OngridError } from "../../skill/errors.ts";
import { addClassifyCommand } from "./classify-command.ts";
import { coerceParams } from "./params.ts";
import { flagError, managerUrl, printTable, rpcClients, withCore, withCoreOptions, type CoreOptions } from "./common.ts";
import { printResult } from "./render.ts";
import type { Metadata } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { classFromProto, classToProto, metadataToProto, resultToProto, scopeFromProto, scopeToProto } from "../rpc/convert.ts";

/** A --mode value, checked. */
async function modeFromFlag(v: string): Promise<"READ_ONLY" | "NORMAL" | "ASK_DESTRUCTIVE" | "BYPASS"> {
  const { MODES } = await import("../calls/gate.ts");
  const m = v.toUpperCase().replace(/-/g, "_");
  if (!(MODES as readonly string[]).includes(m)) flagError("--mode", `"${v}" is not a permission mode (rule: enum ${MODES.join("|")})`);
  return m as (typeof MODES)[number];
}

/** Prints a call parked for approval. */
function printParked(approval: Approval | undefined, seq: string, json: boolean): void {
  if (json) {
    console.log(JSON.stringify({ approval: approval ? toJson(ApprovalSchema, approval) : null, audit_seq: seq }, null, 2));
    return;
  }
  if (!approval) throw new OngridError("internal", "the manager parked the call without an approval request");
  const n = approval.requiredApprovals;
  console.log(approval.id);
  console.error(
    `approval required: ${approval.id} (${classFromProto(approval.effectiveClass)}, needs ${n} approver${n > 1 ? "s" : ""} other than you${approval.sopHash ? `; SOP ${approval.sopId} v${approval.sopVersion}` : ""}), expires ${timestampDate(approval.expiresAt!).toISOString()}\n` +
      `an approver runs: ongrid approvals approve ${approval.id}   (audit row ${seq})`,
  );
}

function metaRow(m: Metadata): Record<string, string> {
  return { key: m.key, scope: scopeFromProto(m.scope) ?? "", class: classFromProto(m.class) ?? "", category: m.category, name: m.name };
}

const SCOPES = ["host", "manager"] as const;
const CLASSES = ["safe", "mutating", "dangerous"] as const;

async function listMetadata(opts: CoreOptions & { scope?: string; class?: string; category?: string }, offlineNote = false): Promise<Metadata[]> {
  if (opts.scope && !SCOPES.includes(opts.scope as never)) flagError("--scope", `must be one of ${SCOPES.join(", ")}`);
  if (opts.class && !CLASSES.includes(opts.class as never)) flagError("--class", `must be one of ${CLASSES.join(", ")}`);
  const filter = { scope: opts.scope as (typeof SCOPES)[number] | undefined, class: opts.class as (typeof CLASSES)[number] | undefined, category: opts.category };
  const url = managerUrl(opts);
  if (url) {
    return (
      await rpcClients(url, opts).skills.listSkills({
        scope: filter.scope ? scopeToProto(filter.scope) : undefined,
        class: filter.class ? classToProto(filter.class) : undefined,
        category: filter.category ?? "",
      })
    ).skills;
  }
  // In process: the manager's own registry, loaded only here. Edges' skills are known only to a running manager.
  if (offlineNote) {
    console.error("note: no running manager found, so this lists only the manager's own skills, not those of edges (a running manager knows them): start it (`npm start`), or pass --manager URL, to see them all");
  }
  const { createManagerRegistry } = await import("../skills/builtin/index.ts");
  return createManagerRegistry().list(filter).map((s) => metadataToProto(s));
}

/** Builds the `skills` command group. */
export function skillsCommand(): Command {
  const cmd = new Command("skills").description("list, inspect, run and lint skills");

  withCoreOptions(cmd.command("list").description("list the registered skills"))
    .option("--scope <scope>", "only host or manager skills")
    .option("--class <class>", "only safe, mutating or dangerous skills")
    .option("--category <name>", "only skills in this category")
    .option("--json", "print JSON")
    .action(async (opts) => {
      const skills = await listMetadata(opts, true);
      if (opts.json) console.log(JSON.stringify(skills.map((m) => toJson(MetadataSchema, m)), null, 2));
      else printTable(skills.map(metaRow), ["key", "scope", "class", "category", "name"]);
    });

  withCoreOptions(cmd.command("get").description("show one skill with its parameter schema").argument("<key>"))
    .option("--json", "print JSON")
    .action(async (key: string, opts) => {
      const m = (await listMetadata(opts)).find((s) => s.key === key);
      if (!m) throw new OngridError("not_found", `unknown skill "${key}"`, "run `ongrid skills list`");
      if (opts.json) console.log(JSON.stringify(toJson(MetadataSchema, m), null, 2));
      else {
        console.log(`${m.key} (${scopeFromProto(m.scope)}, ${classFromProto(m.class)}) — ${m.name}\n\n${m.description}\n`);
        console.log(`params (JSON Schema):\n${JSON.stringify(JSON.parse(m.jsonSchema), null, 2)}`);
      }
    });

  withCoreOptions(cmd.command("run").description("execute a skill; the call is audited").argument("<key>"))
    .option("-p, --param <name=value>", "a parameter (repeatable); typed by the skill's schema", (v: string, acc: string[]) => [...acc, v], [])
    .option("--params <json>", "all parameters as one JSON object (instead of --param)")
    .option("--edge <id>", "edge to run a host skill on")
    .option("--session <id>", "session id recorded in the audit row")
    .option("--timeout <duration>", "deadline, e.g. 30s")
    .option("--mode <mode>", "permission mode: READ_ONLY, NORMAL, ASK_DESTRUCTIVE or BYPASS (default: the manager's gate.default_mode)")
    .option("--sop <file>", "signed SOP covering a dangerous call (`ongrid sop sign`)")
    .option("--wait", "when the call needs approval, wait until it has run (or was denied or expired)")
    .option("--json", "print the result envelope as JSON")
    .action(async (key: string, opts) => {
      if (opts.params && opts.param.length) flagError("--params", "use either --params or --param, not both");
      const mode = opts.mode ? await modeFromFlag(opts.mode) : undefined;
      let sop = "";
      if (opts.sop) {
        try {
          sop = readFileSync(opts.sop, "utf8");
        } catch (err) {
          flagError("--sop", `cannot read ${opts.sop}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
      }
      const timeoutMs = opts.timeout ? parseDuration(opts.timeout) : undefined;
      const url = managerUrl(opts);
      let envelope: Record<string, unknown>;
      let seq: string;
      if (url) {
        const { skills } = rpcClients(url, opts);
        let paramsJson: string = opts.params ?? "{}";
        if (!opts.params) {
          const schema = await skills.getSkill({ key }).then((r) => JSON.parse(r.skill?.jsonSchema || "{}")).catch(() => ({}));
          paramsJson = JSON.stringify(coerceParams(opts.param, schema));
        }
        const res = await skills.executeSkill({
          key,
          input: { case: "paramsJson", value: paramsJson },
          edgeId: opts.edge ?? "",
          sessionId: opts.session ?? "",
          timeoutMs: timeoutMs ?? 0,
          permissionMode: mode ? PermissionMode[mode] : PermissionMode.UNSPECIFIED,
          sop,
          waitForApproval: Boolean(opts.wait),
        });
        if (!res.result) return printParked(res.approval, String(res.auditSeq), Boolean(opts.json));
        envelope = toJson(SkillResultSchema, res.result!, { alwaysEmitImplicit: true, useProtoFieldName: true }) as Record<string, unknown>;
        seq = String(res.auditSeq);
      } else {
        const { approvalToProto } = await import("../rpc/messages/approval.ts");
        const out = await withCore(opts, async (core) => {
          const skill = core.registry.get(key);
          return core.dispatcher.execute({
            key,
            paramsJson: opts.params ?? JSON.stringify(coerceParams(opts.param, (skill?.jsonSchema ?? {}) as never)),
            edgeId: opts.edge,
            sessionId: opts.session,
            timeoutMs,
            caller: { userId: `cli:${process.env.USER ?? "local"}`, role: "admin" },
            mode,
            sop,
          });
        });
        if (!out.result) return printParked(out.approval ? approvalToProto(out.approval) : undefined, String(out.auditSeq), Boolean(opts.json));
        envelope = toJson(SkillResultSchema, resultToProto(out.result), { alwaysEmitImplicit: true, useProtoFieldName: true }) as Record<string, unknown>;
        seq = String(out.auditSeq);
      }
      if (opts.json) console.log(JSON.stringify({ ...envelope, audit_seq: seq }, null, 2));
      else printResult(key, envelope, seq);
      if (!envelope.success) process.exitCode = 1;
    });

  addClassifyCommand(cmd);
  cmd
    .command("lint")
    .description("check every builtin skill (manager and edge), every base tool, and packs given with --pack-dir, against the ACI new-tool checklist")
    .option("--pack-dir <dir>", "also lint the packs in this directory (repeatable); a refused manifest is an error", (v: string, acc: string[]) => [...acc, v], [])
    .option("--json", "print findings as JSON")
    .action(async (opts) => {
      const [{ pino }, { MANAGER_BUILTINS, createManagerRegistry }, { baseToolDeclarations }, { hostSkillDefinitions }, { lintRegistry, formatFindings }, { createPackSet }, { formatProblem, toMetadata }, { createRegistry }] = await Promise.all([
        import("pino"),
        import("../skills/builtin/index.ts"),
        import("../skills/index.ts"),
        import("../../skill/catalog/index.ts"),
        import("../../skill/lint.ts"),
        import("../../skill/pack/loader.ts"),
        import("../../skill/pack/manifest.ts"),
        import("../../skill/registry.ts"),
      ]);
      createManagerRegistry(); // registration itself refuses malformed definitions
      const packDefs: SkillDefinition[] = [];
      if (opts.packDir.length) {
        const silent = pino({ level: "silent" });
        const set = createPackSet({ dirs: opts.packDir, scope: "host", registry: createRegistry({ log: silent }), log: silent });
        const r = set.rescan();
        if (r.problems.length) {
          for (const p of r.problems) console.error(`refused: ${formatProblem(p)}`);
          process.exitCode = 1;
        }
        // Lint the metadata exactly as written in skill.json (the registry's normalised copy would hide an omitted field).
        for (const spec of set.specs().values()) packDefs.push({ ...toMetadata(spec), execute: async () => null });
      }
      const all = [...MANAGER_BUILTINS, ...baseToolDeclarations(), ...hostSkillDefinitions(), ...packDefs];
      const findings = lintRegistry(all);
      if (opts.json) console.log(JSON.stringify(findings, null, 2));
      else console.log(`${findings.length ? formatFindings(findings) + "\n" : ""}${all.length} skills checked`);
      if (findings.some((f) => f.severity === "error")) process.exitCode = 1;
    });
  return cmd;
}

