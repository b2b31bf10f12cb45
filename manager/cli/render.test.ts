/** The CLI's result rendering: text blocks for command output, failures as failures, never `null`. */
import { describe, expect, test } from "vitest";
import { renderOutput, renderStatus } from "./render.ts";

describe("renderOutput", () => {
  test("stdout and stderr become text blocks; the other fields one per line", () => {
    const lines = renderOutput({ exit_code: 1, ran: "grep x f", stdout: "a\nb\n", stderr: "", argv: ["grep", "x"] });
    expect(lines).toEqual(["exit_code: 1", "ran: grep x f", "argv:", "  [", '    "grep",', '    "x"', "  ]", "── stdout ──", "a", "b", "── stderr ──", "(empty)"]);
  });

  test("any multi-line string field is a block, whatever its name", () => {
    expect(renderOutput({ lines: "one\ntwo" })).toEqual(["── lines ──", "one", "two"]);
  });

  test("no output prints nothing, not null", () => {
    expect(renderOutput(null)).toEqual([]);
    expect(renderOutput(undefined)).toEqual([]);
  });

  test("a plain string prints as written; arrays as JSON", () => {
    expect(renderOutput("x\ny\n")).toEqual(["x", "y"]);
    expect(renderOutput([1, 2])).toEqual(["[", "  1,", "  2", "]"]);
  });
});

describe("renderStatus", () => {
  test("a failure says FAILED with its code, message and hint", () => {
    const s = renderStatus("exec", { success: false, edge_id: "web-1", duration_ms: "12", error: { code: "exit_status", message: "the command exited with status 1", hint: "read stderr" } }, "7");
    expect(s).toEqual(["FAILED: exec on web-1: exit_status: the command exited with status 1 (12 ms, audit row 7)", "hint: read stderr"]);
  });

  test("a success says ok", () => {
    expect(renderStatus("host_load", { success: true, duration_ms: 3, truncated: true }, "9")).toEqual(["ok: host_load (3 ms, output truncated, audit row 9)"]);
  });
});
