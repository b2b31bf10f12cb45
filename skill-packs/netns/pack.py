#!/usr/bin/env python3
"""netns pack: network namespaces with `ip -j` (iproute2). Serves netns_list and netns_inspect."""

import sys

sys.dont_write_bytecode = True  # keep the pack directory clean (the loader watches it)

from ongrid_pack import PackError, failure, find_tool, main, param_bool, param_str, parse_json, run  # noqa: E402

PACKAGE = "iproute2"
OVERRIDE = "IP_BIN"
# A namespace name becomes a file under /run/netns and an argv item: letters, digits, _ . - only,
# never starting with "-" or ".", at most 64 characters.
NETNS_RE = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"

RULES = [
    (r"Cannot open network namespace|No such file or directory", "not_found", "list the namespaces with netns_list and use one of their names"),
    (r"Address family not supported", "unsupported", "this kernel or namespace has the address family disabled"),
]
PERMISSION_HINT = "entering a network namespace needs CAP_SYS_ADMIN: run the edge as root or grant it that capability"


def ip(argv_tail):
    """Runs `ip -j ...`; returns the parsed JSON (a list), [] for empty output."""
    tool = find_tool("ip", PACKAGE, OVERRIDE)
    r = run([tool, "-j", *argv_tail], package=PACKAGE)
    if r.returncode != 0:
        raise failure(r, RULES, tool="ip", permission_hint=PERMISSION_HINT)
    data = parse_json(r.stdout, "ip")
    if data is None:
        return []
    if not isinstance(data, list):
        raise PackError("bad_tool_output", f"ip -j {' '.join(argv_tail)} did not print a JSON list", "check the iproute2 version (JSON output needs 4.14 or later)")
    return data


def interface(link):
    """The fields of one `ip -j -d addr` entry an operator reads first."""
    info = link.get("linkinfo") or {}
    out = {
        "ifname": link.get("ifname"),
        "ifindex": link.get("ifindex"),
        "kind": info.get("info_kind"),
        "link_type": link.get("link_type"),
        "operstate": link.get("operstate"),
        "flags": link.get("flags", []),
        "mtu": link.get("mtu"),
        "mac": link.get("address"),
        "master": link.get("master"),
        "peer_ifindex": link.get("link_index"),
        "link": link.get("link"),
        "link_netnsid": link.get("link_netnsid"),
        "addresses": [
            {"family": a.get("family"), "address": a.get("local"), "prefixlen": a.get("prefixlen"), "scope": a.get("scope")}
            for a in link.get("addr_info", [])
            if "local" in a
        ],
    }
    if info.get("info_slave_kind"):
        out["slave_kind"] = info["info_slave_kind"]
    data = info.get("info_data") or {}
    if out["kind"] == "vlan" and "id" in data:
        out["vlan_id"] = data["id"]
    return {k: v for k, v in out.items() if v is not None}


def route(r):
    return {k: r[k] for k in ("type", "dst", "gateway", "dev", "table", "protocol", "scope", "prefsrc", "metric", "flags") if k in r}


def interfaces_in(name):
    return [interface(link) for link in ip(["-n", name, "-d", "addr", "show"])]


def netns_list(params):
    with_interfaces = param_bool(params, "with_interfaces", False)
    namespaces = []
    for entry in ip(["netns", "list"]):
        ns = {"name": entry.get("name")}
        if "id" in entry:
            ns["id"] = entry["id"]
        if with_interfaces:
            try:
                ns["interfaces"] = [{k: i[k] for k in ("ifname", "kind", "operstate", "addresses") if k in i} for i in interfaces_in(ns["name"])]
            except PackError as e:  # one unreadable namespace does not hide the others
                ns["error"] = {"code": e.code, "message": e.message}
        namespaces.append(ns)
    namespaces.sort(key=lambda n: n["name"] or "")
    return {"count": len(namespaces), "namespaces": namespaces}


def netns_inspect(params):
    name = param_str(params, "netns", pattern=NETNS_RE, required=True, max_len=64)
    all_tables = param_bool(params, "all_tables", False)
    table = ["table", "all"] if all_tables else []
    interfaces = interfaces_in(name)
    routes = {"ipv4": [route(r) for r in ip(["-n", name, "route", "show", *table])]}
    warnings = []
    try:
        routes["ipv6"] = [route(r) for r in ip(["-n", name, "-6", "route", "show", *table])]
    except PackError as e:
        if e.code not in ("unsupported", "tool_failed"):
            raise
        routes["ipv6"] = []
        warnings.append(f"IPv6 routes unavailable: {e.message}")
    out = {
        "netns": name,
        "interface_count": len(interfaces),
        "interfaces": interfaces,
        "routes": routes,
    }
    if warnings:
        out["warnings"] = warnings
    return out


if __name__ == "__main__":
    sys.exit(main({"netns_list": netns_list, "netns_inspect": netns_inspect}))
