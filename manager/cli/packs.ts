/** `ongrid packs rescan|check`: reload a running manager's skill packs, or check pack directories before installing them. */
import { Command } from "commander";
import { OngridError } from "../../skill/errors.ts";
import { createPackSet } from "../../skill/pack/loader.ts";
import { formatProblem } from "../../skill/pack/manifest.ts";
import { createRegistry } from "../../skill/registry.ts";
import { pino } from "pino";
import { managerUrlOrLocal, rpcClients, withCoreOptions, type CoreOptions } from "./common.ts";

/** Builds the `packs` command group. */
export function packsCommand(): Command {
  const cmd = new Command("packs").description("subprocess skill packs (skill.json + executable)");

  withCoreOptions(cmd.command("rescan").description("make the running manager read its pack directories again (packs.dirs)"))
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions) => {
      const url = managerUrlOrLocal(opts);
      const r = await rpcClients(url, opts).skills.rescanPacks({});
      if (opts.json) {
        console.log(JSON.stringify({ added: r.added, changed: r.changed, removed: r.removed, loaded: r.loaded, problems: r.problems }));
      } else {
        console.log(`added: ${r.added.join(", ") || "-"}\nchanged: ${r.changed.join(", ") || "-"}\nremoved: ${r.removed.join(", ") || "-"}\nloaded (${r.loaded.length}): ${r.loaded.join(", ") || "-"}`);
        for (const p of r.problems) console.error(`refused: ${p}`);
      }
      if (r.problems.length) process.exitCode = 1;
    });

  cmd
    .command("check")
    .description("check pack directories (each a pack, or a directory of packs) without a manager; exit 1 on any problem")
    .argument("<dir...>")
    .option("--scope <scope>", "load them as host (edge) or manager skills", "host")
    .option("--json", "print JSON")
    .action((dirs: string[], opts: { scope: string; json?: boolean }) => {
      if (opts.scope !== "host" && opts.scope !== "manager") throw new OngridError("invalid_argument", `--scope: must be host or manager, got "${opts.scope}"`);
      const registry = createRegistry({ log: pino({ level: "silent" }) });
      const r = createPackSet({ dirs, scope: opts.scope, registry, log: pino({ level: "silent" }) }).rescan();
      if (opts.json) console.log(JSON.stringify({ loaded: r.loaded, problems: r.problems }));
      else {
        for (const key of r.loaded) console.log(`ok: ${key} (${registry.get(key)!.meta.class})`);
        for (const p of r.problems) console.error(`refused: ${formatProblem(p)}`);
      }
      if (r.problems.length) process.exitCode = 1;
    });
  return cmd;
}
