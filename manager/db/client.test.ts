import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { sql } from "drizzle-orm";
import { describeBothBackends, realPostgresUrl } from "../../test/support/pg.ts";
import { processFaults } from "../../test/support/process-faults.ts";
import { OngridError } from "../../skill/errors.ts";
import { MIGRATIONS_FOLDER, describeUrl, openDatabase } from "./client.ts";
import { processIdentity } from "./lock.ts";
import { toolCalls } from "./schema/index.ts";

/** How many migrations drizzle-kit generated (manager/db/migrations/meta/_journal.json). */
const MIGRATION_COUNT = (JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: unknown[] }).entries.length;

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "ongrid-client-"));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A pid that certainly belonged to a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((r) => child.on("exit", r));
  return child.pid!;
}

/**
 * A TCP proxy to a PostgreSQL server that, once armed, resets the next connection it opens at the
 * first message its client sends after the server's first ReadyForQuery (the end of the startup).
 */
async function cuttingProxy(target: URL): Promise<{ port: number; arm(): void; cuts(): number; close(): Promise<void> }> {
  let armed = false;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const cut = armed;
    armed = false;
    const upstream = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => undefined);
    }
    let started = false;
    let pending = Buffer.alloc(0);
    upstream.on("data", (chunk: Buffer) => {
      if (cut && !started) {
        // Server messages: a type byte, then a length that counts itself.
        pending = Buffer.concat([pending, chunk]);
        while (pending.length >= 5) {
          const len = pending.readUInt32BE(1);
          if (pending.length < 1 + len) break;
          if (pending[0] === 0x5a) started = true; // 'Z' ReadyForQuery
          pending = pending.subarray(1 + len);
        }
      }
      client.write(chunk);
    });
    client.on("data", (chunk: Buffer) => {
      if (cut && started) {
        cuts++;
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    arm: () => void (armed = true),
    cuts: () => cuts,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describeBothBackends("openDatabase", (backend) => {
  test("applies the committed migrations and is idempotent on reopen", async () => {
    const store = await backend.fresh();
    const first = await store.open();
    expect(first.kind).toBe(backend.kind);
    expect(await first.db.select().from(toolCalls)).toEqual([]);
    await first.close();
    await first.close(); // twice is harmless
    const second = await store.open();
    const applied = await store.query<{ n: number | string }>("select count(*)::int as n from drizzle.__drizzle_migrations");
    expect(Number(applied[0]!.n)).toBe(MIGRATION_COUNT);
    const cols = await store.query<{ column_name: string }>("select column_name from information_schema.columns where table_name = 'tool_calls'");
    expect(cols.map((c) => c.column_name)).toEqual(expect.arrayContaining(["seq", "args_json", "prev_hash", "row_hash", "decision", "sop_hash"]));
  });

  if (backend.kind === "postgres") {
    test("a database that does not exist is named, without the password", async () => {
      const u = new URL(realPostgresUrl());
      u.password = "p4ss-w0rd";
      u.pathname = "/ongrid_no_such_db";
      const err = (await openDatabase({ databaseUrl: u.toString(), dataDir: tmpdir() }).catch((e: unknown) => e)) as Error;
      expect(err.message).toMatch(/^cannot connect to DATABASE_URL postgres:\/\/.*\/ongrid_no_such_db: .*does not exist/);
      expect(err.message).not.toContain("p4ss-w0rd");
    });

    test("the serving pool bounds statement and lock waits", async () => {
      const store = await backend.fresh();
      const database = await store.open();
      const [row] = (await database.db.execute(sql`select current_setting('statement_timeout') as st, current_setting('lock_timeout') as lt`)) as unknown as { st: string; lt: string }[];
      expect(row).toEqual({ st: "30s", lt: "15s" });
    });

    test("a connection cut right after its startup fails only the query on it: no unhandled rejection, the pool serves on", async () => {
      // postgres-js (3.4.x) by default sends its own array-types query as the first statement of
      // every new connection and drops that query's promise (porsager/postgres#1192, #1205, #1223):
      // a connection cut at that moment ended in an unhandled rejection, which kills a Node process.
      // Seen in F3 as `write ECONNRESET` while PostgreSQL stopped under load. The proxy below cuts
      // the first new connection at the first message the client sends after its startup.
      const store = await backend.fresh();
      const proxy = await cuttingProxy(new URL(store.where));
      const faults = processFaults();
      faults.start();
      const u = new URL(store.where);
      u.host = `127.0.0.1:${proxy.port}`;
      const database = await openDatabase({ databaseUrl: u.toString(), dataDir: tmpdir() });
      try {
        proxy.arm();
        // More concurrent queries than open connections, so the pool opens new ones.
        const settled = await Promise.allSettled(Array.from({ length: 4 }, () => database.db.execute(sql`select pg_sleep(0.05)`)));
        expect(proxy.cuts(), "the proxy cut a connection (else nothing was tested)").toBe(1);
        expect(settled.filter((s) => s.status === "rejected").length, "the query on the cut connection failed to its caller").toBeGreaterThanOrEqual(1);
        await new Promise((r) => setTimeout(r, 200)); // an unhandled rejection is reported a tick after the fact
        expect(faults.seen, "no unhandled rejection").toEqual([]);
        const again = await Promise.all(Array.from({ length: 4 }, () => database.db.execute(sql`select 1 as one`)));
        expect(again).toHaveLength(4);
      } finally {
        faults.stop();
        await database.close();
        await proxy.close();
      }
    });

    test("several managers opening the same fresh database concurrently migrate it once", async () => {
      const store = await backend.fresh();
      const opened = await Promise.all([store.open(), store.open(), store.open()]);
      expect(opened.map((d) => d.kind)).toEqual(["postgres", "postgres", "postgres"]);
      const applied = await store.query<{ n: number }>("select count(*)::int as n from drizzle.__drizzle_migrations");
      expect(Number(applied[0]!.n)).toBe(MIGRATION_COUNT);
    });
  }

  test("finds its migrations whatever the working directory", async () => {
    const cwd = process.cwd();
    process.chdir(tmpdir());
    try {
      const d = await backend.open();
      expect(await d.db.select().from(toolCalls)).toEqual([]);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe("openDatabase with PGlite", () => {
  test("persists in <dataDir>/pglite and holds <dataDir>/ongrid.lock with our pid until closed", async () => {
    const dataDir = join(await tempDir(), "nested", "data");
    const d = await openDatabase({ dataDir });
    expect(d.kind).toBe("pglite");
    expect(existsSync(join(dataDir, "pglite"))).toBe(true);
    // Our pid, then who we are beyond it (boot id / start time), so a reused pid is not taken for us.
    expect(await readFile(join(dataDir, "ongrid.lock"), "utf8")).toBe(`${process.pid}\n${await processIdentity("self")}\n`);
    expect(await processIdentity("self")).toMatch(/^[0-9a-f-]{36}\/\d+$/);
    await d.close();
    expect(existsSync(join(dataDir, "ongrid.lock"))).toBe(false);
  });

  test("refuses a second open of the same data dir, naming the pid and what to do", async () => {
    const dataDir = await tempDir();
    const d = await openDatabase({ dataDir });
    try {
      const err = await openDatabase({ dataDir }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(OngridError);
      expect((err as OngridError).code).toBe("failed_precondition");
      expect((err as Error).message).toContain(`pid ${process.pid}`);
      expect((err as Error).message).toContain("--manager URL");
      expect((err as Error).message).toContain(join(dataDir, "ongrid.lock"));
    } finally {
      await d.close();
    }
    const again = await openDatabase({ dataDir }); // released on close
    await again.close();
  });

  test("refuses a data dir locked by another live process", async () => {
    const dataDir = await tempDir();
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    try {
      await writeFile(join(dataDir, "ongrid.lock"), `${other.pid}\n`);
      await expect(openDatabase({ dataDir })).rejects.toThrow(new RegExp(`pid ${other.pid}\\b.*stop that process, or use --manager URL`));
      expect((await readFile(join(dataDir, "ongrid.lock"), "utf8")).trim()).toBe(String(other.pid)); // left alone
    } finally {
      other.kill();
    }
  });

  test("takes over a stale lock whose process is gone", async () => {
    const dataDir = await tempDir();
    await writeFile(join(dataDir, "ongrid.lock"), `${await deadPid()}\n`);
    const d = await openDatabase({ dataDir });
    expect((await readFile(join(dataDir, "ongrid.lock"), "utf8")).split("\n")[0]).toBe(String(process.pid));
    await d.close();
  });

  test("a lock naming a live pid with that process's identity is held; with another identity the pid was reused, and it is taken over", async () => {
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    try {
      await new Promise((r) => other.once("spawn", r));
      const identity = await processIdentity(other.pid!);
      expect(identity).toMatch(/^[0-9a-f-]{36}\/\d+$/);
      const held = await tempDir();
      await writeFile(join(held, "ongrid.lock"), `${other.pid}\n${identity}\n`);
      await expect(openDatabase({ dataDir: held })).rejects.toThrow(new RegExp(`pid ${other.pid}\\b`));
      // The same live pid, but the lock was written by a process that started at another time (or in another boot).
      const [boot, start] = identity!.split("/");
      for (const reused of [`${boot}/${Number(start) - 1}`, `00000000-0000-0000-0000-000000000000/${start}`]) {
        const dataDir = await tempDir();
        await writeFile(join(dataDir, "ongrid.lock"), `${other.pid}\n${reused}\n`);
        const d = await openDatabase({ dataDir });
        expect((await readFile(join(dataDir, "ongrid.lock"), "utf8")).split("\n")[0]).toBe(String(process.pid));
        await d.close();
      }
    } finally {
      other.kill();
    }
  });
});

describe("openDatabase with a DATABASE_URL", () => {
  test("an unreachable server fails with a clear message and no password", async () => {
    const url = "postgres://ongrid:hunter2-s3cret@127.0.0.1:1/ongrid";
    const err = await openDatabase({ databaseUrl: url, dataDir: tmpdir() }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OngridError);
    const e = err as OngridError;
    expect(e.code).toBe("unavailable");
    expect(e.message).toMatch(/^cannot connect to DATABASE_URL postgres:\/\/ongrid@127\.0\.0\.1:1\/ongrid: .*ECONNREFUSED/);
    expect(`${e.message} ${e.hint} ${e.stack}`).not.toContain("hunter2");
  });

  test("describeUrl drops the password and the query string", () => {
    expect(describeUrl("postgres://u:secret@db.example:6543/prod?sslmode=require")).toBe("postgres://u@db.example:6543/prod");
    expect(describeUrl("not a url :secret@")).toBe("(not a valid URL)");
  });
});
