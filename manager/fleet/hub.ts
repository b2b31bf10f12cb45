/**
 * The manager's side of the edge tunnel (C1–C3): accepts EdgeTunnelService.Connect streams,
 * keeps one session per edge, sends execute/cancel frames and matches results to callers.
 */
import { randomUUID } from "node:crypto";
import type http2 from "node:http2";
import type { Logger } from "pino";
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { OngridError } from "../../skill/errors.ts";
import { redact } from "../../skill/redact.ts";
import { truncateOutput } from "../../skill/truncate.ts";
import type { ResultEnvelope, Skill, SkillClass } from "../../skill/types.ts";
import { classToProto, inventoryDigest } from "../../skill/proto.ts";
import { formatDuration } from "../../skill/duration.ts";
import { evidenceMac } from "../../skill/evidence.ts";
import { ConnectRequestSchema, ConnectResponseSchema, type Hello } from "../../proto/gen/ongrid/v1/tunnel_pb.ts";
import { MetadataSchema, type Metadata, type SkillResult } from "../../proto/gen/ongrid/v1/skill_pb.ts";
import type { EdgeStore } from "./edge-store.ts";
import { acceptBidi, checkGrpcRequest, refuse, type GrpcBidiCall } from "./grpc-stream.ts";
import { skillFromMetadata } from "./remote-skill.ts";
import { labelProblem } from "../../skill/identity.ts";
import { createAbortWatchers, createDeadlines } from "./call-timers.ts";
import { createExecuteFrames } from "./execute-frame.ts";

/** How long a token lookup may take before the edge is told to retry. */
const AUTH_TIMEOUT_MS = 10_000;
/** A live edge's token is re-checked every this many heartbeats. */
const RECHECK_EVERY_TICKS = 12;
/** Periodic token re-checks of live edges are gathered this long into one query. */
const RECHECK_BATCH_MS = 1000;
/** Skills one edge may offer. */
const MAX_SKILLS_PER_EDGE = 1000;
/** Slices of the heartbeat wheel: the hub's one heartbeat timer ticks this many times an interval. */
const HEARTBEAT_SLICES = 10;
/** Distinct edge inventories remembered by digest (a fleet runs a handful: one per edge version and pack set). */
const INVENTORY_CACHE = 256;
/** Call deadlines are gathered into slots this wide (a silent edge's call fails at most this late). */
const DEADLINE_GRANULARITY_MS = 100;

/** Resolves like `p`, or rejects after `ms`. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** Path of the tunnel RPC. */
export const TUNNEL_PATH = "/ongrid.v1.EdgeTunnelService/Connect";

/** Settings of the hub. */
export interface HubOptions {
  store: EdgeStore;
  log: Logger;
  managerVersion: string;
  /** How often each side sends a heartbeat; a peer silent for 3 intervals is dead. */
  heartbeatMs: number;
  /** Largest frame accepted from an edge. */
  maxFrameBytes: number;
  /** Output cap applied again to what edges return. */
  outputCapBytes: number;
  /** How long an edge has to send hello, and its inventory when asked for it (tunnel.hello_timeout; default 10 s). */
  helloTimeoutMs?: number;
}

interface Pending {
  resolve(r: ResultEnvelope): void;
  reject(e: Error): void;
}

/** One connected edge. */
export interface EdgeSession {
  readonly edgeId: string;
  /** The edge's hello: id, version, hostname, OS, and the manager's labels for it (its skill list is not kept here; see `skills`). */
  readonly hello: Hello;
  /** The labels the edge reported in its hello: shown, never used for reach or selectors. */
  readonly reportedLabels: Readonly<Record<string, string>>;
  /** What the edge offers now: from hello, replaced by each inventory frame (pack rescans). */
  skills: ReadonlyMap<string, Skill>;
  readonly connectedAt: Date;
  lastHeard: number;
}

/** What let a non-safe call through the gate; sent with the execute frame, MAC'd for the edge (skill/evidence.ts). */
export interface Evidence {
  approvalId: string;
  approvers: string[];
  sopHash: string;
  effectiveClass: SkillClass;
  reasonType: string;
}

/** An edge inventory the manager was sent: its digest, the skills built from it, and its JSON for the edges table. */
interface Inventory {
  digest: string;
  skills: ReadonlyMap<string, Skill>;
  json: JsonValue[];
}

interface LiveSession extends EdgeSession {
  /** SHA-256 hex of the edge's token: the key of the evidence MAC. */
  tokenHash: string;
  call: GrpcBidiCall<typeof ConnectResponseSchema>;
  pending: Map<string, Pending>;
  /** Its slice of the heartbeat wheel, and the heartbeats sent so far. */
  slice: number;
  ticks: number;
  close(status: { code: Code; message: string }): void;
}

/** Converts an edge's result frame into an envelope, redacting and capping it again (edges are not trusted to). */
function envelopeFrom(r: SkillResult | undefined, edgeId: string, capBytes: number): ResultEnvelope {
  const output = r?.output ? toJson(ValueSchema, r.output) : null;
  const capped = truncateOutput(redact(output), capBytes);
  return {
    success: Boolean(r?.success),
    output: capped.output,
    ...(r?.error
      ? { error: redact({ code: r.error.code, message: r.error.message, hint: r.error.hint }) }
      : r?.success
        ? {}
        : { error: { code: "edge_error", message: `edge "${edgeId}" reported a failure without an error`, hint: "check the edge's log" } }),
    duration_ms: r?.durationMs ?? 0,
    truncated: Boolean(r?.truncated) || capped.truncated,
    edge_id: edgeId,
  };
}

/** Creates the hub. */
export function createHub(opts: HubOptions) {
  const { store, log } = opts;
  const sessions = new Map<string, LiveSession>();
  /** How many connected edges offer each skill key: "does any edge offer K" in O(1) (asked on every call by /metrics). */
  const offerCount = new Map<string, number>();
  const countOffers = (skills: ReadonlyMap<string, Skill>, delta: 1 | -1) => {
    for (const key of skills.keys()) {
      const n = (offerCount.get(key) ?? 0) + delta;
      if (n > 0) offerCount.set(key, n);
      else offerCount.delete(key);
    }
  };
  const opening = new Map<string, Set<GrpcBidiCall<typeof ConnectResponseSchema>>>();
  const helloTimeoutMs = opts.helloTimeoutMs ?? 10_000;

  function bearer(headers: http2.IncomingHttpHeaders): string | undefined {
    const h = String(headers.authorization ?? "");
    const m = /^Bearer\s+(\S+)$/i.exec(h);
    return m?.[1];
  }

  async function open(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): Promise<void> {
    const bad = checkGrpcRequest(headers);
    if (bad) return refuse(stream, bad);
    const token = bearer(headers);
    if (!token) return refuse(stream, { code: Code.Unauthenticated, message: "missing edge token: send `authorization: Bearer <token>`" });
    let row;
    try {
      row = await withTimeout(store.authenticate(token), AUTH_TIMEOUT_MS);
    } catch (err) {
      const e = err as OngridError;
      if (e.code === "unauthenticated") {
        log.warn({ reason: e.message }, "edge refused: bad token");
        return refuse(stream, { code: Code.Unauthenticated, message: e.message });
      }
      log.error({ err: String(err) }, "edge authentication failed");
      return refuse(stream, { code: Code.Unavailable, message: "edge authentication is unavailable; retry later" });
    }
    if (stream.destroyed) return;
    const enrolledId = row.id;
    const tokenHash = row.tokenHash;
    const assigned = row.labels ?? {};
    let session: LiveSession | undefined;
    let helloSeen = false;
    /** The hello of an edge asked for its inventory, until the inventory frame arrives. */
    let awaitingInventory: Hello | undefined;
    let inventoryTimer: NodeJS.Timeout | undefined;
    const helloTimer = setTimeout(() => call.end({ code: Code.InvalidArgument, message: `no hello within ${formatDuration(helloTimeoutMs)}` }), helloTimeoutMs);
    const call = acceptBidi(stream, headers, ConnectRequestSchema, ConnectResponseSchema, opts.maxFrameBytes, {
      onMessage(msg) {
        const f = msg.frame;
        if (!session) {
          if (awaitingInventory) {
            // Asked for its inventory: the edge's skills come next, then its welcome.
            if (f.case === "inventory") {
              const hello = awaitingInventory;
              awaitingInventory = undefined;
              clearTimeout(inventoryTimer);
              let inv: Inventory;
              try {
                inv = inventoryOf(f.value.skills);
              } catch (err) {
                call.end({ code: Code.InvalidArgument, message: `inventory refused: ${(err as Error).message}` });
                return;
              }
              session = admit(call, enrolledId, tokenHash, hello, inv, assigned);
            } else if (f.case === "hello") call.end({ code: Code.InvalidArgument, message: "hello may only be sent once" });
            return;
          }
          if (helloSeen) return; // heartbeats while the hello is being checked
          if (f.case !== "hello") {
            const unknown = msg.$unknown?.[0];
            const got = f.case ?? (unknown ? `an unknown frame (field ${unknown.no})` : "an empty frame");
            call.end({ code: Code.InvalidArgument, message: `the first frame must be hello, got ${got}` });
            return;
          }
          helloSeen = true;
          clearTimeout(helloTimer);
          welcome(call, enrolledId, tokenHash, f.value, assigned).then(
            (s) => {
              if (s !== "inventory") session = s;
              else if (!call.closed) {
                awaitingInventory = f.value;
                inventoryTimer = setTimeout(() => call.end({ code: Code.InvalidArgument, message: `no inventory within ${formatDuration(helloTimeoutMs)} of the inventory request` }), helloTimeoutMs);
                call.send({ frame: { case: "inventoryRequest", value: {} } });
              }
            },
            (err) => {
              log.error({ err: String(err), edge: enrolledId }, "edge welcome failed");
              call.end({ code: Code.Unavailable, message: "the manager could not admit the edge; retry later" });
            },
          );
          return;
        }
        session.lastHeard = Date.now();
        if (f.case === "result") {
          const p = session.pending.get(f.value.callId);
          if (!p) return; // late result of a cancelled or timed-out call
          let envelope: ResultEnvelope;
          try {
            envelope = envelopeFrom(f.value.result, session.edgeId, opts.outputCapBytes);
          } catch (err) {
            // E.g. a Value with no kind or a NaN: not JSON. The caller learns why when the session drops.
            session.close({ code: Code.InvalidArgument, message: `result of call ${f.value.callId} refused: ${(err as Error).message}` });
            return;
          }
          p.resolve(envelope);
        } else if (f.case === "inventory") {
          replaceInventory(session, f.value.skills);
        } else if (f.case === "hello") {
          session.close({ code: Code.InvalidArgument, message: "hello may only be sent once" });
        }
      },
      onEnd: () =>
        !helloSeen
          ? { code: Code.InvalidArgument, message: "the stream ended before hello" }
          : awaitingInventory
            ? { code: Code.InvalidArgument, message: "the stream ended before the inventory the manager asked for" }
            : undefined,
      onClose(err) {
        clearTimeout(helloTimer);
        clearTimeout(inventoryTimer);
        opening.get(enrolledId)?.delete(call);
        if (session) drop(session, err ? `tunnel lost: ${err.message}` : "edge closed the tunnel");
      },
    });
    // Until it is welcomed, a stream is tracked so that revoking or rotating the token closes it too.
    let set = opening.get(enrolledId);
    if (!set) opening.set(enrolledId, (set = new Set()));
    set.add(call);
  }

  /**
   * Heartbeats without a timer per edge: one timer ticks HEARTBEAT_SLICES times an interval and
   * each tick serves one slice of the sessions (given round-robin at welcome), so every session is
   * served once an interval and the fleet's heartbeats are spread over it.
   */
  const wheel: Array<Set<LiveSession>> = Array.from({ length: HEARTBEAT_SLICES }, () => new Set());
  let nextSlice = 0;
  let wheelTick = 0;
  let wheelTimer: NodeJS.Timeout | undefined;
  function startWheel(): void {
    if (wheelTimer) return;
    wheelTimer = setInterval(() => {
      const slice = wheel[wheelTick++ % HEARTBEAT_SLICES]!;
      // A copy, since a beat may close sessions; one closed meanwhile has left the slice.
      for (const session of [...slice]) if (slice.has(session)) beat(session);
    }, opts.heartbeatMs / HEARTBEAT_SLICES);
    wheelTimer.unref();
  }

  /** One session's heartbeat: close it if the edge has been silent for 3 intervals, else send one; now and then re-check its token. */
  function beat(session: LiveSession): void {
    if (Date.now() - session.lastHeard > 3 * opts.heartbeatMs) {
      session.close({ code: Code.Unavailable, message: `no heartbeat from the edge for ${3 * opts.heartbeatMs} ms` });
      return;
    }
    session.call.send({ frame: { case: "heartbeat", value: { sentAtUnixMs: BigInt(Date.now()) } } });
    // Revocation or rotation done elsewhere (the CLI on a shared database, another manager) is noticed here.
    if (++session.ticks % RECHECK_EVERY_TICKS === 0) {
      stillValid(session.edgeId, session.tokenHash, false).then(
        (ok) => ok || session.close({ code: Code.Unauthenticated, message: "the edge's token was revoked or rotated" }),
        (err) => log.warn({ err: String(err), edge: session.edgeId }, "could not re-check the edge's token"),
      );
    }
  }

  /**
   * Checks a hello and admits the edge, or — when the hello names an inventory by a digest the
   * manager does not hold — answers "inventory": the caller asks the edge for its inventory and
   * admits it when the inventory frame arrives.
   */
  async function welcome(call: GrpcBidiCall<typeof ConnectResponseSchema>, enrolledId: string, tokenHash: string, hello: Hello, assigned: Record<string, string>): Promise<LiveSession | "inventory" | undefined> {
    if (hello.edgeId !== enrolledId) {
      call.end({ code: Code.PermissionDenied, message: `this token is enrolled for edge "${enrolledId}", not "${hello.edgeId}"` });
      return undefined;
    }
    const labelsBad = labelProblem(hello.labels);
    if (labelsBad || hello.skills.length > MAX_SKILLS_PER_EDGE) {
      call.end({ code: Code.InvalidArgument, message: `hello refused: ${labelsBad ?? `at most ${MAX_SKILLS_PER_EDGE} skills per edge, got ${hello.skills.length}`}` });
      return undefined;
    }
    // The token may have been revoked or rotated since the stream opened.
    if (!(await stillValid(enrolledId, tokenHash))) {
      call.end({ code: Code.Unauthenticated, message: "edge token is unknown or revoked" });
      return undefined;
    }
    if (call.closed) return undefined;
    let inv: Inventory | undefined;
    if (hello.skills.length === 0 && hello.inventoryDigest) {
      inv = knownInventory(hello.inventoryDigest);
      if (!inv) return "inventory";
    } else {
      try {
        inv = inventoryOf(hello.skills);
      } catch (err) {
        call.end({ code: Code.InvalidArgument, message: `hello refused: ${(err as Error).message}` });
        return undefined;
      }
    }
    return admit(call, enrolledId, tokenHash, hello, inv, assigned);
  }

  /** Makes the edge's session live (replacing an older one of the same edge), welcomes it and records it online. */
  function admit(call: GrpcBidiCall<typeof ConnectResponseSchema>, enrolledId: string, tokenHash: string, hello: Hello, inv: Inventory, assigned: Record<string, string>): LiveSession {
    opening.get(enrolledId)?.delete(call);
    const skills = inv.skills;
    const previous = sessions.get(enrolledId);
    if (previous) previous.close({ code: Code.Aborted, message: "superseded by a newer connection of the same edge" });
    const session: LiveSession = {
      edgeId: enrolledId,
      tokenHash,
      // Without its skill list (kept as `skills`, shared by the edges offering the same inventory):
      // the metadata of a dozen skills is ~15 KB an edge. Its labels are the manager's (enrolment,
      // `ongrid edge label`): what the edge says of itself never widens anyone's reach (C4, G4).
      hello: { ...hello, labels: { ...assigned }, skills: [] },
      reportedLabels: { ...hello.labels },
      skills,
      connectedAt: new Date(),
      lastHeard: Date.now(),
      call,
      pending: new Map(),
      slice: nextSlice++ % HEARTBEAT_SLICES,
      ticks: 0,
      close(status) {
        drop(session, status.message); // first, so pending calls learn the real reason
        call.end(status);
      },
    };
    wheel[session.slice]!.add(session);
    startWheel();
    sessions.set(enrolledId, session);
    countOffers(skills, 1);
    call.send({
      frame: { case: "welcome", value: { edgeId: enrolledId, managerVersion: opts.managerVersion, heartbeatIntervalMs: opts.heartbeatMs, inventoryDigest: inv.digest } },
    });
    store
      .markOnline(enrolledId, {
        version: hello.version,
        hostname: hello.hostname,
        os: hello.os,
        labels: { ...hello.labels },
        skills: inv.json,
      })
      .catch((err) => log.error({ err: String(err), edge: enrolledId }, "could not record edge presence"));
    log.info({ edge: enrolledId, version: hello.version, skills: skills.size }, "edge connected");
    return session;
  }

  /**
   * Inventories the manager was sent, by the digest it computed over each (never by an edge's
   * word: an edge naming a digest gets exactly what another edge's metadata of that digest
   * made); most recently used last, at most INVENTORY_CACHE of them.
   */
  const inventories = new Map<string, Inventory>();

  /** The inventory held under `digest`, now the most recently used; undefined when none is. */
  function knownInventory(digest: string): Inventory | undefined {
    const inv = inventories.get(digest);
    if (inv) {
      inventories.delete(digest);
      inventories.set(digest, inv);
    }
    return inv;
  }

  /** An inventory from an edge's metadata list, remembered under its digest; throws invalid_argument on a defect. */
  function inventoryOf(list: Metadata[]): Inventory {
    const digest = inventoryDigest(list);
    const known = knownInventory(digest);
    if (known) return known;
    const inv: Inventory = { digest, skills: skillsFrom(list), json: list.map((m) => toJson(MetadataSchema, m)) };
    inventories.set(digest, inv);
    if (inventories.size > INVENTORY_CACHE) inventories.delete(inventories.keys().next().value!);
    return inv;
  }

  /** The manager-side skills for an edge's metadata list; throws invalid_argument on a defect. */
  function skillsFrom(list: Metadata[]): Map<string, Skill> {
    if (list.length > MAX_SKILLS_PER_EDGE) throw new OngridError("invalid_argument", `at most ${MAX_SKILLS_PER_EDGE} skills per edge, got ${list.length}`);
    const skills = new Map<string, Skill>();
    for (const m of list) {
      if (skills.has(m.key)) throw new OngridError("invalid_argument", `skill "${m.key}" is offered twice`);
      skills.set(m.key, skillFromMetadata(m));
    }
    return skills;
  }

  /** An inventory frame: the edge's skill set changed without a reconnect. A defective one ends the session, as a bad hello would. */
  function replaceInventory(session: LiveSession, list: Metadata[]): void {
    let inv: Inventory;
    try {
      inv = inventoryOf(list);
      if (sessions.get(session.edgeId) === session) {
        countOffers(session.skills, -1);
        countOffers(inv.skills, 1);
      }
      session.skills = inv.skills;
    } catch (err) {
      session.close({ code: Code.InvalidArgument, message: `inventory refused: ${(err as Error).message}` });
      return;
    }
    const h = session.hello;
    store
      .markOnline(session.edgeId, { version: h.version, hostname: h.hostname, os: h.os, labels: { ...h.labels }, skills: inv.json })
      .catch((err) => log.error({ err: String(err), edge: session.edgeId }, "could not record the edge's new skills"));
    log.info({ edge: session.edgeId, skills: session.skills.size }, "edge skills changed");
  }

  function drop(session: LiveSession, reason: string): void {
    wheel[session.slice]!.delete(session);
    for (const p of [...session.pending.values()]) {
      p.reject(new OngridError("unavailable", `edge "${session.edgeId}" went away during the call: ${reason}`, "retry when the edge is back online"));
    }
    if (sessions.get(session.edgeId) !== session) return;
    sessions.delete(session.edgeId);
    countOffers(session.skills, -1);
    store.markOffline(session.edgeId, new Date(session.lastHeard)).catch((err) => log.error({ err: String(err) }, "could not record edge offline"));
    log.info({ edge: session.edgeId, reason }, "edge disconnected");
  }

  /**
   * Whether an edge's token is still the enrolled, unrevoked one. The store batches the reads:
   * welcomes of the same tick share one query, periodic re-checks are gathered over
   * RECHECK_BATCH_MS, so 10,000 edges cost a few queries, not 10,000.
   */
  async function stillValid(edgeId: string, tokenHash: string, urgent = true): Promise<boolean> {
    const row = await withTimeout(store.credential(edgeId, urgent ? 0 : RECHECK_BATCH_MS), AUTH_TIMEOUT_MS);
    return Boolean(row && !row.revokedAt && row.tokenHash === tokenHash);
  }

  /** The per-call deadlines (one timer per 100 ms slot) and abort watches (one listener per signal). */
  const deadlines = createDeadlines(DEADLINE_GRANULARITY_MS);
  const watchAbort = createAbortWatchers();
  const executeFrame = createExecuteFrames();

  /**
   * Runs a host skill on a connected edge; rejects with unavailable / deadline_exceeded / cancelled.
   * Many calls may share one signal (a fan-out passes one for all its calls).
   */
  function call(edgeId: string, key: string, params: Record<string, unknown>, timeoutMs: number, signal?: AbortSignal, evidence?: Evidence): Promise<ResultEnvelope> {
    const session = sessions.get(edgeId);
    if (!session) return Promise.reject(new OngridError("unavailable", `edge "${edgeId}" is offline`, "retry when the edge is back online"));
    if (signal?.aborted) return Promise.reject(new OngridError("cancelled", `the call of "${key}" on edge "${edgeId}" was cancelled`));
    const callId = randomUUID();
    return new Promise<ResultEnvelope>((resolve, reject) => {
      const cancel = (reason: string) => session.call.send({ frame: { case: "cancel", value: { callId, reason } } });
      // The edge enforces the deadline itself; this one only catches an edge that stays silent.
      const deadline = deadlines.after(timeoutMs + 1000, () => {
        if (!session.pending.has(callId)) return;
        pending.reject(new OngridError("deadline_exceeded", `edge "${edgeId}" did not answer "${key}" within ${timeoutMs} ms`, "raise timeout_ms or check the edge"));
        cancel("deadline exceeded");
      });
      const unwatch = signal
        ? watchAbort(signal, () => {
            if (!session.pending.has(callId)) return;
            pending.reject(new OngridError("cancelled", `the call of "${key}" on edge "${edgeId}" was cancelled`));
            cancel("the caller cancelled");
          })
        : undefined;
      /** Drops the call's bookkeeping: its entry, its deadline and its abort watch. */
      const settle = () => {
        session.pending.delete(callId);
        deadline.cancel();
        unwatch?.();
      };
      const pending: Pending = {
        resolve(r) {
          settle();
          resolve(r);
        },
        reject(e) {
          settle();
          reject(e);
        },
      };
      session.pending.set(callId, pending);
      const approval = evidence
        ? {
            approvalId: evidence.approvalId,
            approvers: evidence.approvers,
            sopHash: evidence.sopHash,
            effectiveClass: classToProto(evidence.effectiveClass),
            reasonType: evidence.reasonType,
            mac: evidenceMac(session.tokenHash, { callId, key, params, ...evidence }),
          }
        : undefined;
      // A call without evidence reuses the encoding of its params (a fan-out's calls share them).
      const sent = approval
        ? session.call.send({ frame: { case: "execute", value: { callId, key, params: params as never, timeoutMs, approval } } })
        : session.call.sendFrame(executeFrame(callId, key, params, timeoutMs));
      if (!sent && session.pending.has(callId)) {
        pending.reject(new OngridError("unavailable", `edge "${edgeId}" tunnel is closed`, "retry when the edge is back online"));
      }
    });
  }

  return {
    /** The raw HTTP/2 stream handler for TUNNEL_PATH. */
    handleStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
      open(stream, headers).catch((err) => {
        log.error({ err: String(err) }, "tunnel open failed");
        refuse(stream, { code: Code.Internal, message: "internal error; see the manager log" });
      });
    },
    call,
    session: (edgeId: string): EdgeSession | undefined => sessions.get(edgeId),
    sessions: (): EdgeSession[] => [...sessions.values()],
    /** How many edges are connected (without copying the session list). */
    connectedCount: (): number => sessions.size,
    /** Whether any connected edge offers the skill key. */
    offered: (key: string): boolean => offerCount.has(key),
    /** Gives a connected edge the labels an admin set (its reach and selectors follow at once). */
    relabel(edgeId: string, labels: Record<string, string>): void {
      const s = sessions.get(edgeId);
      if (s) (s.hello as { labels: Record<string, string> }).labels = { ...labels };
    },
    /** Closes an edge's tunnel and any stream of it still awaiting its welcome (revocation, rotation). */
    disconnect(edgeId: string, message: string): boolean {
      const s = sessions.get(edgeId);
      s?.close({ code: Code.Unauthenticated, message });
      for (const c of opening.get(edgeId) ?? []) c.end({ code: Code.Unauthenticated, message });
      opening.delete(edgeId);
      return Boolean(s);
    },
    /** Closes every tunnel and stops the heartbeat timer (manager shutdown). */
    closeAll(): void {
      for (const s of [...sessions.values()]) s.close({ code: Code.Unavailable, message: "manager shutting down" });
      clearInterval(wheelTimer);
      wheelTimer = undefined;
    },
  };
}

/** The hub's interface. */
export type Hub = ReturnType<typeof createHub>;
