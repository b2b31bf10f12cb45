/** The inspector's CPU profiler around a piece of work in this process, for the profiling aids (profile-*.ts). */
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";

/** Runs `work`; with `file` set, under the CPU profiler (200 µs sampling), writing the .cpuprofile there. */
export async function profiled<T>(file: string | undefined, work: () => Promise<T>): Promise<T> {
  if (!file) return work();
  const s = new Session();
  s.connect();
  await s.post("Profiler.enable");
  await s.post("Profiler.setSamplingInterval", { interval: 200 });
  await s.post("Profiler.start");
  try {
    return await work();
  } finally {
    const { profile } = await s.post("Profiler.stop");
    writeFileSync(file, JSON.stringify(profile));
    s.disconnect();
  }
}
