/** Defines `ongrid skills classify`; its work (classify.ts, with the shell classifier) loads only when it runs. */
import type { Command } from "commander";

/** Adds `classify` to the `skills` command group. */
export function addClassifyCommand(cmd: Command): void {
  cmd
    .command("classify")
    .description("print the effective class of a call without running it (offline, the gate's own code)")
    .argument("<key>")
    .option("-p, --param <name=value>", "a parameter (repeatable)", (v: string, acc: string[]) => [...acc, v], [])
    .option("--params <json>", "all parameters as one JSON object")
    .option("--batch <file>", "one params JSON object per line (- for stdin); prints one JSON line per input, in order")
    .option("--pack-dir <dir>", "also load the packs in this directory (repeatable)", (v: string, acc: string[]) => [...acc, v], [])
    .option("--read-root <dir>", "a read root for exec (repeatable; default: skills.exec.read_roots' default, /var/log)", (v: string, acc: string[]) => [...acc, v], [])
    .option("--exec-allow-file <file>", "an exec allowlist file, as skills.exec.allow_file (default: ONGRID_EXEC_ALLOW_FILE)", process.env.ONGRID_EXEC_ALLOW_FILE)
    .option("--json", "print JSON")
    .action(async (key: string, opts) => (await import("./classify.ts")).runClassify(key, opts));
}
