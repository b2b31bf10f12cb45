/** `ongrid manager`: the manager server (Connect, gRPC and gRPC-Web on one port), optionally with a local edge. */
import { Command } from "commander";
import type { OngridError } from "../../skill/errors.ts";
import { DEFAULT_CONSOLE_DIR, consoleBuilt } from "../http/console.ts";
import { loadConfig, configReference } from "../config/load.ts";
import { startManager } from "../main.ts";
import { splitDirs, MANAGER_VERSION } from "../core.ts";
import { startLocalEdge } from "../fleet/local-edge.ts";

/** Builds the `manager` command. */
export function managerCommand(): Command {
  return new Command("manager")
    .description("run the manager: Connect, gRPC and gRPC-Web on one port, audit in PostgreSQL (PGlite when DATABASE_URL is unset)")
    .option("--config <file>", "config file (YAML); also ONGRID_CONFIG")
    .option("--host <addr>", "listen address (server.host)")
    .option("--port <n>", "listen port (server.port)")
    .option("--data <dir>", "data directory for the embedded database (data_dir)")
    .option("--local-edge", "also run an edge agent for this host inside the manager (what `npm start` does)")
    .option("--local-edge-root <dir>", "directory the local edge's tail_file/host_files may read (repeatable; default /var/log)", (v: string, acc: string[]) => [...acc, v], [])
    .option("--local-edge-packs <dirs>", "pack directories of the local edge, ':'-separated (packs.local_edge_dirs); `npm start` passes skill-packs")
    .option("--print-config-reference", "print every config key with its default and environment variable, then exit")
    .action(async (opts) => {
      if (opts.printConfigReference) {
        for (const r of configReference()) console.log(`${r.key}\t${JSON.stringify(r.default)}\t${r.env}\t${r.description}`);
        return;
      }
      const config = loadConfig({
        file: opts.config,
        overrides: { "server.host": opts.host, "server.port": opts.port, data_dir: opts.data, "packs.local_edge_dirs": opts.localEdgePacks },
      });
      const manager = await startManager(config);
      console.log(`ongrid manager ${MANAGER_VERSION} listening on ${manager.url} (database: ${manager.database.kind}${manager.database.kind === "pglite" ? ` in ${config.data_dir}` : ""})`);
      if (manager.bootstrapToken) {
        console.log(`first start: created user "admin" (role admin). Its API token, shown only this once (keep it; \`ongrid tokens create --user admin\` on this host makes another):`);
        console.log(manager.bootstrapToken);
      }
      let localEdge: { id: string; stop(): void } | undefined;
      if (opts.localEdge) {
        localEdge = await startLocalEdge({
          url: manager.url,
          edges: manager.edges,
          log: manager.log,
          allowedRoots: opts.localEdgeRoot.length ? opts.localEdgeRoot : ["/var/log"],
          outputCapBytes: config.skills.output_cap_bytes,
          tlsCert: config.server.tls_cert || undefined,
          packDirs: splitDirs(config.packs.local_edge_dirs),
          execSafeRunAs: config.skills.exec?.safe_run_as,
        }).catch((err) => {
          console.error(`ongrid: local edge not started: ${(err as Error).message}${(err as OngridError).hint ? `\nhint: ${(err as OngridError).hint}` : ""}`);
          return undefined;
        });
        if (localEdge) console.log(`local edge "${localEdge.id}" started; try: npx ongrid skills run host_load --edge ${localEdge.id} --manager ${manager.url}`);
      }
      const consoleDir = config.server.console_dir || DEFAULT_CONSOLE_DIR;
      if (consoleBuilt(consoleDir)) console.log(`web console: ${manager.url}/ (log in with an API token)`);
      else console.log(`web console: not built (no ${consoleDir}/index.html); run \`npm run build:web\` (npm start does it) to serve it at ${manager.url}/`);
      console.log(
        `try: curl -s -X POST -H 'content-type: application/json' -H "authorization: Bearer ${manager.bootstrapToken ?? "$ONGRID_TOKEN"}" -d '{}' ${manager.url}/ongrid.v1.SkillService/ListSkills`,
      );
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        manager.log.info({ signal }, "shutting down");
        localEdge?.stop();
        manager.close().then(
          () => process.exit(0),
          (err) => {
            console.error(`ongrid: shutdown failed: ${(err as Error).message}`);
            process.exit(1);
          },
        );
      };
      process.on("SIGHUP", () => {
        try {
          const p = manager.playbooks.reload();
          manager.log.info({ loaded: p.loaded.length, problems: p.problems.length }, "SIGHUP: playbooks reloaded");
        } catch (err) {
          manager.log.error({ err: (err as Error).message }, "SIGHUP: playbook reload refused; the previous set stays");
        }
        if (!manager.packs) return manager.log.info("SIGHUP: no pack directories configured (packs.dirs)");
        const r = manager.packs.rescan();
        manager.log.info({ loaded: r.loaded.length, problems: r.problems.length }, "SIGHUP: skill packs rescanned");
      });
      process.on("SIGINT", () => stop("SIGINT"));
      process.on("SIGTERM", () => stop("SIGTERM"));
    });
}
