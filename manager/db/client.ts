/** Opens the manager's database (B5): PostgreSQL when DATABASE_URL is set, embedded PGlite otherwise; migrations applied at open. */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { EventEmitter } from "node:events";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import type { Logger } from "pino";
import postgres from "postgres";
import { OngridError } from "../../skill/errors.ts";
import { errorText } from "./error-text.ts";
import { acquireLock, type DirLock } from "./lock.ts";
import * as schema from "./schema/index.ts";

/** The tables the drizzle instance is typed with. */
export type Schema = typeof schema;
/** A drizzle database over either driver; code above this layer never needs to know which. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** The subset of a pino logger the storage layer uses. */
export type DbLogger = Pick<Logger, "debug" | "info" | "warn" | "error">;

/** An open database and how to close it. */
export interface Database {
  db: Db;
  kind: "pglite" | "postgres";
  /** The embedded engine itself (kind "pglite"), for what drizzle does not reach: COPY from a blob (the audit writer). */
  pglite?: PGlite;
  /** Closes connections (and releases the PGlite lock); safe to call twice. */
  close(): Promise<void>;
  /** PGlite: writes the manager's URL into the data directory's lock file, where the CLI finds it (cli/common.ts). */
  advertise?(url: string): Promise<void>;
  /**
   * Notifications between the managers sharing the database (M2): PostgreSQL `NOTIFY`, delivered
   * to every manager listening, this one included; on PGlite (one manager) in process. Payloads
   * are small (ids, never content: NOTIFY takes at most 8,000 bytes).
   */
  notify(channel: string, payload: string): Promise<void>;
  /** Calls `fn` with each payload sent on `channel`; the returned function stops listening. */
  listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>>;
}

/** The in-process bus of a database one manager has to itself. */
function localBus(): Pick<Database, "notify" | "listen"> {
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  return {
    async notify(channel, payload) {
      // Asynchronous like a real NOTIFY: a listener never runs inside the notifier's call.
      setImmediate(() => bus.emit(channel, payload));
    },
    async listen(channel, fn) {
      bus.on(channel, fn);
      return async () => void bus.off(channel, fn);
    },
  };
}

/** Where the database lives and how to report on it. */
export interface OpenDatabaseOptions {
  /** postgres:// URL; when absent, embedded PGlite in `<dataDir>/pglite`. */
  databaseUrl?: string;
  dataDir: string;
  log?: DbLogger;
  /** Size of the postgres-js pool (default 10). */
  poolSize?: number;
  /** Override for the committed migrations (default: `migrations/` beside this file). */
  migrationsFolder?: string;
}

/** The committed drizzle-kit output, resolved from this module so the cwd does not matter. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("./migrations", import.meta.url));

/** Session-level advisory lock that serialises migrations when several managers start on one PostgreSQL. */
const MIGRATION_LOCK_KEY = 7_236_120_001n;

/** Opens the configured database, applies pending migrations, and returns it ready for use. */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const migrationsFolder = options.migrationsFolder ?? MIGRATIONS_FOLDER;
  const url = options.databaseUrl?.trim();
  return url ? openPostgres(url, options, migrationsFolder) : openPglite(options, migrationsFolder);
}

async function openPglite(options: OpenDatabaseOptions, migrationsFolder: string): Promise<Database> {
  const dir = join(options.dataDir, "pglite");
  await mkdir(dir, { recursive: true });
  const lock: DirLock = await acquireLock(join(options.dataDir, "ongrid.lock"), `the data directory ${options.dataDir}`);
  let client: PGlite | undefined;
  try {
    client = new PGlite(dir);
    await client.waitReady;
    const db = drizzlePglite({ client, schema });
    await migratePglite(db, { migrationsFolder });
    options.log?.info({ dataDir: dir }, "database: embedded PGlite ready");
    let closed = false;
    const pg = client;
    return {
      db,
      kind: "pglite",
      pglite: pg,
      advertise: (url) => lock.advertise(url),
      ...localBus(),
      async close() {
        if (closed) return;
        closed = true;
        try {
          if (!pg.closed) await pg.close();
        } finally {
          await lock.release();
        }
      },
    };
  } catch (err) {
    if (client && !client.closed) await client.close().catch(() => undefined);
    await lock.release();
    throw new OngridError(
      "unavailable",
      `cannot open the embedded PGlite database in ${dir}: ${errorText(err)}`,
      "check that the data directory is writable and not damaged, or set DATABASE_URL to use PostgreSQL",
    );
  }
}

async function openPostgres(url: string, options: OpenDatabaseOptions, migrationsFolder: string): Promise<Database> {
  const shown = describeUrl(url);
  const secrets = urlSecrets(url);
  const onnotice = (n: postgres.Notice) => options.log?.debug({ notice: n.message }, "database notice");
  // fetch_types off: by default postgres-js sends its own array-types query as the first
  // statement of every new connection and drops that query's promise, so a connection cut at that
  // moment (a PostgreSQL restart under load) rejects it unhandled and kills the process
  // (porsager/postgres#1192, #1205, #1223; test: "a connection cut right after its startup").
  // Without it postgres-js cannot serialise or parse array values: pass lists as text
  // (string_to_array, as the knowledge store does) or expanded (drizzle's inArray).
  const connectionOptions = { connect_timeout: CONNECT_TIMEOUT_S, onnotice, fetch_types: false, connection: { application_name: "ongrid-manager" } };
  const fail = (err: unknown) =>
    new OngridError(
      "unavailable",
      `cannot connect to DATABASE_URL ${shown}: ${scrub(errorText(err), secrets)}`,
      "check that PostgreSQL is running and reachable and that the URL's user, password and database are right",
    );

  // Migrations run on one dedicated connection holding a session advisory lock, so that managers
  // starting together against one server apply each migration exactly once.
  const migrator = postgres(url, { ...connectionOptions, max: 1 });
  try {
    await migrator.unsafe(`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
  } catch (err) {
    await migrator.end({ timeout: 1 }).catch(() => undefined);
    throw fail(err);
  }
  try {
    await migratePostgres(drizzlePostgres({ client: migrator }), { migrationsFolder });
  } catch (err) {
    throw new OngridError(
      "internal",
      `cannot apply database migrations on ${shown}: ${scrub(errorText(err), secrets)}`,
      "check that the database user may create tables and schemas",
    );
  } finally {
    await migrator.end({ timeout: 5 }).catch(() => undefined); // ending the session releases the lock
  }

  // Bounded waits on the serving pool: a stalled database or a stuck lock holder fails the query
  // (callers get a clear error) instead of hanging every call behind it. Migrations above run
  // without them.
  const client = postgres(url, {
    ...connectionOptions,
    connection: { ...connectionOptions.connection, statement_timeout: 30_000, lock_timeout: 15_000 },
    max: options.poolSize ?? 10,
    idle_timeout: 60,
    max_lifetime: 30 * 60,
    backoff: reconnectDelaySeconds,
  });
  try {
    await client`select 1`;
  } catch (err) {
    await client.end({ timeout: 1 }).catch(() => undefined);
    throw fail(err);
  }
  options.log?.info({ database: shown }, "database: PostgreSQL ready");
  const db = drizzlePostgres({ client, schema });
  let closed = false;
  return {
    db,
    kind: "postgres",
    async notify(channel, payload) {
      await client.notify(channel, payload);
    },
    async listen(channel, fn) {
      // postgres-js keeps one extra connection for LISTEN and re-listens after it reconnects.
      const sub = await client.listen(channel, fn);
      return () => sub.unlisten();
    },
    async close() {
      if (closed) return;
      closed = true;
      await client.end({ timeout: 5 });
    },
  };
}

/** How long, in seconds, a connection may take from dialling to ready before postgres.js gives up on it and dials again. */
export const CONNECT_TIMEOUT_S = 10;

/** The longest wait, in seconds, before a pool connection dials again after a failed connect. */
export const RECONNECT_MAX_DELAY_S = 1;

/**
 * Wait before a pool connection dials again, `failures` being the failed connects of the whole pool
 * since its last successful one. postgres-js' default (0.5–1 × min(3^n / 100, 20) s) reaches 10–20 s
 * within a second of refused connects when ten connections share the count, so after a PostgreSQL
 * restart calls waited, and failed, for up to 20 s after the server was back (F3). Bounded here: the
 * pool retries at most about once a second per connection and recovers within that of the server.
 */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.05 * 2 ** failures, RECONNECT_MAX_DELAY_S) * (0.5 + Math.random() / 2);
}

/** `postgres://user@host:port/db` — the URL as it may be shown: no password, no query string. */
export function describeUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "(not a valid URL)";
  }
  const user = u.username ? `${decodeURIComponent(u.username)}@` : "";
  const port = u.port ? `:${u.port}` : "";
  return `${u.protocol}//${user}${u.hostname}${port}${u.pathname}`;
}

/** The password of a URL in every spelling it might be echoed in, so messages can be scrubbed of it. */
function urlSecrets(url: string): string[] {
  try {
    const u = new URL(url);
    if (!u.password) return [];
    return [...new Set([u.password, decodeURIComponent(u.password)])].filter((s) => s.length > 0);
  } catch {
    return [];
  }
}

function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join("***");
  return out;
}

