import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadStaticTopology, parseStaticTopology, StaticFileError, STATIC_LIMITS } from "./static-file.ts";

const dir = mkdtempSync(join(tmpdir(), "ongrid-topo-static-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The problems a text gives, or [] when it is valid. */
function problems(text: string): string[] {
  try {
    parseStaticTopology(text, "t.yaml");
    return [];
  } catch (err) {
    if (err instanceof StaticFileError) return err.problems;
    throw err;
  }
}

const EXAMPLE = `
# What no edge can observe.
nodes:
  - id: orders-rds
    name: Orders database (RDS)
    kind: database
    addresses: [10.9.0.5]
    port: 5432
    labels: { team: payments }
  - id: stripe
    kind: saas
    labels: { team: payments }
links:
  - from: svc:api-1:8080
    to: stripe
    port: 443
    description: card payments
`;

describe("the static topology file", () => {
  it("reads nodes and links, with defaults (name = id, kind external)", () => {
    expect(parseStaticTopology(EXAMPLE, "t.yaml")).toEqual({
      nodes: [
        { id: "orders-rds", name: "Orders database (RDS)", kind: "database", addresses: ["10.9.0.5"], port: 5432, labels: { team: "payments" } },
        { id: "stripe", name: "stripe", kind: "saas", addresses: [], labels: { team: "payments" } },
      ],
      links: [{ from: "svc:api-1:8080", to: "stripe", port: 443, description: "card payments" }],
    });
    expect(parseStaticTopology("", "t.yaml")).toEqual({ nodes: [], links: [] });
  });

  it("names the field and the rule of every problem", () => {
    expect(problems("nodes:\n  - id: a\n    port: 70000\n  - name: no id\n  - id: b\n    addresses: [10.0.0.300, '::1']\n    labels: { 'bad key!': x }\n")).toEqual([
      "nodes[0].port: must be an integer from 1 to 65535, got 70000 (rule: range)",
      "nodes[1].id: is required (rule: required)",
      'nodes[2].addresses[0]: must be an IPv4 or IPv6 address, got "10.0.0.300" (rule: format)',
      expect.stringMatching(/^nodes\[2\]\.labels: label key "bad key!" must match .* \(rule: labels\)$/),
    ]);
    expect(problems("nodes:\n  - id: svc:web-1:80\n  - id: x\n  - id: x\n  - id: 'has space'\n  - id: y\n    kind: Database\n    edge_id: Web_1\n")).toEqual([
      'nodes[0].id: "svc:web-1:80" starts with svc:, which observed nodes use (rule: reserved)',
      'nodes[2].id: "x" is already the id of an earlier node (rule: unique)',
      'nodes[3].id: "has space" must be letters, digits and . _ : / - (starting with a letter or digit) (rule: pattern)',
      'nodes[4].kind: must be a lower-case word (letters, digits, _ and -, at most 32), got "Database" (rule: pattern)',
      expect.stringMatching(/^nodes\[4\]\.edge_id: must be an edge id .*, got "Web_1" \(rule: pattern\)$/),
    ]);
    expect(problems("links:\n  - from: a\n  - from: a\n    to: a\n  - { from: a, to: b, port: 0, via: x }\n")).toEqual([
      "links[0].to: is required (rule: required)",
      'links[1]: links "a" to itself (rule: self_link)',
      "links[2].via: is not a known key; a link has from, to, port, description (rule: additionalProperties)",
      "links[2].port: must be an integer from 1 to 65535, got 0 (rule: range)",
    ]);
    expect(problems("nodes: {a: 1}\nedges: []\n")).toEqual(["edges: is not a known key; the file has nodes and links (rule: additionalProperties)", "nodes: must be a list (rule: type)"]);
    expect(problems("- a\n- b\n")).toEqual(["(root): must be a mapping with nodes and links (rule: type)"]);
    expect(problems("nodes: [\n")[0]).toMatch(/^\(root\): not valid YAML: .* \(rule: yaml\)$/);
  });

  it("says which file, and refuses one that is missing or too large", async () => {
    const good = join(dir, "good.yaml");
    writeFileSync(good, EXAMPLE);
    expect((await loadStaticTopology(good)).nodes).toHaveLength(2);
    await expect(loadStaticTopology(join(dir, "missing.yaml"))).rejects.toThrow(/^topology\.static_file .*missing\.yaml:\n  \(root\): cannot read it: ENOENT/);
    const big = join(dir, "big.yaml");
    writeFileSync(big, "#".repeat(STATIC_LIMITS.maxBytes + 1));
    await expect(loadStaticTopology(big)).rejects.toThrow(/at most 1048576 \(rule: maxBytes\)/);
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "nodes:\n  - id: a\n    port: x\n");
    const err = await loadStaticTopology(bad).catch((e) => e);
    expect(err).toBeInstanceOf(StaticFileError);
    expect(err.message).toBe(`topology.static_file ${bad}:\n  nodes[0].port: must be an integer from 1 to 65535, got "x" (rule: range)`);
  });

  it("refuses alias bombs rather than expanding them", () => {
    let bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (let i = 1; i < 9; i++) bomb += `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(", ")}]\n`;
    expect(problems(bomb)).toEqual([expect.stringMatching(/^\(root\): not valid YAML: Excessive alias count.* \(rule: yaml\)$/)]);
  });
});
