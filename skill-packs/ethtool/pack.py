#!/usr/bin/env python3
"""ethtool pack: a NIC's driver, link settings and counters, parsed from ethtool's text output. Serves ethtool_inspect."""

import re
import sys

sys.dont_write_bytecode = True  # keep the pack directory clean (the loader watches it)

from ongrid_pack import PackError, failure, find_tool, main, param_bool, param_str, run  # noqa: E402

PACKAGE = "ethtool"
OVERRIDE = "ETHTOOL_BIN"
# Linux interface names: at most 15 bytes; never starting with "-" (it would read as an option).
IFNAME_RE = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}"
NETNS_RE = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
STAT_MATCH_RE = r"[A-Za-z0-9_.-]{1,64}"

RULES = [
    (r"Cannot open network namespace", "not_found", "list the namespaces with netns_list and use one of their names"),
    (r"No such device|no device matches name", "not_found", "check the interface name (ip link, or netns_inspect for an interface inside a namespace)"),
]
PERMISSION_HINT = "run the edge as root or grant it CAP_NET_ADMIN (entering a namespace also needs CAP_SYS_ADMIN)"


def snake(key):
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def typed(value):
    v = value.strip()
    low = v.lower()
    if low in ("yes", "on"):
        return True
    if low in ("no", "off"):
        return False
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    return v


def parse_driver(text):
    out = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        k, v = line.split(":", 1)
        out[snake(k)] = typed(v) if snake(k).startswith("supports_") else v.strip()
    return out


def parse_link(text):
    """`ethtool IFACE`: "\\tKey: value" lines, values continued on more deeply indented lines."""
    pairs = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("Settings for "):
            continue
        m = re.match(r"^\t(\S[^:]*):\s*(.*)$", line)
        if m:
            pairs.append([m.group(1), m.group(2).strip()])
        elif pairs:
            pairs[-1][1] = (pairs[-1][1] + " " + line.strip()).strip()
    out = {}
    for key, value in pairs:
        k = snake(key)
        if k.endswith("link_modes") or k.endswith("fec_modes"):
            out[k] = [] if value in ("", "Not reported") else value.split()
        elif k == "supported_ports":
            out[k] = value.strip("[] ").split()
        elif k == "speed":
            m = re.match(r"^(\d+)Mb/s$", value)
            out["speed_mbps"] = int(m.group(1)) if m else None
            out["speed"] = value
        else:
            out[k] = typed(value)
    return out


def parse_stats(text, match):
    out = {}
    for line in text.splitlines():
        if not line.startswith((" ", "\t")) or ":" not in line:
            continue
        k, v = line.strip().rsplit(":", 1)
        k = k.strip()
        if match and match.lower() not in k.lower():
            continue
        out[k] = typed(v)
    return out


def ethtool_inspect(params):
    iface = param_str(params, "interface", pattern=IFNAME_RE, required=True, max_len=15)
    netns = param_str(params, "netns", pattern=NETNS_RE, max_len=64)
    statistics = param_bool(params, "statistics", True)
    match = param_str(params, "stats_match", pattern=STAT_MATCH_RE, max_len=64)

    ethtool = find_tool("ethtool", PACKAGE, OVERRIDE)
    prefix = [find_tool("ip", "iproute2"), "netns", "exec", netns] if netns else []

    def ethtool_run(args):
        return run([*prefix, ethtool, *args, iface], package=PACKAGE)

    out = {"interface": iface, "netns": netns}
    errors = {}

    r = ethtool_run(["-i"])
    if r.returncode == 0:
        out["driver"] = parse_driver(r.stdout)
    else:
        e = failure(r, RULES, tool="ethtool", permission_hint=PERMISSION_HINT)
        if e.code in ("not_found", "permission_denied"):
            raise e
        out["driver"] = None
        errors["driver"] = e.message

    r = ethtool_run([])
    link = parse_link(r.stdout)
    if r.returncode == 0 or link:
        out["link"] = link
    else:
        e = failure(r, RULES, tool="ethtool", permission_hint=PERMISSION_HINT)
        if e.code == "not_found":
            raise e
        out["link"] = None
        errors["link"] = e.message

    if statistics:
        r = ethtool_run(["-S"])
        if r.returncode == 0:
            stats = parse_stats(r.stdout, match)
            out["statistic_count"] = len(stats)
            out["statistics"] = stats
        else:
            out["statistics"] = None
            errors["statistics"] = failure(r, RULES, tool="ethtool", permission_hint=PERMISSION_HINT).message
    if errors:
        out["errors"] = errors
    return out


if __name__ == "__main__":
    sys.exit(main({"ethtool_inspect": ethtool_inspect}))
