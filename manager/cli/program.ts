/** The `ongrid` command line: a table of commands, each loaded only when it runs, so `ongrid --version` loads none. */
import { Command, CommanderError, Help } from "commander";
import { OngridError } from "../../skill/errors.ts";
import { MANAGER_VERSION } from "../version.ts";

/** One top-level command: what `ongrid --help` shows of it, and how to load it. */
interface CommandEntry {
  name: string;
  /** As the help lists it (name, [options], arguments). */
  term: string;
  description: string;
  load: () => Promise<Command>;
}

/** Every top-level command. Term and description must be those of the loaded command (cli/program.test.ts checks). */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "manager",
    term: "manager [options]",
    description: "run the manager: Connect, gRPC and gRPC-Web on one port, audit in PostgreSQL (PGlite when DATABASE_URL is unset)",
    load: async () => (await import("./manager.ts")).managerCommand(),
  },
  { name: "skills", term: "skills", description: "list, inspect, run and lint skills", load: async () => (await import("./skills.ts")).skillsCommand() },
  { name: "audit", term: "audit", description: "query, verify and export the tool-call audit log", load: async () => (await import("./audit.ts")).auditCommand() },
  { name: "edge", term: "edge", description: "enroll, revoke and list edge agents", load: async () => (await import("./edge.ts")).edgeCommand() },
  { name: "packs", term: "packs", description: "subprocess skill packs (skill.json + executable)", load: async () => (await import("./packs.ts")).packsCommand() },
  {
    name: "credentials",
    term: "credentials",
    description: "store, list and delete the credentials skills use (params name them; values are injected at execution)",
    load: async () => (await import("./credentials.ts")).credentialsCommand(),
  },
  { name: "sop", term: "sop", description: "signed SOP documents, required by dangerous skill calls (see docs/sop.md)", load: async () => (await import("./sop.ts")).sopCommand() },
  { name: "users", term: "users", description: "users and their roles (viewer, operator, approver, admin) and reach over edges", load: async () => (await import("./users.ts")).usersCommand() },
  { name: "tokens", term: "tokens", description: "API tokens (stored hashed; shown once when created)", load: async () => (await import("./users.ts")).tokensCommand() },
  { name: "approvals", term: "approvals", description: "list, approve, deny and watch calls waiting for approval", load: async () => (await import("./approvals.ts")).approvalsCommand() },
  { name: "playbooks", term: "playbooks", description: "SKILL.md playbooks: how to diagnose a class of incident and which tools to use", load: async () => (await import("./playbooks.ts")).playbooksCommand() },
  {
    name: "route",
    term: "route [options] <text...>",
    description: "pick the playbook for an incident description (model when configured, else the ranking: triggers, then BM25 over the playbooks); the decision is stored",
    load: async () => (await import("./playbooks.ts")).routeCommand(),
  },
  {
    name: "mcp",
    term: "mcp [options]",
    description: "serve MCP over stdio, relayed to a running manager's /mcp with your API token (for MCP clients that launch a command)",
    load: async () => (await import("./mcp.ts")).mcpCommand(),
  },
  {
    name: "eval",
    term: "eval [options]",
    description: "run the playbooks' evaluation cases against recorded fleet state (a simulated edge) and score routing, evidence, findings, unsupported claims, steps, tokens and time",
    load: async () => (await import("./eval.ts")).evalCommand(),
  },
  {
    name: "diagnose",
    term: "diagnose [options] <text...>",
    description: "diagnose an incident on a running manager: route, plan, gated tool calls on an edge, a report (fallback steps when no model is configured)",
    load: async () => (await import("./diagnose.ts")).diagnoseCommand(),
  },
];

/** The command argv names: the first operand (global options take no value), or the one after `help`. */
function commandNamed(argv: string[]): string | undefined {
  const operands = argv.slice(2).filter((a) => !a.startsWith("-"));
  return operands[0] === "help" ? operands[1] : operands[0];
}

/**
 * Builds the program: the command argv names (or every command, with `all`) is loaded in full, the
 * others are listed by name and description only. Exported for tests.
 */
export async function buildProgram(argv: string[] | "all"): Promise<Command> {
  const program = new Command("ongrid")
    .description("ongrid: a control plane for operations skills on a fleet of hosts")
    .version(MANAGER_VERSION)
    .showHelpAfterError()
    .exitOverride();
  const wanted = argv === "all" ? undefined : commandNamed(argv);
  const terms = new Map<Command, string>();
  for (const entry of COMMANDS) {
    if (argv === "all" || entry.name === wanted) {
      program.addCommand(await entry.load());
    } else {
      const stub = new Command(entry.name).description(entry.description);
      terms.set(stub, entry.term);
      program.addCommand(stub);
    }
  }
  const help = new Help();
  program.configureHelp({ subcommandTerm: (cmd) => terms.get(cmd) ?? help.subcommandTerm(cmd) });
  for (const c of program.commands) {
    c.exitOverride();
    for (const sub of c.commands) sub.exitOverride();
  }
  return program;
}

/** Runs the CLI; errors become one clear line on stderr and exit code 2 (usage/config) or 1. */
export async function runCli(argv: string[]): Promise<void> {
  try {
    await (await buildProgram(argv)).parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    if (err instanceof OngridError) {
      console.error(`ongrid: ${err.message}${err.hint ? `\nhint: ${err.hint}` : ""}`);
      process.exitCode = err.code === "invalid_argument" ? 2 : 1;
      return;
    }
    // An error from a running manager: loaded only then (every RPC command has loaded it already).
    const { Code, ConnectError } = await import("@connectrpc/connect");
    if (err instanceof ConnectError) {
      const code = Code[err.code].replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase());
      console.error(`ongrid: manager answered ${code}: ${err.rawMessage}`);
      process.exitCode = err.code === Code.InvalidArgument ? 2 : 1;
      return;
    }
    console.error(`ongrid: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
