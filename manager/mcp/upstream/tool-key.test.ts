import { describe, expect, it } from "vitest";
import { toolKey } from "./tool-key.ts";

describe("toolKey", () => {
  it("maps MCP tool names to lower_snake keys under mcp_<upstream>_", () => {
    const key = (t: string) => (toolKey("everything", t) as { key: string }).key;
    expect(key("echo")).toBe("mcp_everything_echo");
    expect(key("trigger-long-running-operation")).toBe("mcp_everything_trigger_long_running_operation");
    expect(key("getTinyImage")).toBe("mcp_everything_get_tiny_image");
    expect(key("HTTPServerStatus")).toBe("mcp_everything_http_server_status");
    expect(key("files/read.v2")).toBe("mcp_everything_files_read_v2");
    expect(key("__Get  Data__")).toBe("mcp_everything_get_data");
    expect(key("2fa_reset")).toBe("mcp_everything_2fa_reset");
  });

  it("says why a name cannot be a key: empty, too long, characters outside the MCP set, nothing left", () => {
    const problem = (t: unknown) => (toolKey("up", t) as { problem?: string }).problem;
    expect(problem("")).toBe("it has no name");
    expect(problem(7)).toBe("it has no name");
    expect(problem("a".repeat(129))).toBe("its name is 129 characters long (at most 128)");
    expect(problem("a".repeat(65))).toBe("its name makes a key part of 65 characters (at most 64)");
    expect(problem("名前")).toMatch(/its name has characters other than/);
    expect(problem("rm;reboot")).toMatch(/its name has characters other than/);
    expect(problem("---")).toBe("its name has no letter or digit");
    expect(toolKey("up", "a".repeat(64))).toEqual({ key: `mcp_up_${"a".repeat(64)}` });
  });
});
