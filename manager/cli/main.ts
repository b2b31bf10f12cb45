/** Entry point of the `ongrid` CLI. */
import { runCli } from "./program.ts";

await runCli(process.argv);
