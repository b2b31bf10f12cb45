/** The tamper-evident tool-call log (H1–H3) over drizzle: a batching writer, filtered listing and chain verification. */
import { and, asc, desc, eq, getTableColumns, getTableName, gt, gte, lt, ne, or, sql, type SQL } from "drizzle-orm";
import { errorText } from "../db/error-text.ts";
import { OngridError } from "../../skill/errors.ts";
import type { Database, DbLogger } from "../db/client.ts";
import { toolCalls } from "../db/schema/index.ts";
import { canonicalJson, GENESIS_HASH, hashRow, rowHash, rowTexts, type RowTexts } from "./chain.ts";
import { chainInputOf, COPY_COLUMNS, fromDbRow, normalizeRecord, PreparedJson, toCopyLine, toInsertText, type StoredRecord } from "./record.ts";
import type { AuditFilter, AuditLog, AuditRecord, AuditRow, VerifyReport } from "./types.ts";

/** Rows written in one statement at most. */
const MAX_BATCH = 500;
/** Times a batch is re-chained after another writer took its seq numbers, before giving up. */
const MAX_RECHAIN = 50;
/** Rows read per page by verify(). */
const VERIFY_PAGE = 1000;
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/**
 * The stored columns and their types, read from the table's definition: the insert (drizzle's)
 * names every column of tool_calls in the table's order, and the select below must give them in
 * the same order, out of the jsonb objects one insert statement carries (toInsertText).
 */
const COLUMNS = Object.values(getTableColumns(toolCalls));
const INSERT_COLUMNS = sql.raw(COLUMNS.map((c) => c.name).join(", "));
const RECORD_TYPES = sql.raw(COLUMNS.map((c) => `${c.name} ${c.getSQLType()}`).join(", "));
{
  // toCopyLine writes the columns by hand: the table must have exactly those.
  const table = COLUMNS.map((c) => c.name).sort().join(",");
  if ([...COPY_COLUMNS].sort().join(",") !== table) throw new Error(`audit log: COPY_COLUMNS (${COPY_COLUMNS.join(",")}) do not match tool_calls (${table})`);
}
/** The PGlite batch insert: COPY's text format from a blob (see createAuditLog). */
const COPY_SQL = `copy ${getTableName(toolCalls)} (${COPY_COLUMNS.join(", ")}) from '/dev/blob'`;

/** Options of the audit log. */
export interface AuditLogOptions {
  log?: DbLogger;
}

interface Pending {
  record: StoredRecord;
  /** canonicalJson of args and of result, made when the row is first chained (or given). */
  argsText?: string;
  resultText?: string;
  /** The JSON texts of its other fields, for its hash and its insert. */
  texts?: RowTexts;
  resolve(row: AuditRow): void;
  reject(err: Error): void;
}

/** A batch chained onto a head and serialised, ready to insert. */
interface Prepared {
  batch: Pending[];
  onto: { seq: number; rowHash: string };
  /** The insert's one parameter (a JSON array of row objects), or on PGlite the COPY data. */
  text: string;
}

/** How a database takes a batch: each row's text, the batch's text made of them, and the statement that writes it. */
interface BatchFormat {
  line(row: StoredRecord, texts: RowTexts, argsText: string, resultText: string): string;
  text(lines: string[]): string;
  write(text: string): Promise<unknown>;
}

/**
 * On PostgreSQL a batch is one prepared insert of a jsonb array; on PGlite it is COPY from a blob,
 * which costs the embedded engine (on the manager's own thread) about a third less a row
 * (measured in docs/performance.md). Not COPY on PostgreSQL: postgres.js's COPY stream never
 * settles when the server refuses the data after it ends — how a writer learns another manager
 * took its seq numbers.
 */
function batchFormat(database: Database): BatchFormat {
  const pglite = database.kind === "pglite" ? database.pglite : undefined;
  if (pglite) {
    return {
      line: (row, _texts, argsText, resultText) => toCopyLine(row, argsText, resultText),
      text: (lines) => `${lines.join("\n")}\n`,
      write: (text) => pglite.query(COPY_SQL, [], { blob: new Blob([text]) }),
    };
  }
  // A named prepared statement: an unnamed one costs PostgreSQL a parse and the client a second
  // round trip each time (Parse/Describe, then Bind/Execute), and under load that round trip waits
  // for a turn of a busy event loop.
  const insert = database.db
    .insert(toolCalls)
    .select(sql`select ${INSERT_COLUMNS} from jsonb_to_recordset(${sql.placeholder("rows")}::jsonb) as r(${RECORD_TYPES})`)
    .prepare("ongrid_audit_insert");
  return { line: toInsertText, text: (lines) => `[${lines.join(",")}]`, write: (text) => insert.execute({ rows: text }) };
}

/** Creates the audit log on an open database; appends are batched, one statement per batch (batchFormat). */
export function createAuditLog(database: Database, options: AuditLogOptions = {}): AuditLog {
  const { db } = database;
  const format = batchFormat(database);
  const log = options.log;
  const queue: Pending[] = [];
  let running: Promise<void> | null = null;

  function kick(): void {
    if (running) return;
    running = drain().finally(() => {
      running = null;
      if (queue.length > 0) kick();
    });
  }

  /**
   * Writes the queue batch after batch, one insert in flight at a time. While an insert runs, the
   * next batch is chained onto the rows it writes and serialised (hashing and JSON are most of a
   * row's cost on the event loop), so the database and the event loop work at once. The prepared
   * batch is used only if the head is still the one it was chained onto; after a failure or a
   * re-chain it is prepared again.
   */
  async function drain(): Promise<void> {
    // Yield once so appends made in the same tick join the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    let next: Prepared | undefined;
    while (queue.length > 0 || next) {
      const current = next ?? (head ? prepare(queue.splice(0, MAX_BATCH), head) : undefined);
      next = undefined;
      const writing = current ? writeBatch(current.batch, current) : writeBatch(queue.splice(0, MAX_BATCH));
      if (current && queue.length > 0) {
        // A timer turn, so the insert is on the wire (a query takes several event-loop turns to go
        // out; measured: with setImmediate it had not), then prepare the next batch meanwhile.
        await new Promise<void>((resolve) => setTimeout(resolve, 0));
        const last = current.batch[current.batch.length - 1]!.record;
        next = prepare(queue.splice(0, MAX_BATCH), { seq: last.seq, rowHash: last.rowHash });
      }
      await writing;
    }
  }

  /**
   * The chain head as this writer last wrote or read it. A batch is chained onto it and inserted in
   * one statement; seq is the primary key, so if another writer (a second manager on the same
   * PostgreSQL) appended meanwhile the insert fails on the key and the batch is chained again onto
   * the head read afresh. A row of this writer's can therefore never link to anything but the row
   * before it, and a tail row deleted while the manager runs leaves a gap verify() reports.
   */
  let head: { seq: number; rowHash: string } | null = null;

  async function readHead(): Promise<{ seq: number; rowHash: string }> {
    const [row] = await db.select({ seq: toolCalls.seq, rowHash: toolCalls.rowHash }).from(toolCalls).orderBy(desc(toolCalls.seq)).limit(1);
    return row ?? { seq: 0, rowHash: GENESIS_HASH };
  }

  /** Chains a batch onto a head and serialises it for the insert (a batch may be prepared again, onto another head). */
  function prepare(batch: Pending[], onto: { seq: number; rowHash: string }): Prepared {
    return { batch, onto, text: format.text(chainBatch(onto, batch, format.line)) };
  }

  /**
   * Writes one batch in one statement (one jsonb parameter) and settles its promises; never throws.
   * `ready` is the batch prepared ahead, used when it was chained onto the current head.
   */
  async function writeBatch(batch: Pending[], ready?: Prepared): Promise<void> {
    let written = false;
    try {
      for (let attempt = 0; !written; attempt++) {
        head ??= await readHead();
        const p = ready && ready.onto.seq === head.seq && ready.onto.rowHash === head.rowHash ? ready : prepare(batch, head);
        ready = undefined;
        try {
          await format.write(p.text);
        } catch (err) {
          head = null; // unknown after any failure: read it again
          if (!isSeqTaken(err) || attempt + 1 >= MAX_RECHAIN) throw err;
          continue;
        }
        // The records hold what this insert wrote: a batch is re-chained only before it is inserted again.
        written = true;
        const last = batch[batch.length - 1]!.record;
        head = { seq: last.seq, rowHash: last.rowHash };
      }
    } catch (err) {
      if (batch.length > 1 && isDataError(err)) {
        // One row PostgreSQL refuses must not sink the rows queued with it: retry them one by one.
        for (const p of batch) await writeBatch([p]);
        return;
      }
      const reason = errorText(err);
      log?.error({ rows: batch.length, err: reason }, "audit log: batch not written");
      const failure = new OngridError(
        "unavailable",
        `audit log: could not store ${batch.length === 1 ? "the tool call row" : `${batch.length} tool call rows`}: ${reason}`,
        "check that the database is reachable and writable; the call was not recorded",
      );
      (failure as Error & { cause?: unknown }).cause = err;
      for (const p of batch) p.reject(failure);
      return;
    }
    for (const p of batch) p.resolve(p.record);
  }

  /** Normalises a record (throws as normalizeRecord does) and queues it for the writer; the caller kicks it. */
  function enqueue(record: AuditRecord, resolve: (row: AuditRow) => void, reject: (err: Error) => void): void {
    const stored = normalizeRecord(record);
    const argsText = record.args instanceof PreparedJson ? record.args.canonical() : undefined;
    const resultText = record.result instanceof PreparedJson ? record.result.canonical() : undefined;
    queue.push({ record: stored, argsText, resultText, resolve, reject });
  }

  async function append(record: AuditRecord): Promise<AuditRow> {
    return new Promise<AuditRow>((resolve, reject) => {
      enqueue(record, resolve, reject);
      kick();
    });
  }

  function appendMany(records: readonly AuditRecord[]): Promise<Array<AuditRow | Error>> {
    if (!records.length) return Promise.resolve([]);
    const out = new Array<AuditRow | Error>(records.length);
    let left = records.length;
    return new Promise((resolve) => {
      const settle = (i: number, v: AuditRow | Error) => {
        out[i] = v;
        if (--left === 0) resolve(out);
      };
      for (let i = 0; i < records.length; i++) {
        try {
          enqueue(records[i]!, (row) => settle(i, row), (err) => settle(i, err));
        } catch (err) {
          settle(i, err as Error);
        }
      }
      kick();
    });
  }

  async function flush(): Promise<void> {
    while (running || queue.length > 0) {
      if (!running) kick();
      await running;
    }
  }

  async function list(filter: AuditFilter = {}): Promise<AuditRow[]> {
    return (await listQuery(database, filter)).map(fromDbRow);
  }

  async function verify(): Promise<VerifyReport> {
    let rowsChecked = 0;
    let prevSeq = 0;
    let prevHash = GENESIS_HASH;
    const broken = (seq: number, reason: string): VerifyReport => ({ ok: false, rowsChecked, firstBrokenSeq: seq, reason });
    for (;;) {
      const page = await db
        .select()
        .from(toolCalls)
        .where(gt(toolCalls.seq, prevSeq))
        .orderBy(asc(toolCalls.seq))
        .limit(VERIFY_PAGE);
      for (const r of page) {
        rowsChecked += 1;
        if (r.seq !== prevSeq + 1) {
          const missing = r.seq - prevSeq - 1 === 1 ? `row ${prevSeq + 1} is missing` : `rows ${prevSeq + 1}–${r.seq - 1} are missing`;
          const where = prevSeq === 0 ? `row ${r.seq} is the first row, but the chain starts at 1` : `row ${r.seq} follows row ${prevSeq}`;
          return broken(r.seq, `${where}: ${missing} (deleted)`);
        }
        if (r.prevHash !== prevHash) {
          return broken(
            r.seq,
            prevSeq === 0
              ? `row ${r.seq}'s prev_hash is not the genesis hash (64 zeros): its prev_hash was changed`
              : `row ${r.seq}'s prev_hash does not match the row_hash of row ${prevSeq}: row ${prevSeq} was rewritten with a new row_hash, or row ${r.seq}'s prev_hash was changed`,
          );
        }
        if (rowHash(r.prevHash, chainInputOf(r)) !== r.rowHash) {
          return broken(r.seq, `row ${r.seq}'s content does not match its row_hash: the row (or its row_hash) was edited after it was written`);
        }
        prevSeq = r.seq;
        prevHash = r.rowHash;
      }
      if (page.length < VERIFY_PAGE) break;
    }
    return { ok: true, rowsChecked, firstBrokenSeq: 0, reason: "", lastSeq: prevSeq, lastRowHash: prevSeq === 0 ? "" : prevHash };
  }

  return { append, appendMany, list, verify, flush };
}

/**
 * The select list() runs for a filter (H3), not yet executed: exported so that tests can ask the
 * planner how it would run it. Throws invalid_argument for a bad date, seq or limit.
 */
export function listQuery(database: Database, filter: AuditFilter = {}) {
  const where: SQL[] = [];
  if (filter.since !== undefined) where.push(gte(toolCalls.startedAt, checkDate(filter.since, "since")));
  if (filter.until !== undefined) where.push(lt(toolCalls.startedAt, checkDate(filter.until, "until")));
  if (filter.toolName) where.push(eq(toolCalls.toolName, filter.toolName));
  if (filter.edgeId) where.push(eq(toolCalls.deviceId, filter.edgeId));
  // A user's rows include what the agent did on their behalf. on_behalf_of's index holds only the
  // rows that have one: the arm says so, so that even a generic plan can use it.
  if (filter.userId) where.push(or(eq(toolCalls.callerUserId, filter.userId), and(eq(toolCalls.onBehalfOf, filter.userId), ne(toolCalls.onBehalfOf, "")))!);
  if (filter.sessionId) where.push(eq(toolCalls.sessionId, filter.sessionId));
  if (filter.decision) where.push(eq(toolCalls.decision, filter.decision));
  if (filter.afterSeq !== undefined && filter.afterSeq !== 0) {
    where.push(gt(toolCalls.seq, checkInt(filter.afterSeq, "afterSeq", 0)));
  }
  if (filter.beforeSeq !== undefined && filter.beforeSeq !== 0) {
    where.push(lt(toolCalls.seq, checkInt(filter.beforeSeq, "beforeSeq", 0)));
  }
  const limit = filter.limit === undefined || filter.limit === 0 ? DEFAULT_LIMIT : checkInt(filter.limit, "limit", 1, MAX_LIMIT);
  return database.db
    .select()
    .from(toolCalls)
    .where(where.length > 0 ? and(...where) : undefined)
    .orderBy(filter.newestFirst ? desc(toolCalls.seq) : asc(toolCalls.seq))
    .limit(limit);
}

/**
 * Links the batch's records onto the given head — sets their seq, prevHash and rowHash — and
 * returns each one's insert text (toInsertText or toCopyLine). A batch chained again (after
 * another writer took its seq numbers) is simply overwritten.
 */
function chainBatch(
  head: { seq: number; rowHash: string },
  batch: Pending[],
  serialise: BatchFormat["line"],
): string[] {
  let seq = head.seq;
  let prevHash = head.rowHash;
  let before: Pending | undefined;
  return batch.map((p) => {
    const row = p.record;
    seq += 1;
    p.texts ??= rowTexts(row, before?.texts && { row: before.record, texts: before.texts });
    before = p;
    p.argsText ??= canonicalJson(row.args ?? null);
    p.resultText ??= canonicalJson(row.result ?? null);
    row.seq = seq;
    row.prevHash = prevHash;
    row.rowHash = hashRow(prevHash, p.texts, seq, p.argsText, p.resultText);
    prevHash = row.rowHash;
    return serialise(row, p.texts, p.argsText, p.resultText);
  });
}

/** Whether an insert failed because another writer already holds one of its seq numbers (unique violation on the key). */
function isSeqTaken(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++, e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "23505") return true;
  }
  return false;
}

/** Whether PostgreSQL refused the data itself (data exception, size limit) rather than being unreachable or in conflict. */
function isDataError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++, e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^(22|54)[0-9A-Z]{3}$/.test(code)) return true;
  }
  return false;
}

function checkDate(d: Date, field: string): Date {
  if (!(d instanceof Date) || Number.isNaN(d.getTime())) {
    throw new OngridError("invalid_argument", `audit filter ${field} is not a valid date`, "pass an RFC 3339 timestamp");
  }
  return d;
}

function checkInt(n: number, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw new OngridError("invalid_argument", `audit filter ${field} must be an integer ${range}, got ${String(n)}`, "page with afterSeq");
  }
  return n;
}
