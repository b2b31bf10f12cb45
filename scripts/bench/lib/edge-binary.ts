/** The compiled edge agent: build it, time its start until the manager reports it online, and read its idle RSS. */
import { execFileSync, spawn } from "node:child_process";
import { statSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@connectrpc/connect";
import type { EdgeService } from "../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { alive, sampleRss, sleep, start, stop } from "./proc.ts";
import { median } from "./stats.ts";

/** Builds the binary with scripts/build-edge.mjs; returns its size in MiB. */
export function buildEdge(root: string, out: string): number {
  execFileSync(process.execPath, [join(root, "scripts", "build-edge.mjs"), out], { cwd: root, stdio: "pipe" });
  return statSync(out).size / 1048576;
}

/** Milliseconds from spawning a program to its exit: how long it takes to start (and end) doing nothing. */
export function spawnToExitMs(cmd: string, args: string[] = []): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: "ignore" });
    p.once("exit", () => resolve(performance.now() - t0));
    p.once("error", reject);
  });
}

/** Milliseconds from spawning `node -e 0` to its exit: how long any Node process takes to start. */
export function nodeStartMs(): Promise<number> {
  return spawnToExitMs(process.execPath, ["-e", "0"]);
}

/** One start of the binary: time to "online" (GetEdge polled every 10 ms) and the median VmRSS (KiB) 3 s after. */
export async function startEdgeOnce(bin: string, url: string, id: string, token: string, edges: Client<typeof EdgeService>): Promise<{ startMs: number; idleRssKb: number }> {
  const t0 = performance.now();
  const edge = start(`edge ${id}`, bin, ["--manager", url, "--token", token, "--id", id, "--log-level", "warn"], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" },
  });
  try {
    for (;;) {
      const res = await edges.getEdge({ id });
      if (res.edge?.online) break;
      if (!alive(edge)) throw new Error(`edge ${id} exited before connecting; output:\n${edge.stdout()}${edge.stderr()}`);
      if (performance.now() - t0 > 30_000) throw new Error(`edge ${id} was not online after 30 s; output:\n${edge.stdout()}${edge.stderr()}`);
      await sleep(10);
    }
    const startMs = performance.now() - t0;
    const idleRssKb = median(await sampleRss(edge.pid, 3000, 3, 250));
    if (!alive(edge)) throw new Error(`edge ${id} exited while idle; output:\n${edge.stdout()}${edge.stderr()}`);
    return { startMs, idleRssKb };
  } finally {
    await stop(edge);
  }
}
