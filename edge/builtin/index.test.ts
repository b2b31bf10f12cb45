import { describe, expect, it } from "vitest";
import { lintRegistry } from "../../skill/lint.ts";
import { createRegistry } from "../../skill/registry.ts";
import { EDGE_BUILTINS } from "./index.ts";

describe("edge builtins", () => {
  it("register together (unique keys, host scope) and pass the ACI new-tool checklist with no error", () => {
    const registry = createRegistry();
    for (const def of EDGE_BUILTINS) registry.register(def);
    expect(registry.list().map((s) => s.meta.key)).toEqual(
      ["exec", "host_files", "host_load", "host_netns_inspect", "host_processes", "host_sockets", "probe_dns", "probe_http", "probe_tcp", "read_journal", "restart_service", "tail_file"],
    );
    expect(registry.list().every((s) => s.meta.scope === "host")).toBe(true);
    expect(lintRegistry(EDGE_BUILTINS).filter((f) => f.severity === "error")).toEqual([]);
  });
});
