/**
 * Benchmark worker: the bare node:http2 baseline server. POST /echo answers a unary request
 * with the same bytes; POST /hold keeps a stream open; POST /broadcast writes one small
 * message to every held stream and answers once every client has replied on its stream.
 * POST /broadcast-audited does the same but counts a reply only once the real audit log
 * (manager/audit, opened by the `audit` command on PGlite or PostgreSQL) has committed one row
 * for it, as the manager's does for every edge call: the floor a per-call audit row sets under
 * any fan-out, measured with everything else bare.
 */
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { BARE_MESSAGE_BYTES } from "./lib/constants.ts";
import { serveWorker, type WorkerMessage } from "./lib/worker.ts";
import type { AuditLog } from "../../manager/audit/types.ts";

interface Held {
  stream: http2.ServerHttp2Stream;
  /** Reply bytes received so far. */
  received: number;
  /** The broadcast round when the stream arrived (it owes replies only for later rounds). */
  base: number;
  /** Its name in audit rows. */
  id: string;
}

const held = new Set<Held>();
const message = Buffer.alloc(BARE_MESSAGE_BYTES, 0x6d);
let round = 0;
let replied = 0;
let targets = 0;
let onAllReplied: (() => void) | undefined;
/** Ends the round with an error (an audit row that could not be written). */
let onFailure: ((why: string) => void) | undefined;
let audited = false;
let streams = 0;
/**
 * The audit log and what its rows are made with, loaded by the `audit` command only: until then
 * the server holds nothing of the manager's (its RSS and plain broadcasts stay bare).
 */
let audit: { log: AuditLog; row(edgeId: string): Parameters<AuditLog["append"]>[0] } | undefined;

/** One reply counted, once its audit row is written when the round is audited. */
function onReply(h: Held): void {
  if (!audited || !audit) {
    replied++;
    if (replied >= targets) onAllReplied?.();
    return;
  }
  void audit.log
    .append(audit.row(h.id))
    .then(
      () => {
        replied++;
        if (replied >= targets) onAllReplied?.();
      },
      (err: Error) => onFailure?.(err.message),
    );
}

function broadcast(stream: http2.ServerHttp2Stream, withAudit: boolean): void {
  audited = withAudit;
  round++;
  replied = 0;
  targets = held.size;
  const timer = setTimeout(() => finish(504), 120_000);
  const finish = (status: number, error?: string) => {
    clearTimeout(timer);
    onAllReplied = undefined;
    onFailure = undefined;
    if (stream.destroyed) return;
    stream.respond({ ":status": status, "content-type": "application/json" });
    stream.end(JSON.stringify({ targets, replied, round, ...(error ? { error } : {}) }));
  };
  onAllReplied = () => finish(200);
  onFailure = (why) => finish(500, why);
  for (const h of held) h.stream.write(message);
  if (targets === 0) finish(200);
}

const server = http2.createServer();
server.on("stream", (stream, headers) => {
  stream.on("error", () => {});
  switch (headers[":path"]) {
    case "/echo": {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        if (stream.destroyed) return;
        stream.respond({ ":status": 200, "content-type": "application/octet-stream" });
        stream.end(Buffer.concat(chunks));
      });
      return;
    }
    case "/hold": {
      const h: Held = { stream, received: 0, base: round, id: `bare-${streams++}` };
      held.add(h);
      stream.respond({ ":status": 200, "content-type": "application/octet-stream" });
      stream.on("data", (c: Buffer) => {
        const owed = round - h.base;
        const before = Math.floor(h.received / BARE_MESSAGE_BYTES);
        h.received += c.length;
        if (before < owed && Math.floor(h.received / BARE_MESSAGE_BYTES) >= owed) onReply(h);
      });
      stream.on("close", () => held.delete(h));
      return;
    }
    case "/broadcast":
    case "/broadcast-audited":
      stream.resume();
      broadcast(stream, headers[":path"] === "/broadcast-audited");
      return;
    default:
      stream.respond({ ":status": 404 }, { endStream: true });
  }
});

/** Opens the audit log the `audit` command asks for, importing the manager's modules only then. */
async function openAudit(msg: WorkerMessage): Promise<NonNullable<typeof audit>> {
  const [{ openDatabase }, { createAuditLog }, { echoAuditRecord }] = await Promise.all([
    import("../../manager/db/client.ts"),
    import("../../manager/audit/log.ts"),
    import("./lib/audit-row.ts"),
  ]);
  const database = await openDatabase({ dataDir: String(msg.dataDir), ...(msg.databaseUrl ? { databaseUrl: String(msg.databaseUrl) } : {}) });
  return { log: createAuditLog(database), row: (edgeId) => echoAuditRecord(edgeId, { success: true, output: "x", durationMs: 0, edgeId }, new Date()) };
}

serveWorker(async (msg: WorkerMessage) => {
  if (msg.cmd === "listen") {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return { port: (server.address() as AddressInfo).port };
  }
  if (msg.cmd === "stats") return { held: held.size };
  if (msg.cmd === "audit") {
    audit ??= await openAudit(msg);
    return { ready: true };
  }
  throw new Error(`unknown command ${msg.cmd}`);
});
