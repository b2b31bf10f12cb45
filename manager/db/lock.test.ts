import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { acquireLock, lockFileUntrusted, lockHolder, processIdentity } from "./lock.ts";

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "ongrid-lock-"));
  dirs.push(d);
  return d;
}

/** A live process other than this one (the lock's holder as another process sees it). */
async function otherProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  children.push(child);
  await new Promise((r) => child.once("spawn", r));
  return child;
}

describe("the URL in the lock file", () => {
  test("advertise writes the holder's URL after its pid and identity; release still removes the file", async () => {
    const file = join(await tempDir(), "ongrid.lock");
    const lock = await acquireLock(file, "the data directory");
    await lock.advertise("http://127.0.0.1:7070");
    expect(await readFile(file, "utf8")).toBe(`${process.pid}\n${(await processIdentity("self")) ?? ""}\nurl http://127.0.0.1:7070\n`);
    await lock.release();
    expect(existsSync(file)).toBe(false);
  });

  test("lockHolder reads a live holder and its URL; a dead or reused pid, our own, garbage or no file is no holder", async () => {
    const dir = await tempDir();
    const file = join(dir, "ongrid.lock");
    expect(lockHolder(file)).toBeUndefined();
    const other = await otherProcess();
    const identity = (await processIdentity(other.pid!)) ?? "";
    await writeFile(file, `${other.pid}\n${identity}\nurl http://127.0.0.1:7071\n`);
    expect(lockHolder(file)).toEqual({ pid: other.pid, url: "http://127.0.0.1:7071" });
    // the older form (a pid alone) and a lock not yet advertised: held, no URL
    await writeFile(file, `${other.pid}\n`);
    expect(lockHolder(file)).toEqual({ pid: other.pid, url: undefined });
    // a URL that is not http(s) is not used
    await writeFile(file, `${other.pid}\n${identity}\nurl file:///etc/passwd\n`);
    expect(lockHolder(file)).toEqual({ pid: other.pid, url: undefined });
    if (identity) {
      await writeFile(file, `${other.pid}\nanother-boot/1\nurl http://127.0.0.1:7071\n`);
      expect(lockHolder(file)).toBeUndefined();
    }
    await writeFile(file, `${process.pid}\n\nurl http://127.0.0.1:7071\n`);
    expect(lockHolder(file)).toBeUndefined();
    await writeFile(file, "not a pid\n");
    expect(lockHolder(file)).toBeUndefined();
    other.kill("SIGKILL");
    await new Promise((r) => other.once("exit", r));
    await writeFile(file, `${other.pid}\n${identity}\nurl http://127.0.0.1:7071\n`);
    expect(lockHolder(file)).toBeUndefined();
  });

  test("a second process trying the lock is told the holder's URL", async () => {
    const dir = await tempDir();
    const file = join(dir, "ongrid.lock");
    const other = await otherProcess();
    await writeFile(file, `${other.pid}\n${(await processIdentity(other.pid!)) ?? ""}\nurl http://127.0.0.1:7072\n`);
    await expect(acquireLock(file, `the data directory ${dir}`)).rejects.toThrow(/is held by the ongrid manager at http:\/\/127\.0\.0\.1:7072 \(pid \d+, lock file .*\), and this cannot be done through it: stop that manager first/);
  });

  test("a lock file another user could have written is not followed: its URL would receive the CLI's token", async () => {
    const file = join(await tempDir(), "ongrid.lock");
    const other = await otherProcess();
    await writeFile(file, `${other.pid}\n${(await processIdentity(other.pid!)) ?? ""}\nurl http://127.0.0.1:7073\n`);
    await chmod(file, 0o666);
    expect(lockHolder(file)).toMatchObject({ pid: other.pid, url: undefined, untrusted: expect.stringMatching(/writable by every user \(mode 666\)/) });
    await chmod(file, 0o664);
    expect(lockHolder(file)?.untrusted).toMatch(/writable by its group/);
    await chmod(file, 0o644);
    expect(lockHolder(file)).toEqual({ pid: other.pid, url: "http://127.0.0.1:7073" });
    // Owned by someone else (the rule itself: a test cannot chown without a second account).
    expect(lockFileUntrusted({ uid: 1234, mode: 0o100644 }, 1000)).toMatch(/belongs to uid 1234, not to you \(uid 1000\) or root/);
    expect(lockFileUntrusted({ uid: 0, mode: 0o100644 }, 1000)).toBeUndefined();
    expect(lockFileUntrusted({ uid: 1000, mode: 0o100600 }, 1000)).toBeUndefined();
  });
});
