/** A free TCP port on 127.0.0.1 (no test framework here: the benchmarks use it too). */
import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1 (bound and released; the caller binds it right away). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
