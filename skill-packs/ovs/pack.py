#!/usr/bin/env python3
"""ovs pack: Open vSwitch bridges, ports and interfaces from `ovs-vsctl -f json list ...`. Serves ovs_show."""

import json
import math
import sys

sys.dont_write_bytecode = True  # keep the pack directory clean (the loader watches it)

from ongrid_pack import PackError, failure, find_tool, main, param_bool, param_str, remaining, run  # noqa: E402

PACKAGE = "openvswitch-switch"
OVERRIDE = "OVS_VSCTL_BIN"
BRIDGE_RE = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"
TABLES = ["Open_vSwitch", "Bridge", "Port", "Interface", "Controller"]

RULES = [
    (r"\((Permission denied|Operation not permitted)\)", "permission_denied", "the OVSDB socket (db.sock under /var/run/openvswitch or OVS_RUNDIR) is not accessible to this user: run the edge as root or in the openvswitch group"),
    (r"database connection failed|Connection refused|No such file or directory|timeout after|not running", "unavailable", "ovsdb-server is not running or its socket is elsewhere: start openvswitch-switch (systemctl start openvswitch-switch), or set OVS_RUNDIR for the edge"),
]
PERMISSION_HINT = "the OVSDB socket (/var/run/openvswitch/db.sock) is not accessible to this user: run the edge as root or in the openvswitch group"


def atom(v):
    """One OVSDB JSON value (RFC 7047) as plain JSON: uuid → string, set → list, map → object."""
    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str):
        tag, body = v
        if tag in ("uuid", "named-uuid"):
            return body
        if tag == "set":
            return [atom(x) for x in body]
        if tag == "map":
            return {str(atom(k)): atom(x) for k, x in body}
    return v


def rows(doc, table):
    if not isinstance(doc, dict) or not isinstance(doc.get("headings"), list) or not isinstance(doc.get("data"), list):
        raise PackError("bad_tool_output", f"ovs-vsctl -f json list {table} did not print {{\"headings\", \"data\"}}", "check the Open vSwitch version")
    heads = doc["headings"]
    return [{h: atom(v) for h, v in zip(heads, row)} for row in doc["data"]]


def as_list(v):
    """A column that is a set: OVSDB writes a one-element set as the element itself."""
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def scalar(v):
    """An optional column (a set of at most one): its value or None."""
    if isinstance(v, list):
        return v[0] if v else None
    return v


def pick(row, cols):
    out = {}
    for c in cols:
        if c not in row:
            continue
        v = row[c]
        if v in ([], {}, None, ""):
            continue
        out[c] = v
    return out


def ovs_show(params):
    bridge_filter = param_str(params, "bridge", pattern=BRIDGE_RE, max_len=64)
    detail = param_bool(params, "detail", False)
    tool = find_tool("ovs-vsctl", PACKAGE, OVERRIDE)
    wait = max(1, math.floor(remaining()) - 1)
    argv = [tool, f"--timeout={wait}", "--format=json"]
    for i, t in enumerate(TABLES):
        argv += (["--"] if i else []) + ["list", t]
    r = run(argv, package=PACKAGE)
    if r.returncode != 0:
        raise failure(r, RULES, tool="ovs-vsctl", permission_hint=PERMISSION_HINT)

    # One JSON document per command, in order; one ovs-vsctl run is one consistent snapshot.
    docs, pos, text = [], 0, r.stdout
    dec = json.JSONDecoder()
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            doc, pos = dec.raw_decode(text, pos)
        except ValueError as e:
            raise PackError("bad_tool_output", f"ovs-vsctl printed output that is not JSON: {e}", "check the Open vSwitch version")
        docs.append(doc)
    if len(docs) != len(TABLES):
        raise PackError("bad_tool_output", f"ovs-vsctl printed {len(docs)} JSON tables, expected {len(TABLES)}", "check the Open vSwitch version")
    ovs, bridges, ports, ifaces, controllers = (rows(d, t) for d, t in zip(docs, TABLES))
    ports_by = {p["_uuid"]: p for p in ports}
    ifaces_by = {i["_uuid"]: i for i in ifaces}
    ctl_by = {c["_uuid"]: c for c in controllers}

    def iface_view(i):
        v = {"name": i.get("name"), "type": i.get("type") or "system", "ofport": scalar(i.get("ofport"))}
        v.update(pick(i, ["admin_state", "link_state", "link_speed", "duplex", "mtu", "mac_in_use", "options", "error", "external_ids"]))
        for c in ("admin_state", "link_state", "link_speed", "duplex", "mtu", "mac_in_use"):
            if c in v:
                v[c] = scalar(v[c])
        if "error" in v:
            v["error"] = scalar(v["error"])
        if detail:
            v["columns"] = i
        return v

    def port_view(p):
        v = {"name": p.get("name")}
        v.update(pick(p, ["tag", "trunks", "vlan_mode", "bond_mode", "lacp"]))
        for c in ("tag", "vlan_mode", "bond_mode", "lacp"):
            if c in v:
                v[c] = scalar(v[c])
                if v[c] is None:
                    del v[c]
        v["interfaces"] = sorted((iface_view(ifaces_by[u]) for u in as_list(p.get("interfaces")) if u in ifaces_by), key=lambda x: x.get("name") or "")
        if detail:
            v["columns"] = p
        return v

    out_bridges = []
    for b in sorted(bridges, key=lambda x: x.get("name") or ""):
        if bridge_filter and b.get("name") != bridge_filter:
            continue
        v = {"name": b.get("name"), "uuid": b.get("_uuid")}
        v.update(pick(b, ["datapath_type", "datapath_id", "fail_mode", "protocols", "external_ids"]))
        for flag in ("stp_enable", "rstp_enable", "mcast_snooping_enable"):
            if b.get(flag) is True:
                v[flag] = True
        if "fail_mode" in v:
            v["fail_mode"] = scalar(v["fail_mode"])
        if "datapath_id" in v:
            v["datapath_id"] = scalar(v["datapath_id"])
        ctls = [ctl_by[u] for u in as_list(b.get("controller")) if u in ctl_by]
        if ctls:
            v["controllers"] = [{"target": c.get("target"), "is_connected": c.get("is_connected")} for c in ctls]
        v["ports"] = sorted((port_view(ports_by[u]) for u in as_list(b.get("ports")) if u in ports_by), key=lambda x: x.get("name") or "")
        if detail:
            v["columns"] = b
        out_bridges.append(v)
    if bridge_filter and not out_bridges:
        raise PackError("not_found", f"no Open vSwitch bridge named {bridge_filter!r}", "call ovs_show without bridge to see the bridges that exist: " + ", ".join(sorted(str(b.get("name")) for b in bridges)))

    root = ovs[0] if ovs else {}
    return {
        "ovs_version": scalar(root.get("ovs_version")),
        "db_version": scalar(root.get("db_version")),
        "bridge_count": len(out_bridges),
        "port_count": sum(len(b["ports"]) for b in out_bridges),
        "bridges": out_bridges,
    }


if __name__ == "__main__":
    sys.exit(main({"ovs_show": ovs_show}))
