/**
 * The topology's static file (topology.static_file): nodes and links no edge can observe (a managed
 * database, a SaaS API), in YAML, checked field by field; every problem names its field and rule.
 */
import { readFile, stat } from "node:fs/promises";
import { isIP } from "node:net";
import { parse as parseYaml } from "yaml";
import { EDGE_ID_PATTERN, labelProblem } from "../../skill/identity.ts";

/** A node of the static file. */
export interface StaticNode {
  id: string;
  name: string;
  kind: string;
  addresses: string[];
  port?: number;
  labels: Record<string, string>;
  edge_id?: string;
  description?: string;
}

/** A link of the static file: from and to are static ids or observed node ids (svc:<edge>:<port>, …). */
export interface StaticLink {
  from: string;
  to: string;
  port?: number;
  description?: string;
}

/** The file, checked. */
export interface StaticTopology {
  nodes: StaticNode[];
  links: StaticLink[];
}

/** Limits of the file. */
export const STATIC_LIMITS = { maxBytes: 1024 * 1024, maxNodes: 10_000, maxLinks: 50_000, maxAddresses: 64 } as const;

/** Node ids observed nodes use; a static id may not start with one. */
export const OBSERVED_PREFIXES = ["svc:", "proc:", "host:", "ext:"] as const;
const STATIC_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const KIND = /^[a-z][a-z0-9_-]{0,31}$/;
const NODE_KEYS = new Set(["id", "name", "kind", "addresses", "port", "labels", "edge_id", "description"]);
const LINK_KEYS = new Set(["from", "to", "port", "description"]);

/** A static file that cannot be used, with one line per problem. */
export class StaticFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`topology.static_file ${file}:\n  ${problems.join("\n  ")}`);
  }
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v: unknown) => JSON.stringify(v)?.slice(0, 60) ?? String(v);

/** Checks a parsed document; returns the topology or the list of problems. */
export function checkStaticTopology(doc: unknown): { topology: StaticTopology; problems: string[] } {
  const problems: string[] = [];
  const bad = (at: string, what: string, rule: string) => problems.push(`${at}: ${what} (rule: ${rule})`);
  const topology: StaticTopology = { nodes: [], links: [] };
  if (doc === null || doc === undefined) return { topology, problems };
  if (!isMap(doc)) return { topology, problems: ["(root): must be a mapping with nodes and links (rule: type)"] };
  for (const k of Object.keys(doc)) if (k !== "nodes" && k !== "links") bad(k, "is not a known key; the file has nodes and links", "additionalProperties");
  const list = (key: "nodes" | "links", max: number): unknown[] => {
    const v = doc[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v)) return bad(key, "must be a list", "type"), [];
    if (v.length > max) return bad(key, `at most ${max} entries, got ${v.length}`, "maxItems"), [];
    return v;
  };
  const text = (at: string, v: unknown, max: number, required: boolean): string | undefined => {
    if (v === undefined || v === null) return required ? (bad(at, "is required", "required"), undefined) : undefined;
    if (typeof v !== "string" || v.length === 0) return bad(at, `must be a non-empty string, got ${show(v)}`, "type"), undefined;
    if (v.length > max) return bad(at, `at most ${max} characters, got ${v.length}`, "maxLength"), undefined;
    return v;
  };
  const port = (at: string, v: unknown): number | undefined => {
    if (v === undefined || v === null) return undefined;
    if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 65535) return bad(at, `must be an integer from 1 to 65535, got ${show(v)}`, "range"), undefined;
    return v as number;
  };

  const ids = new Set<string>();
  list("nodes", STATIC_LIMITS.maxNodes).forEach((n, i) => {
    const at = `nodes[${i}]`;
    if (!isMap(n)) return bad(at, "must be a mapping (id, name, kind, addresses, port, labels, edge_id, description)", "type");
    for (const k of Object.keys(n)) if (!NODE_KEYS.has(k)) bad(`${at}.${k}`, `is not a known key; a node has ${[...NODE_KEYS].join(", ")}`, "additionalProperties");
    const id = text(`${at}.id`, n.id, 128, true);
    let ok = id !== undefined;
    if (id !== undefined) {
      if (!STATIC_ID.test(id)) ok = !bad(`${at}.id`, `"${id.slice(0, 60)}" must be letters, digits and . _ : / - (starting with a letter or digit)`, "pattern");
      else if (OBSERVED_PREFIXES.some((p) => id.startsWith(p))) ok = !bad(`${at}.id`, `"${id}" starts with ${OBSERVED_PREFIXES.find((p) => id.startsWith(p))}, which observed nodes use`, "reserved");
      else if (ids.has(id)) ok = !bad(`${at}.id`, `"${id}" is already the id of an earlier node`, "unique");
    }
    const name = text(`${at}.name`, n.name, 200, false);
    let kind = "external";
    if (n.kind !== undefined) {
      if (typeof n.kind !== "string" || !KIND.test(n.kind)) ok = !bad(`${at}.kind`, `must be a lower-case word (letters, digits, _ and -, at most 32), got ${show(n.kind)}`, "pattern");
      else kind = n.kind;
    }
    const addresses: string[] = [];
    if (n.addresses !== undefined) {
      if (!Array.isArray(n.addresses)) ok = !bad(`${at}.addresses`, "must be a list of IP addresses", "type");
      else if (n.addresses.length > STATIC_LIMITS.maxAddresses) ok = !bad(`${at}.addresses`, `at most ${STATIC_LIMITS.maxAddresses} addresses, got ${n.addresses.length}`, "maxItems");
      else
        n.addresses.forEach((a, j) => {
          if (typeof a !== "string" || isIP(a) === 0) ok = !bad(`${at}.addresses[${j}]`, `must be an IPv4 or IPv6 address, got ${show(a)}`, "format");
          else addresses.push(a.toLowerCase());
        });
    }
    const p = port(`${at}.port`, n.port);
    if (n.port !== undefined && p === undefined) ok = false;
    let labels: Record<string, string> = {};
    if (n.labels !== undefined) {
      const problem = isMap(n.labels) && Object.values(n.labels).every((v) => typeof v === "string") ? labelProblem(n.labels as Record<string, string>) : "must be a mapping of label keys to string values";
      if (problem) ok = !bad(`${at}.labels`, problem, "labels");
      else labels = n.labels as Record<string, string>;
    }
    let edgeId: string | undefined;
    if (n.edge_id !== undefined) {
      if (typeof n.edge_id !== "string" || !EDGE_ID_PATTERN.test(n.edge_id)) ok = !bad(`${at}.edge_id`, `must be an edge id (${EDGE_ID_PATTERN.source}), got ${show(n.edge_id)}`, "pattern");
      else edgeId = n.edge_id;
    }
    const description = text(`${at}.description`, n.description, 1000, false);
    if (!ok || id === undefined) return;
    ids.add(id);
    topology.nodes.push({ id, name: name ?? id, kind, addresses, ...(p ? { port: p } : {}), labels, ...(edgeId ? { edge_id: edgeId } : {}), ...(description ? { description } : {}) });
  });

  list("links", STATIC_LIMITS.maxLinks).forEach((l, i) => {
    const at = `links[${i}]`;
    if (!isMap(l)) return bad(at, "must be a mapping (from, to, port, description)", "type");
    for (const k of Object.keys(l)) if (!LINK_KEYS.has(k)) bad(`${at}.${k}`, `is not a known key; a link has ${[...LINK_KEYS].join(", ")}`, "additionalProperties");
    const from = text(`${at}.from`, l.from, 200, true);
    const to = text(`${at}.to`, l.to, 200, true);
    const p = port(`${at}.port`, l.port);
    const description = text(`${at}.description`, l.description, 1000, false);
    if (from === undefined || to === undefined || (l.port !== undefined && p === undefined)) return;
    if (from === to) return bad(at, `links "${from}" to itself`, "self_link");
    topology.links.push({ from, to, ...(p ? { port: p } : {}), ...(description ? { description } : {}) });
  });
  return { topology, problems };
}

/** Parses the file's text; throws StaticFileError naming each problem. */
export function parseStaticTopology(text: string, file: string): StaticTopology {
  let doc: unknown;
  try {
    doc = parseYaml(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new StaticFileError(file, [`(root): not valid YAML: ${(err as Error).message.split("\n")[0]} (rule: yaml)`]);
  }
  const { topology, problems } = checkStaticTopology(doc);
  if (problems.length) throw new StaticFileError(file, problems);
  return topology;
}

/** Reads and checks the file; throws StaticFileError (unreadable, too large, invalid). */
export async function loadStaticTopology(file: string): Promise<StaticTopology> {
  let text: string;
  try {
    const st = await stat(file);
    if (st.size > STATIC_LIMITS.maxBytes) throw new StaticFileError(file, [`(root): the file is ${st.size} bytes; at most ${STATIC_LIMITS.maxBytes} (rule: maxBytes)`]);
    text = await readFile(file, "utf8");
  } catch (err) {
    if (err instanceof StaticFileError) throw err;
    throw new StaticFileError(file, [`(root): cannot read it: ${(err as Error).message} (rule: readable)`]);
  }
  return parseStaticTopology(text, file);
}
