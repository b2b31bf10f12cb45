/** `ongrid approvals list|get|approve|deny|watch`: the human in the loop from the command line (always over RPC: approvals are decided by people with tokens). */
import { Command } from "commander";
import { toJson } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ApprovalSchema, ApprovalState, type Approval } from "../../proto/gen/ongrid/v1/approval_service_pb.ts";
import { SkillResultSchema } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import { classFromProto } from "../../skill/proto.ts";
import { renderOutput, renderStatus, type EnvelopeJson } from "./render.ts";
import { OngridError } from "../../skill/errors.ts";
import { flagError, managerUrl, printTable, rpcClients, withCoreOptions, type CoreOptions } from "./common.ts";

function url(opts: CoreOptions): string {
  const u = managerUrl(opts);
  if (!u) throw new OngridError("invalid_argument", "--manager: is required for approvals (rule: required)", "approvals are decided over RPC with your token: --manager URL and ONGRID_TOKEN");
  return u;
}

const stateName = (s: ApprovalState) => (ApprovalState[s] ?? "UNSPECIFIED").toLowerCase();

function show(a: Approval, json: boolean): void {
  if (json) return console.log(JSON.stringify(toJson(ApprovalSchema, a, { useProtoFieldName: true }), null, 2));
  console.log(`${a.id}  ${stateName(a.state)}  ${a.key}${a.edgeId ? ` on ${a.edgeId}` : ""} (${classFromProto(a.effectiveClass)})`);
  console.log(`  requested by ${a.requesterUserId} at ${timestampDate(a.createdAt!).toISOString()}, expires ${timestampDate(a.expiresAt!).toISOString()}`);
  console.log(`  params: ${JSON.stringify(a.params ?? {})}`);
  console.log(`  approvals: ${a.votes.length} of ${a.requiredApprovals}${a.votes.length ? ` (${a.votes.map((v) => v.userId).join(", ")})` : ""}`);
  if (a.sopHash) console.log(`  SOP: ${a.sopId} v${a.sopVersion} sha256 ${a.sopHash}`);
  if (a.deniedBy) console.log(`  denied by ${a.deniedBy}`);
  if (a.reason) console.log(`  reason: ${a.reason}`);
  if (a.result) {
    const env = toJson(SkillResultSchema, a.result, { alwaysEmitImplicit: true, useProtoFieldName: true }) as EnvelopeJson;
    console.log(`  result: ${renderStatus(a.key, env, String(a.executionAuditSeq)).join("\n  ")}`);
    for (const line of renderOutput(env.output)) console.log(`    ${line}`);
  }
}

/** Builds the `approvals` command group. */
export function approvalsCommand(): Command {
  const cmd = new Command("approvals").description("list, approve, deny and watch calls waiting for approval");

  withCoreOptions(cmd.command("list").description("requests you may see, newest first"))
    .option("--state <state>", "pending, running, executed, denied, expired or failed")
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions & { state?: string }) => {
      let state = ApprovalState.UNSPECIFIED;
      if (opts.state) {
        state = ApprovalState[opts.state.toUpperCase() as keyof typeof ApprovalState] as ApprovalState;
        if (state === undefined || typeof state !== "number") flagError("--state", `"${opts.state}" is not a state (rule: enum pending|running|executed|denied|expired|failed)`);
      }
      const { approvals } = await rpcClients(url(opts), opts).approvals.listApprovals({ state });
      if (opts.json) return console.log(JSON.stringify(approvals.map((a) => toJson(ApprovalSchema, a, { useProtoFieldName: true })), null, 2));
      printTable(
        approvals.map((a) => ({
          id: a.id,
          state: stateName(a.state),
          skill: a.key,
          edge: a.edgeId,
          class: classFromProto(a.effectiveClass) ?? "",
          requester: a.requesterUserId,
          approvals: `${a.votes.length}/${a.requiredApprovals}`,
          expires: timestampDate(a.expiresAt!).toISOString(),
        })),
        ["id", "state", "skill", "edge", "class", "requester", "approvals", "expires"],
      );
    });

  withCoreOptions(cmd.command("get").description("one request").argument("<id>"))
    .option("--json", "print JSON")
    .action(async (id: string, opts: CoreOptions) => show((await rpcClients(url(opts), opts).approvals.getApproval({ id })).approval!, Boolean(opts.json)));

  withCoreOptions(cmd.command("approve").description("approve a request (never your own); the call runs when the last required approval arrives").argument("<id>"))
    .option("--comment <text>", "kept with your approval", "")
    .option("--params-hash <sha256>", "approve only if the request's params hash is this one (from `approvals get`); without it, the request is read, shown and approved by the hash of what was shown")
    .option("--json", "print JSON")
    .action(async (id: string, opts: CoreOptions & { comment: string; paramsHash?: string }) => {
      const clients = rpcClients(url(opts), opts);
      let paramsHash = opts.paramsHash;
      if (!paramsHash) {
        const seen = (await clients.approvals.getApproval({ id })).approval!;
        console.error(`approving ${seen.id}: ${seen.key}${seen.edgeId ? ` on ${seen.edgeId}` : ""} with ${JSON.stringify((toJson(ApprovalSchema, seen, { useProtoFieldName: true }) as { params?: unknown }).params ?? {})} (params hash ${seen.paramsHash})`);
        paramsHash = seen.paramsHash;
      }
      show((await clients.approvals.approve({ id, comment: opts.comment, paramsHash })).approval!, Boolean(opts.json));
    });

  withCoreOptions(cmd.command("deny").description("deny a request (approvers), or withdraw your own").argument("<id>"))
    .option("--reason <text>", "why (shown to the requester, audited)", "")
    .option("--json", "print JSON")
    .action(async (id: string, opts: CoreOptions & { reason: string }) => show((await rpcClients(url(opts), opts).approvals.deny({ id, reason: opts.reason })).approval!, Boolean(opts.json)));

  withCoreOptions(cmd.command("watch").description("print each state change (of one request until it ends, or of all you may see)").argument("[id]"))
    .option("--json", "print JSON lines")
    .action(async (id: string | undefined, opts: CoreOptions) => {
      for await (const ev of rpcClients(url(opts), opts).approvals.watch({ id: id ?? "" })) {
        const a = ev.approval!;
        if (opts.json) console.log(JSON.stringify(toJson(ApprovalSchema, a, { useProtoFieldName: true })));
        else console.log(`${new Date().toISOString()}  ${a.id}  ${stateName(a.state)}  ${a.key}  ${a.votes.length}/${a.requiredApprovals}${a.reason ? `  ${a.reason}` : ""}`);
      }
    });
  return cmd;
}
