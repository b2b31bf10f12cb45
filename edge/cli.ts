/** Entry point of the `ongrid-edge` binary. */
import { runEdge } from "./main.ts";

await runEdge(process.argv);
