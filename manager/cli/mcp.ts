/** `ongrid mcp`: the manager's MCP endpoint over stdio, for clients that launch a command (docs/mcp.md). */
import { Command } from "commander";
import { OngridError } from "../../skill/errors.ts";
import { apiToken, cliConfig, managerUrlOrLocal, withCoreOptions, type CoreOptions } from "./common.ts";

/** Builds `ongrid mcp`. */
export function mcpCommand(): Command {
  return withCoreOptions(new Command("mcp").description("serve MCP over stdio, relayed to a running manager's /mcp with your API token (for MCP clients that launch a command)"))
    .option("--path <path>", "the manager's MCP path (mcp.path)", "")
    .action(async (opts: CoreOptions & { path: string }) => {
      const url = managerUrlOrLocal(opts);
      const token = apiToken(opts);
      if (!token) throw new OngridError("unauthenticated", "ongrid mcp needs your API token", "pass it in ONGRID_TOKEN, or in a file with --token-file FILE (or ONGRID_TOKEN_FILE)");
      const path = opts.path || cliConfig(opts).mcp.path;
      const { runStdioRelay } = await import("../mcp/stdio-relay.ts");
      await runStdioRelay({ endpoint: new URL(path, url), token, warn: (line) => process.stderr.write(`${line}\n`) });
    });
}
