/**
 * The approver's view of a command line (G2/G3): the command with secret values masked must show
 * the same commands, operators and redirections as the command that runs, and classify the same.
 * A line where masking would hide structure (a "secret" that swallows a command name, a `;`, a
 * redirection) is refused before any approval request is made.
 */
import { redactString } from "../redact.ts";
import { classifyCommand } from "./index.ts";
import { parseLine, type ParsedLine } from "./shell.ts";

/** Why the masked view of `command` would not show what runs, or undefined when it does. */
export function displayProblem(command: string, cwd?: string): string | undefined {
  const shown = redactString(command);
  if (shown === command) return undefined;
  const a = parseLine(command);
  const b = parseLine(shown);
  const diff = structureDiff(a, b);
  if (diff) return `with its secret-looking values masked, the command would show ${diff}: an approver would not see what runs`;
  const before = classifyCommand(command, { cwd }).class;
  const after = classifyCommand(shown, { cwd }).class;
  if (before !== after) return `with its secret-looking values masked, the command would be classified ${after} instead of ${before}: an approver would not see what runs`;
  return undefined;
}

function structureDiff(a: ParsedLine, b: ParsedLine): string | undefined {
  if ((a.error === undefined) !== (b.error === undefined)) return a.error === undefined ? "a line that no longer parses" : "a line that parses where the real one does not";
  if (a.commands.length !== b.commands.length) return `${b.commands.length} commands instead of ${a.commands.length}`;
  for (let i = 0; i < a.commands.length; i++) {
    const x = a.commands[i];
    const y = b.commands[i];
    if (x.words.length !== y.words.length) return `command ${i + 1} with ${y.words.length} words instead of ${x.words.length}`;
    if ((x.words[0]?.value ?? "") !== (y.words[0]?.value ?? "")) return `command ${i + 1} as "${y.words[0]?.value ?? ""}" instead of its real name`;
    if (x.assigns.join(",") !== y.assigns.join(",")) return `command ${i + 1} with other variable assignments`;
  }
  if (a.redirects.map((r) => r.op).join(" ") !== b.redirects.map((r) => r.op).join(" ")) return "other redirections";
  if (a.functions.map((f) => f.name).join(",") !== b.functions.map((f) => f.name).join(",")) return "other function definitions";
  if ((a.syntax ?? "") !== (b.syntax ?? "")) return "other shell syntax";
  return undefined;
}
