/** Destroyers of files (A6): recursive deletes, deleting or overwriting the system's paths, recursive or system-wide mode and owner changes. */
import { anyDynamic, firstSystemPath, hasLong, hasShort, operands, type DangerRule } from "./common.ts";

const WRITERS_TO_LAST = new Set(["cp", "mv", "install", "ln", "rsync", "scp"]);

/** File destroyers. */
export const fileRule: DangerRule = (call) => {
  const { name } = call;
  if (name === "rm" || name === "unlink" || name === "rmdir") {
    if (name === "rm" && (hasShort(call, "rR") || hasLong(call, "recursive"))) return "rm deletes recursively";
    if (hasLong(call, "no-preserve-root")) return `${name} --no-preserve-root`;
    const why = firstSystemPath(operands(call));
    return why ? `${name} deletes: ${why}` : undefined;
  }
  if (name === "chmod" || name === "chown" || name === "chgrp" || name === "chattr" || name === "setfacl" || name === "chcon" || name === "setfattr") {
    if (hasShort(call, "R") || hasLong(call, "recursive")) return `${name} changes modes or owners recursively`;
    const why = firstSystemPath(operands(call).slice(name === "chattr" || name === "setfacl" || name === "chcon" ? 0 : 1));
    return why ? `${name} changes ${why}` : undefined;
  }
  if (WRITERS_TO_LAST.has(name)) {
    const ops = operands(call);
    if (anyDynamic(call)) return `${name} with a target only known at run time`;
    const target = hasShort(call, "t") || hasLong(call, "target-directory") ? undefined : ops[ops.length - 1];
    const why = target ? firstSystemPath([target]) : "a target directory given as an option";
    if (why) return `${name} overwrites ${why}`;
    if (name === "mv") {
      const src = firstSystemPath(ops.slice(0, -1));
      if (src) return `mv moves ${src}`;
    }
    return undefined;
  }
  if (name === "tee" || name === "sponge") {
    const why = firstSystemPath(operands(call));
    return why ? `${name} writes ${why}` : undefined;
  }
  if (name === "sed" || name === "perl") {
    if ((hasShort(call, "i") || hasLong(call, "in-place")) && firstSystemPath(operands(call).slice(1))) return `${name} edits ${firstSystemPath(operands(call).slice(1))} in place`;
  }
  return undefined;
};
