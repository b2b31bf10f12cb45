/** The inspector's CPU or heap profiler around a piece of work in this process, for the profiling aids (profile-*.ts). */
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";

/**
 * Runs `work`; with `file` set, under the CPU profiler (200 µs sampling), writing the .cpuprofile
 * there; a file named *.heapprofile gets the sampling heap profiler instead, counting every
 * allocation made during the work (those collected since included), for finding what the GC is
 * busy with.
 */
export async function profiled<T>(file: string | undefined, work: () => Promise<T>): Promise<T> {
  if (!file) return work();
  const heap = file.endsWith(".heapprofile");
  const s = new Session();
  s.connect();
  if (heap) {
    await s.post("HeapProfiler.enable");
    await s.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  } else {
    await s.post("Profiler.enable");
    await s.post("Profiler.setSamplingInterval", { interval: 200 });
    await s.post("Profiler.start");
  }
  try {
    return await work();
  } finally {
    const { profile } = heap ? await s.post("HeapProfiler.stopSampling") : await s.post("Profiler.stop");
    writeFileSync(file, JSON.stringify(profile));
    s.disconnect();
  }
}
