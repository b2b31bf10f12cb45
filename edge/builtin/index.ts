/** The edge agent's builtin host skills: one file each, listed here once. */
import type { SkillDefinition } from "../../skill/types.ts";
import exec from "./exec.ts";
import hostFiles from "./host-files.ts";
import hostLoad from "./host-load.ts";
import hostNetnsInspect from "./host-netns-inspect.ts";
import hostProcesses from "./host-processes.ts";
import hostSockets from "./host-sockets.ts";
import probeDns from "./probe-dns.ts";
import probeHttp from "./probe-http.ts";
import probeTcp from "./probe-tcp.ts";
import readJournal from "./read-journal.ts";
import restartService from "./restart-service.ts";
import tailFile from "./tail-file.ts";

/** Every edge builtin (D1–D5, K5), registered when the agent starts. */
export const EDGE_BUILTINS: SkillDefinition<any>[] = [
  probeHttp,
  probeDns,
  probeTcp,
  tailFile,
  readJournal,
  hostNetnsInspect,
  hostLoad,
  hostProcesses,
  hostSockets,
  hostFiles,
  restartService,
  exec,
];
