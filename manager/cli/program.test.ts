import { Help } from "commander";
import { describe, expect, test } from "vitest";
import { COMMANDS, buildProgram } from "./program.ts";

describe("the command table", () => {
  test("lists every command as the loaded command describes itself, so `ongrid --help` loads none of them", async () => {
    const help = new Help();
    for (const entry of COMMANDS) {
      const cmd = await entry.load();
      expect(cmd.name()).toBe(entry.name);
      expect(cmd.description()).toBe(entry.description);
      expect(help.subcommandTerm(cmd)).toBe(entry.term);
    }
  });

  test("loads only the command argv names (after `help` too); the others are names and descriptions", async () => {
    const loaded = (p: Awaited<ReturnType<typeof buildProgram>>) => p.commands.filter((c) => c.commands.length || c.options.length).map((c) => c.name());
    expect(loaded(await buildProgram(["node", "ongrid", "--version"]))).toEqual([]);
    expect(loaded(await buildProgram(["node", "ongrid", "skills", "list", "--manager", "http://x"]))).toEqual(["skills"]);
    expect(loaded(await buildProgram(["node", "ongrid", "help", "audit"]))).toEqual(["audit"]);
    const all = await buildProgram("all");
    expect(loaded(all)).toEqual(COMMANDS.map((c) => c.name));
  });
});
