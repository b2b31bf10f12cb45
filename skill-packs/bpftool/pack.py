#!/usr/bin/env python3
"""bpftool pack: loaded eBPF programs and maps with `bpftool -j`. Serves bpftool_show."""

import json
import sys

sys.dont_write_bytecode = True  # keep the pack directory clean (the loader watches it)

from ongrid_pack import PackError, Result, failure, find_tool, main, param_enum, param_int, param_str, parse_json, run  # noqa: E402

PACKAGE = "bpftool"
OVERRIDE = "BPFTOOL_BIN"
TYPE_RE = r"[a-z0-9_]{1,32}"
NAME_RE = r"[A-Za-z0-9_.-]{1,64}"

RULES = [
    (r"Function not implemented", "unsupported", "this kernel was built without the bpf() syscall (CONFIG_BPF_SYSCALL)"),
    (r"lockdown", "permission_denied", "the kernel is in lockdown mode, which hides eBPF objects even from root"),
]
PERMISSION_HINT = "listing eBPF objects needs CAP_SYS_ADMIN (or CAP_BPF with CAP_PERFMON): run the edge as root or grant those capabilities"


def bpftool(what):
    tool = find_tool("bpftool", PACKAGE, OVERRIDE)
    r = run([tool, "-j", what, "show"], package=PACKAGE)
    if r.returncode != 0:
        # bpftool -j reports its failures as {"error": "..."} on stdout.
        try:
            doc = json.loads(r.stdout)
            if isinstance(doc, list) and doc and isinstance(doc[0], dict):
                doc = doc[0]
            msg = doc.get("error") if isinstance(doc, dict) else None
        except ValueError:
            msg = None
        if msg:
            r = Result(r.argv, r.returncode, "", f"{msg}\n{r.stderr}")
        raise failure(r, RULES, tool="bpftool", permission_hint=PERMISSION_HINT)
    data = parse_json(r.stdout, "bpftool")
    if data is None:
        return []
    if not isinstance(data, list):
        raise PackError("bad_tool_output", f"bpftool -j {what} show did not print a JSON list", "check the bpftool version")
    return data


def select(items, type_, name, limit):
    chosen = [i for i in items if isinstance(i, dict) and (not type_ or i.get("type") == type_) and (not name or name in str(i.get("name", "")))]
    chosen.sort(key=lambda i: i.get("id", 0))
    return chosen[:limit], len(chosen)


def bpftool_show(params):
    what = param_enum(params, "what", ["all", "progs", "maps"], default="all")
    type_ = param_str(params, "type", pattern=TYPE_RE, max_len=32)
    name = param_str(params, "name_match", pattern=NAME_RE, max_len=64)
    limit = param_int(params, "limit", default=200, minimum=1, maximum=5000)
    out = {"filter": {"type": type_, "name_match": name}}
    truncated = False
    if what in ("all", "progs"):
        progs, total = select(bpftool("prog"), type_, name, limit)
        out["program_count"] = total
        out["programs"] = progs
        truncated = truncated or total > len(progs)
    if what in ("all", "maps"):
        maps, total = select(bpftool("map"), type_, name, limit)
        out["map_count"] = total
        out["maps"] = maps
        truncated = truncated or total > len(maps)
    if truncated:
        out["truncated"] = True
        out["hint"] = f"only the first {limit} of each are listed (by id); filter by type or name_match, or raise limit"
    return out


if __name__ == "__main__":
    sys.exit(main({"bpftool_show": bpftool_show}))
