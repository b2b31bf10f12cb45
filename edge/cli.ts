/** Entry point of the `ongrid-edge` binary. */
import { interpreterOnly } from "./jit.ts";

interpreterOnly();
const { runEdge } = await import("./main.ts");
await runEdge(process.argv);
