#!/usr/bin/env python3
"""nft pack: the nftables ruleset with `nft -j list ...`. Serves nft_ruleset."""

import re
import sys

sys.dont_write_bytecode = True  # keep the pack directory clean (the loader watches it)

from ongrid_pack import PackError, failure, find_tool, main, param_bool, param_enum, param_int, param_str, parse_json, run  # noqa: E402

PACKAGE = "nftables"
OVERRIDE = "NFT_BIN"
FAMILIES = ["ip", "ip6", "inet", "arp", "bridge", "netdev"]
# nft joins its argv into one command line and parses it, so a name must be a plain nft
# identifier: a letter or _, then letters, digits, _ . - (never ; { } quotes or spaces).
NAME_RE = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"

RULES = [
    (r"No such file or directory", "not_found", "call nft_ruleset without table/chain to see which tables and chains exist"),
    (r"syntax error", "invalid_argument", "the table or chain name is not valid nft syntax (an nft keyword?); check the spelling in the full ruleset"),
    (r"Protocol not supported|Address family not supported", "unsupported", "this kernel lacks nf_tables (modprobe nf_tables) or the family"),
]
PERMISSION_HINT = "reading the ruleset needs CAP_NET_ADMIN: run the edge as root or grant it that capability"
# Set/map objects keep at most this many elements in the output.
MAX_ELEMENTS = 100


def nft(args):
    tool = find_tool("nft", PACKAGE, OVERRIDE)
    r = run([tool, *args], package=PACKAGE)
    if r.returncode != 0:
        raise failure(r, RULES, tool="nft", permission_hint=PERMISSION_HINT)
    return r.stdout


def unquote(s):
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def rule_texts(text):
    """Maps (family, table, chain, handle) to the rule as `nft -a list` prints it."""
    out = {}
    table = chain = None
    depth = 0
    for line in text.splitlines():
        s = line.strip()
        bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', s)
        if depth == 0:
            m = re.match(r"^table (\S+) (\S+) \{", s)
            if m:
                table = (m.group(1), unquote(m.group(2)))
        elif depth == 1 and table:
            m = re.match(r"^chain (\S+) \{", s)
            if m:
                chain = unquote(m.group(1))
        elif depth == 2 and chain and not s.startswith(("type ", "policy ", "comment ")):
            h = re.search(r"\s# handle (\d+)$", s)
            if h:
                out[(table[0], table[1], chain, int(h.group(1)))] = s[: h.start()].strip()
        depth += bare.count("{") - bare.count("}")
        if depth < 2:
            chain = None
        if depth <= 0:
            depth, table = 0, None
    return out


def nft_ruleset(params):
    family = param_enum(params, "family", FAMILIES)
    table = param_str(params, "table", pattern=NAME_RE, max_len=64)
    chain = param_str(params, "chain", pattern=NAME_RE, max_len=64)
    expressions = param_bool(params, "expressions", False)
    max_rules = param_int(params, "max_rules", default=2000, minimum=1, maximum=20000)
    if table and not family:
        raise PackError("invalid_argument", "param 'table' needs 'family' (the same name can exist in ip, ip6, inet, …)", "give family too, e.g. family=inet")
    if chain and not table:
        raise PackError("invalid_argument", "param 'chain' needs 'table' and 'family'", "give family and table too")

    if chain:
        selector = ["chain", family, table, chain]
    elif table:
        selector = ["table", family, table]
    else:
        selector = ["ruleset", *([family] if family else [])]

    doc = parse_json(nft(["-j", "list", *selector]), "nft")
    if not isinstance(doc, dict) or not isinstance(doc.get("nftables"), list):
        raise PackError("bad_tool_output", "nft -j did not print {\"nftables\": [...]}", "check the nftables version (JSON output needs 0.9 or later)")
    try:
        texts = rule_texts(nft(["-a", "list", *selector]))
    except PackError as e:  # the text form only adds readability; the JSON is the result
        texts = {}
        print(f"rule text unavailable: {e.message}", file=sys.stderr)

    version = None
    tables = {}

    def table_of(o):
        key = (o.get("family"), o.get("table") if "table" in o else o.get("name"))
        if key not in tables:
            tables[key] = {"family": key[0], "name": key[1], "handle": None, "chains": [], "sets": [], "maps": [], "objects": []}
        return tables[key]

    chains = {}
    rule_count = 0
    rules_truncated = False
    for item in doc["nftables"]:
        if not isinstance(item, dict) or len(item) != 1:
            continue
        kind, o = next(iter(item.items()))
        if kind == "metainfo":
            version = o.get("version")
        elif kind == "table":
            t = table_of(o)
            t["handle"] = o.get("handle")
            if o.get("flags"):
                t["flags"] = o["flags"]
        elif kind == "chain":
            c = {k: o[k] for k in ("name", "handle", "type", "hook", "prio", "policy", "dev", "comment") if k in o}
            c["rules"] = []
            table_of(o)["chains"].append(c)
            chains[(o.get("family"), o.get("table"), o.get("name"))] = c
        elif kind == "rule":
            rule_count += 1
            if rule_count > max_rules:
                rules_truncated = True
                continue
            c = chains.get((o.get("family"), o.get("table"), o.get("chain")))
            if c is None:  # a rule listed without its chain: keep it, under a chain entry of its own
                c = {"name": o.get("chain"), "rules": []}
                table_of(o)["chains"].append(c)
                chains[(o.get("family"), o.get("table"), o.get("chain"))] = c
            r = {"handle": o.get("handle")}
            text = texts.get((o.get("family"), o.get("table"), o.get("chain"), o.get("handle")))
            if text is not None:
                r["text"] = text
            if o.get("comment") is not None:
                r["comment"] = o["comment"]
            if expressions or text is None:
                r["expr"] = o.get("expr", [])
            c["rules"].append(r)
        elif kind in ("set", "map"):
            s = {k: o[k] for k in ("name", "handle", "type", "map", "flags", "policy", "timeout", "size", "comment") if k in o}
            elems = o.get("elem", [])
            s["element_count"] = len(elems)
            if elems:
                s["elements"] = elems[:MAX_ELEMENTS]
                if len(elems) > MAX_ELEMENTS:
                    s["elements_truncated"] = True
            table_of(o)["sets" if kind == "set" else "maps"].append(s)
        else:  # flowtable, counter, quota, ct helper, limit, …: named stateful objects
            table_of(o)["objects"].append({"type": kind, **{k: v for k, v in o.items() if k not in ("family", "table")}})

    out_tables = []
    for t in tables.values():
        for empty in ("handle", "sets", "maps", "objects"):
            if t[empty] is None or t[empty] == []:
                del t[empty]
        out_tables.append(t)
    out = {
        "nft_version": version,
        "scope": {"family": family, "table": table, "chain": chain},
        "table_count": len(out_tables),
        "chain_count": len(chains),
        "rule_count": rule_count,
        "tables": out_tables,
    }
    if rules_truncated:
        out["rules_truncated"] = True
        out["hint"] = f"only the first {max_rules} rules are listed; narrow with family/table/chain or raise max_rules"
    return out


if __name__ == "__main__":
    sys.exit(main({"nft_ruleset": nft_ruleset}))
