import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asNobody, fakeTool, isRoot, loadPack, outputOf, scratchDir, sh, suffix, systemCommand, withEnv } from "../pack-kit.ts";
import { requiredUnderCi } from "../../test/support/ci.ts";

const pack = loadPack(import.meta.dirname);
const BPFTOOL = systemCommand("bpftool");
const PYTHON = systemCommand("python3");
const NAME = `ongrid_t_${suffix()}`; // eBPF object names are at most 15 characters
const MAP_PIN = `/sys/fs/bpf/${NAME}_m`;
const PROG_PIN = `/sys/fs/bpf/${NAME}_p`;
const scratch = scratchDir("bpftool");

/**
 * Loads a two-instruction socket filter (r0 = 0; exit) with the bpf() syscall and pins it, so
 * bpftool has a real program to list without a compiler. argv: pin path, program name.
 */
const LOAD_PROG = String.raw`
import ctypes, os, platform, sys
SYS_BPF = {"x86_64": 321, "aarch64": 280}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
insns = (ctypes.c_uint64 * 2)(0xB7, 0x95)
lic = ctypes.create_string_buffer(b"GPL")
attr = ctypes.create_string_buffer(128)
ctypes.memmove(attr, ctypes.byref(ctypes.c_uint32(1)), 4)  # BPF_PROG_TYPE_SOCKET_FILTER
ctypes.memmove(ctypes.byref(attr, 4), ctypes.byref(ctypes.c_uint32(2)), 4)
ctypes.memmove(ctypes.byref(attr, 8), ctypes.byref(ctypes.c_uint64(ctypes.addressof(insns))), 8)
ctypes.memmove(ctypes.byref(attr, 16), ctypes.byref(ctypes.c_uint64(ctypes.addressof(lic))), 8)
name = sys.argv[2].encode()[:15]
ctypes.memmove(ctypes.byref(attr, 48), name, len(name))
fd = libc.syscall(SYS_BPF, 5, attr, 128)  # BPF_PROG_LOAD
if fd < 0: sys.exit("BPF_PROG_LOAD: " + os.strerror(ctypes.get_errno()))
path = ctypes.create_string_buffer(sys.argv[1].encode())
pin = ctypes.create_string_buffer(128)
ctypes.memmove(pin, ctypes.byref(ctypes.c_uint64(ctypes.addressof(path))), 8)
ctypes.memmove(ctypes.byref(pin, 8), ctypes.byref(ctypes.c_uint32(fd)), 4)
if libc.syscall(SYS_BPF, 6, pin, 128) < 0: sys.exit("BPF_OBJ_PIN: " + os.strerror(ctypes.get_errno()))
`;

/** Why real eBPF objects could not be created here (kernel permissions, no bpffs), or undefined. */
let noObjects: string | undefined = !BPFTOOL ? "bpftool is not installed" : !isRoot ? "not root: cannot create eBPF objects" : undefined;

beforeAll(() => {
  if (noObjects) return;
  try {
    sh(BPFTOOL!, "map", "create", MAP_PIN, "type", "hash", "key", "4", "value", "4", "entries", "8", "name", NAME);
    const loader = join(scratch.dir, "load-prog.py");
    writeFileSync(loader, LOAD_PROG);
    sh(PYTHON!, loader, PROG_PIN, NAME);
  } catch (err) {
    noObjects = `cannot create eBPF objects here: ${String((err as { stderr?: string }).stderr ?? err).trim()}`;
  }
});

afterAll(() => {
  for (const p of [MAP_PIN, PROG_PIN]) if (existsSync(p)) rmSync(p); // unpinning frees them
  scratch.cleanup();
});

describe("bpftool pack: loading", () => {
  it("passes readManifest, registers bpftool_show through the loader and lints clean", () => {
    expect(pack.manifest.problems).toEqual([]);
    expect(pack.report.problems).toEqual([]);
    expect(pack.report.loaded).toEqual(["bpftool_show"]);
    expect(pack.lintErrors).toEqual([]);
    expect(pack.registry.getOrThrow("bpftool_show").meta).toMatchObject({ class: "safe", scope: "host" });
  });
});

describe.skipIf(!BPFTOOL)("bpftool pack against the real bpftool", () => {
  it("bpftool_show lists programs and maps with exact counts (the structure holds even when nothing is loaded)", async () => {
    const env = await pack.call("bpftool_show", {});
    if (!env.success && env.error?.code === "permission_denied") {
      // A kernel in lockdown or a process without CAP_BPF: the pack must say so clearly.
      expect(env.error.hint).toMatch(/CAP_SYS_ADMIN|lockdown/);
      return;
    }
    const out = outputOf(env);
    expect(out.filter).toEqual({ type: null, name_match: null });
    expect(Array.isArray(out.programs)).toBe(true);
    expect(Array.isArray(out.maps)).toBe(true);
    expect(out.program_count).toBe(out.programs.length);
    expect(out.map_count).toBe(out.maps.length);
  });

  it("bpftool_show finds the test's pinned program and map by name, with bpftool's own fields", async (ctx) => {
    if (noObjects) ctx.skip();
    const out = outputOf(await pack.call("bpftool_show", { name_match: NAME }));
    expect(out.programs).toEqual([expect.objectContaining({ id: expect.any(Number), type: "socket_filter", name: NAME, tag: expect.stringMatching(/^[0-9a-f]{16}$/), bytes_xlated: 16 })]);
    expect(out.maps).toEqual([expect.objectContaining({ id: expect.any(Number), type: "hash", name: NAME, bytes_key: 4, bytes_value: 4, max_entries: 8 })]);
    expect(out).toMatchObject({ program_count: 1, map_count: 1 });
  });

  it("what, type and limit narrow the listing", async (ctx) => {
    if (noObjects) ctx.skip();
    const maps = outputOf(await pack.call("bpftool_show", { what: "maps", type: "hash", name_match: NAME }));
    expect(maps.programs).toBeUndefined();
    expect(maps.maps.map((m: { name: string }) => m.name)).toEqual([NAME]);
    const none = outputOf(await pack.call("bpftool_show", { what: "progs", type: "xdp", name_match: NAME }));
    expect(none).toMatchObject({ program_count: 0, programs: [] });
    const all = outputOf(await pack.call("bpftool_show", { what: "maps" }));
    const cut = outputOf(await pack.call("bpftool_show", { what: "maps", limit: 1 }));
    expect(cut.maps).toHaveLength(1);
    expect(cut.map_count).toBe(all.map_count);
    expect(cut.truncated ?? false).toBe(all.map_count > 1);
  });

  it("bpftool_show as a user without CAP_SYS_ADMIN is permission_denied, from bpftool's JSON error (real bpftool as nobody)", async (ctx) => {
    const wrapper = asNobody(scratch.dir, BPFTOOL!);
    if (!wrapper) ctx.skip();
    const env = await withEnv({ BPFTOOL_BIN: wrapper }, () => pack.call("bpftool_show", {}));
    expect(env.error?.code).toBe("permission_denied");
    expect(env.error?.message).toMatch(/Operation not permitted/);
  });
});

describe("bpftool pack without bpftool", () => {
  it("reports tool_missing with an install hint when the bpftool binary is absent", async () => {
    const env = await withEnv({ BPFTOOL_BIN: join(scratch.dir, "no-such-bpftool") }, () => pack.call("bpftool_show", {}));
    expect(env.success).toBe(false);
    expect(env.error).toMatchObject({ code: "tool_missing", hint: expect.stringMatching(/install the bpftool package/) });
  });

  it("reports unsupported when the kernel has no bpf() syscall (stand-in printing bpftool's JSON error)", async () => {
    const fake = fakeTool(scratch.dir, "bpftool-nosys", 'print(json.dumps({"error": "can\'t get next program: Function not implemented"}))\nsys.exit(255)');
    const env = await withEnv({ BPFTOOL_BIN: fake.path }, () => pack.call("bpftool_show", { what: "progs" }));
    expect(env.error?.code).toBe("unsupported");
    expect(fake.calls()).toEqual([["-j", "prog", "show"]]);
  });
});

requiredUnderCi("the bpftool pack against real eBPF objects", () => noObjects || undefined);
