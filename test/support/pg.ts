/** Test helpers for the storage layer: throwaway PostgreSQL databases and suites that run on PGlite and PostgreSQL alike. */
import { randomBytes } from "node:crypto";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, describe, test } from "vitest";
import { openDatabase, type Database, type OpenDatabaseOptions } from "../../manager/db/client.ts";

/** The server the PostgreSQL suites use: `ONGRID_TEST_PG_URL`, or the local trust-auth server. */
export function realPostgresUrl(): string {
  return process.env.ONGRID_TEST_PG_URL?.trim() || "postgres://postgres@127.0.0.1:5432/test";
}

/** `url` with its database name replaced. */
function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** `url` without its password, for messages. */
function shown(url: string): string {
  const u = new URL(url);
  u.password = "";
  return u.toString();
}

let probe: Promise<string | null> | undefined;

/** Why the test server cannot be used (null when it answers); probed once per process with a short timeout. */
export function pgUnavailableReason(): Promise<string | null> {
  probe ??= (async () => {
    const sql = postgres(realPostgresUrl(), { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      await sql`select 1`;
      return null;
    } catch (err) {
      return err instanceof Error ? err.message || String((err as { code?: unknown }).code) : String(err);
    } finally {
      await sql.end({ timeout: 1 }).catch(() => undefined);
    }
  })();
  return probe;
}

/** Whether the test PostgreSQL server answers. */
export async function pgAvailable(): Promise<boolean> {
  return (await pgUnavailableReason()) === null;
}

/** A fresh database on the test server; drop() removes it (disconnecting anyone still on it). */
export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** Creates a uniquely named empty database (`ongrid_t_<random>`) on the test server. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const base = realPostgresUrl();
  const name = `ongrid_t_${randomBytes(6).toString("hex")}`;
  const admin = postgres(base, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end({ timeout: 1 });
  }
  let dropped = false;
  return {
    url: withDatabase(base, name),
    name,
    async drop() {
      if (dropped) return;
      dropped = true;
      const sql = postgres(base, { max: 1, connect_timeout: 5, onnotice: () => {} });
      try {
        await sql.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await sql.end({ timeout: 1 });
      }
    },
  };
}

/** A place a test database lives (a PGlite data dir or a PostgreSQL database) that can be opened more than once. */
export interface TestStore {
  kind: Database["kind"];
  /** The PGlite data dir, or the PostgreSQL URL. */
  where: string;
  /** Opens a Database on this store (PGlite: only one open at a time, by design). */
  open(extra?: Partial<OpenDatabaseOptions>): Promise<Database>;
  /** Raw SQL on the store, for tampering and inspection; PGlite stores must be open (uses that Database). */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}

/** One backend a shared suite runs on. */
export interface TestBackend {
  kind: Database["kind"];
  /** A new, empty store; everything it opened is closed and removed after the suite. */
  fresh(): Promise<TestStore>;
  /** Shortcut: a Database on a fresh store. */
  open(): Promise<Database>;
}

/** Runs `fn` as two suites, against embedded PGlite and against the real PostgreSQL (required when CI=true). */
export function describeBothBackends(name: string, fn: (backend: TestBackend) => void): void {
  describe(`${name} [pglite]`, () => {
    fn(makeBackend("pglite"));
  });
  describe(`${name} [postgres]`, async () => {
    const reason = await pgUnavailableReason();
    if (reason !== null) {
      const message = `PostgreSQL at ${shown(realPostgresUrl())} is not reachable (${reason}); set ONGRID_TEST_PG_URL to a server`;
      if (process.env.CI === "true") {
        test("the real PostgreSQL server is reachable (required in CI)", () => {
          throw new Error(`${message}. The real-PostgreSQL suite is required when CI=true.`);
        });
      } else {
        console.warn(`skipping "${name} [postgres]": ${message}`);
        test.skip(`skipped: ${message}`, () => {});
      }
      return;
    }
    fn(makeBackend("postgres"));
  });
}

function makeBackend(kind: Database["kind"]): TestBackend {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch((err) => console.warn("test cleanup failed:", err));
  });

  let template: Promise<string> | undefined;
  /** A PGlite data dir created and migrated once through openDatabase, then closed, to copy from. */
  function pgliteTemplate(): Promise<string> {
    template ??= (async () => {
      const dir = await mkdtemp(join(tmpdir(), "ongrid-template-"));
      cleanups.unshift(() => rm(dir, { recursive: true, force: true }));
      const d = await openDatabase({ dataDir: dir });
      await d.close();
      return dir;
    })();
    return template;
  }

  async function fresh(): Promise<TestStore> {
    const opened: Database[] = [];
    const track = async (p: Promise<Database>) => {
      const d = await p;
      opened.push(d);
      return d;
    };
    const closeAll = async () => {
      for (const d of opened) await d.close().catch(() => undefined);
    };
    if (kind === "pglite") {
      const dataDir = await mkdtemp(join(tmpdir(), "ongrid-test-"));
      // Copying a migrated template is ~3x faster than PGlite's initdb on every fresh store.
      await cp(join(await pgliteTemplate(), "pglite"), join(dataDir, "pglite"), { recursive: true });
      cleanups.push(async () => {
        await closeAll();
        await rm(dataDir, { recursive: true, force: true });
      });
      let current: Database | undefined;
      return {
        kind,
        where: dataDir,
        async open(extra = {}) {
          current = await track(openDatabase({ dataDir, ...extra }));
          return current;
        },
        async query<T>(text: string, params: unknown[] = []) {
          if (!current) throw new Error("open the PGlite store before querying it");
          const client = (current.db as unknown as { $client: { query(t: string, p: unknown[]): Promise<{ rows: T[] }> } }).$client;
          return (await client.query(text, params)).rows;
        },
      };
    }
    const tdb = await createTestDatabase();
    const raw = postgres(tdb.url, { max: 2, onnotice: () => {} });
    cleanups.push(async () => {
      await closeAll();
      await raw.end({ timeout: 1 });
      await tdb.drop();
    });
    return {
      kind,
      where: tdb.url,
      open: (extra = {}) => track(openDatabase({ databaseUrl: tdb.url, dataDir: tmpdir(), ...extra })),
      async query<T>(text: string, params: unknown[] = []) {
        return (await raw.unsafe(text, params as postgres.ParameterOrJSON<never>[])) as unknown as T[];
      },
    };
  }

  return { kind, fresh, open: async () => (await fresh()).open() };
}
