/** `ongrid audit list|verify|export`: read the tool-call log from the database or a running manager. */
import { createWriteStream } from "node:fs";
import { Command } from "commander";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { AuditFilter, AuditRow } from "../audit/types.ts";
import { auditRowToJson, exportJsonLines } from "../audit/export.ts";
import { parseDuration } from "../../skill/duration.ts";
import { OngridError } from "../../skill/errors.ts";
import { flagError, managerUrl, printTable, rpcClients, withCore, withCoreOptions, type CoreOptions } from "./common.ts";
import type { ToolCall } from "../../proto/gen/ongrid/v1/audit_service_pb.ts";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";

interface FilterFlags {
  since?: string;
  until?: string;
  tool?: string;
  edge?: string;
  user?: string;
  session?: string;
  decision?: string;
  limit?: string;
  after?: string;
}

function withFilters(cmd: Command): Command {
  return cmd
    .option("--since <time>", "rows started at or after (ISO 8601, or a duration ago such as 1h)")
    .option("--until <time>", "rows started before (ISO 8601, or a duration ago)")
    .option("--tool <key>", "only this skill")
    .option("--edge <id>", "only calls that targeted this edge")
    .option("--user <id>", "only this caller")
    .option("--session <id>", "only this session")
    .option("--decision <d>", "only this gate decision (allow, ask, deny)");
}

function parseTime(flag: string, v: string | undefined): Date | undefined {
  if (!v) return undefined;
  if (/^[0-9.]+[a-z]/.test(v) && !/^\d{4}-/.test(v)) {
    try {
      return new Date(Date.now() - parseDuration(v));
    } catch {
      /* not a duration: try a time below */
    }
  }
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) flagError(flag, `"${v}" is neither an ISO 8601 time nor a duration ago like 90m or 1h30m`);
  return d;
}

/** Flags → AuditFilter, refusing malformed values. */
export function toFilter(f: FilterFlags): AuditFilter {
  const limit = f.limit === undefined ? undefined : Number(f.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 1000)) flagError("--limit", "must be an integer from 1 to 1000");
  const after = f.after === undefined ? undefined : Number(f.after);
  if (after !== undefined && (!Number.isInteger(after) || after < 0)) flagError("--after", "must be a non-negative integer");
  return {
    since: parseTime("--since", f.since),
    until: parseTime("--until", f.until),
    toolName: f.tool,
    edgeId: f.edge,
    userId: f.user,
    sessionId: f.session,
    decision: f.decision,
    limit,
    afterSeq: after,
  };
}

function fromProto(t: ToolCall): AuditRow {
  return {
    seq: Number(t.seq),
    sessionId: t.sessionId,
    toolName: t.toolName,
    args: t.args ? toJson(ValueSchema, t.args) : null,
    result: t.result ? toJson(ValueSchema, t.result) : null,
    error: t.error,
    deviceId: t.deviceId,
    startedAt: t.startedAt ? timestampDate(t.startedAt) : new Date(0),
    finishedAt: t.finishedAt ? timestampDate(t.finishedAt) : new Date(0),
    durationMs: t.durationMs,
    callerUserId: t.callerUserId,
    callerRole: t.callerRole,
    decision: t.decision,
    decisionReason: t.decisionReason,
    approvalId: t.approvalId,
    sopHash: t.sopHash,
    approvedBy: t.approvedBy,
    onBehalfOf: t.onBehalfOf,
    client: t.client,
    prevHash: t.prevHash,
    rowHash: t.rowHash,
  };
}

async function remoteList(url: string, filter: AuditFilter, opts: CoreOptions): Promise<AuditRow[]> {
  const res = await rpcClients(url, opts).audit.listToolCalls({
    since: filter.since ? timestampFromDate(filter.since) : undefined,
    until: filter.until ? timestampFromDate(filter.until) : undefined,
    toolName: filter.toolName ?? "",
    edgeId: filter.edgeId ?? "",
    userId: filter.userId ?? "",
    sessionId: filter.sessionId ?? "",
    decision: filter.decision ?? "",
    afterSeq: BigInt(filter.afterSeq ?? 0),
    limit: filter.limit ?? 0,
  });
  return res.toolCalls.map(fromProto);
}

/** Opens the --out file, or fails naming the flag (instead of an unhandled stream error). */
function openOut(path: string): Promise<ReturnType<typeof createWriteStream>> {
  return new Promise((resolve, reject) => {
    const stream = createWriteStream(path);
    stream.once("open", () => resolve(stream));
    stream.once("error", (err) => reject(new OngridError("invalid_argument", `--out: cannot write ${path}: ${err.message}`)));
  });
}

/** Builds the `audit` command group. */
export function auditCommand(): Command {
  const cmd = new Command("audit").description("query, verify and export the tool-call audit log");

  withFilters(withCoreOptions(cmd.command("list").description("list audit rows, oldest first")))
    .option("--limit <n>", "rows per page (1-1000, default 100)")
    .option("--after <seq>", "only rows after this seq (paging cursor)")
    .option("--json", "print JSON")
    .action(async (opts: FilterFlags & CoreOptions) => {
      const filter = toFilter(opts);
      const url = managerUrl(opts);
      const rows = url ? await remoteList(url, filter, opts) : await withCore(opts, (core) => core.audit.list(filter));
      if (opts.json) {
        console.log(JSON.stringify(rows.map(auditRowToJson), null, 2));
        return;
      }
      printTable(
        rows.map((r) => ({
          seq: String(r.seq),
          started: r.startedAt.toISOString(),
          tool: r.toolName || "(none)",
          edge: r.deviceId,
          user: r.callerUserId,
          decision: r.decision,
          ms: String(r.durationMs),
          outcome: r.error ? r.error.slice(0, 80) : r.decision === "ask" ? `parked for approval ${r.approvalId}` : "ok",
        })),
        ["seq", "started", "tool", "edge", "user", "decision", "ms", "outcome"],
      );
    });

  withCoreOptions(cmd.command("verify").description("recompute the hash chain; exit 1 and name the first broken row if it does not hold"))
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions) => {
      const url = managerUrl(opts);
      const report = url
        ? await rpcClients(url, opts)
            .audit.verifyChain({})
            .then((r) => ({ ok: r.ok, rowsChecked: Number(r.rowsChecked), firstBrokenSeq: Number(r.firstBrokenSeq), reason: r.reason, lastSeq: Number(r.lastSeq), lastRowHash: r.lastRowHash }))
        : await withCore(opts, (core) => core.audit.verify());
      if (opts.json) console.log(JSON.stringify(report));
      else if (report.ok) console.log(`audit chain intact: ${report.rowsChecked} rows checked; head ${report.lastSeq ?? 0} ${report.lastRowHash ?? ""}`.trimEnd());
      else console.log(`audit chain BROKEN at row ${report.firstBrokenSeq}: ${report.reason} (${report.rowsChecked} rows checked)`);
      if (!report.ok) process.exitCode = 1;
    });

  withFilters(withCoreOptions(cmd.command("export").description("export rows as JSON lines, oldest first")))
    .option("--out <file>", "write to this file instead of stdout")
    .action(async (opts: FilterFlags & CoreOptions & { out?: string }) => {
      const filter = toFilter(opts);
      const out = opts.out ? await openOut(opts.out) : process.stdout;
      const write = (line: string) =>
        new Promise<void>((resolve, reject) => out.write(line + "\n", (err) => (err ? reject(err) : resolve())));
      const url = managerUrl(opts);
      const rows = url ? await exportJsonLines({ list: (f) => remoteList(url, f ?? {}, opts) }, filter, write) : await withCore(opts, (core) => exportJsonLines(core.audit, filter, write));
      if (opts.out) await new Promise<void>((resolve) => (out as ReturnType<typeof createWriteStream>).end(resolve));
      // On stderr, so that stdout stays the rows alone.
      console.error(`exported ${rows} row${rows === 1 ? "" : "s"}${opts.out ? ` to ${opts.out}` : ""}`);
    });
  return cmd;
}
