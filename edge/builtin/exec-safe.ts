/**
 * What the edge checks before it runs a safe exec plan: every file operand again after realpath
 * (a symlink under a read root that leads to /etc/shadow is refused like /etc/shadow), and the
 * unprivileged user it runs as when the edge is root (`safe_run_as`, default nobody).
 */
import { readFileSync } from "node:fs";
import { realpath } from "node:fs/promises";
import path from "node:path";
import { SkillError } from "../../skill/errors.ts";
import { shellPolicy, type SafePlan } from "../../skill/risk/index.ts";
import { listProblem, readProblem, SYSTEM_FILES } from "../../skill/risk/paths.ts";

/** The default of skills.exec.safe_run_as. */
export const DEFAULT_SAFE_RUN_AS = "nobody";

/** Why a plan's paths, resolved on this host, are not what the classifier allowed; undefined when they are. */
export async function checkSafePlan(plan: SafePlan): Promise<string | undefined> {
  const roots = await Promise.all(shellPolicy().readRoots.map((r) => real(r)));
  for (const p of plan.reads) {
    // The listed kernel files (/proc/self/stat resolves to the reader's own pid) are taken as listed.
    if (p.startsWith("/proc/") && SYSTEM_FILES.includes(p)) continue;
    const r = await real(p);
    const problem = r === p ? undefined : readProblem(r, [...shellPolicy().readRoots, ...roots]);
    if (problem) return `${p} resolves to ${r}: ${problem}`;
  }
  for (const p of plan.lists) {
    const r = await real(p);
    const problem = r === p ? undefined : listProblem(r);
    if (problem) return `${p} resolves to ${r}: ${problem}`;
  }
  return undefined;
}

/** A path's real path; for one that does not exist, its nearest existing parent's real path with the rest appended (a symlinked directory still counts). */
async function real(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    const parent = path.posix.dirname(p);
    return parent === p ? p : path.posix.join(await real(parent), path.posix.basename(p));
  }
}

/**
 * The user a safe command runs as: `setting` ("user" or "user:group"; "" to run as the edge's
 * own user) when the edge runs as root, else the edge's own user. The default user may be missing
 * on a host (then the edge's user, as before); a configured one that is missing is an error.
 */
export function resolveRunAs(setting: unknown): { runAs?: { uid: number; gid: number }; user: string; home: string } {
  const self = { user: safeUserName(), home: "/" };
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return self;
  const spec = setting === undefined ? DEFAULT_SAFE_RUN_AS : String(setting);
  if (spec === "") return self;
  const [name, group] = spec.split(":");
  const entry = lookup("/etc/passwd", name);
  if (!entry) {
    if (setting === undefined) return self;
    throw new SkillError("not_configured", `skills.exec.safe_run_as names user "${name}", which this host does not have`, "Create the user, or set --exec-safe-run-as to an existing unprivileged user (\"\" runs read-only commands as the edge's own user).");
  }
  let gid = Number(entry[3]);
  if (group) {
    const g = lookup("/etc/group", group);
    if (!g) throw new SkillError("not_configured", `skills.exec.safe_run_as names group "${group}", which this host does not have`, "Name an existing group after the colon, e.g. nobody:systemd-journal.");
    gid = Number(g[2]);
  }
  return { runAs: { uid: Number(entry[2]), gid }, user: spec, home: "/" };
}

function safeUserName(): string {
  try {
    return (process.getuid?.() ?? -1) === 0 ? "root" : String(process.env.USER ?? process.getuid?.() ?? "");
  } catch {
    return "";
  }
}

/** The fields of the line of a passwd/group file whose first field is `name`. */
function lookup(file: string, name: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    const f = line.split(":");
    if (f[0] === name && f.length >= 4 && /^\d+$/.test(f[2])) return f;
  }
  return undefined;
}
