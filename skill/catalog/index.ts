/**
 * The builtin host skills' metadata (D1–D5), one file each: what the manager trusts for a key an
 * edge offers (it never takes an edge's word for a builtin's class, risk, schema or description),
 * what the CLI lists and classifies offline, and what the edge spreads into its own definitions
 * beside their executors (edge/builtin/). Nothing here runs a host command.
 */
import type { SkillDefinition } from "../types.ts";
import { SkillError } from "../errors.ts";
import { EXEC } from "./exec.ts";
import { HOST_FILES } from "./host-files.ts";
import { HOST_LOAD } from "./host-load.ts";
import { HOST_NETNS_INSPECT } from "./host-netns-inspect.ts";
import { HOST_PROCESSES } from "./host-processes.ts";
import { HOST_SOCKETS } from "./host-sockets.ts";
import { PROBE_DNS } from "./probe-dns.ts";
import { PROBE_HTTP } from "./probe-http.ts";
import { PROBE_TCP } from "./probe-tcp.ts";
import { READ_JOURNAL } from "./read-journal.ts";
import { RESTART_SERVICE } from "./restart-service.ts";
import { TAIL_FILE } from "./tail-file.ts";

/** Every builtin host skill's metadata, in the order the edge registers them. */
export const HOST_SKILL_CATALOG = [PROBE_HTTP, PROBE_DNS, PROBE_TCP, TAIL_FILE, READ_JOURNAL, HOST_NETNS_INSPECT, HOST_LOAD, HOST_PROCESSES, HOST_SOCKETS, HOST_FILES, RESTART_SERVICE, EXEC] as const;

/**
 * The catalog as skill definitions the manager can register and gate: a host skill runs on an
 * edge, down its tunnel, so the executor here only refuses (reaching it would be a bug).
 */
export function hostSkillDefinitions(): SkillDefinition[] {
  return HOST_SKILL_CATALOG.map(
    (meta) =>
      ({
        ...meta,
        async execute() {
          throw new SkillError("internal", `${meta.key} is a host skill: it runs on an edge, not in the manager`, "Call it with an edge_id.");
        },
      }) as unknown as SkillDefinition,
  );
}
