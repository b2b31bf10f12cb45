/** `ongrid edge enroll|revoke|list|get`: manage edge agents' enrolment and see their presence. */
import { Command } from "commander";
import { toJson } from "@bufbuild/protobuf";
import { EdgeSchema, type Edge } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { OngridError } from "../../skill/errors.ts";
import { checkEdgeId } from "../fleet/edge-store.ts";
import { parseSelector } from "../fleet/selector.ts";
import { edgeToProto } from "../rpc/messages/edge.ts";
import { flagError, managerUrl, printTable, rpcClients, withAdminCore, withCore, withCoreOptions, type CoreOptions } from "./common.ts";

async function listEdges(opts: CoreOptions & { selector?: string }): Promise<Edge[]> {
  const url = managerUrl(opts);
  if (url) return (await rpcClients(url, opts).edges.listEdges({ selector: opts.selector ?? "" })).edges;
  const selector = parseSelector(opts.selector ?? "", "--selector");
  return withCore(opts, async (core) => (await core.edges.list()).map((r) => edgeToProto(r, core.hub, false)).filter((e) => selector.matches(e.labels)));
}

/** Builds the `edge` command group. */
export function edgeCommand(): Command {
  const cmd = new Command("edge").description("enroll, revoke and list edge agents");

  withCoreOptions(cmd.command("enroll").description("create an edge id (or rotate its token); prints the token on the last line").argument("<id>"))
    .option("--label <key=value>", "a label reach and selectors use (repeatable; on a rotation, none keeps the edge's labels)", (v: string, acc: string[]) => [...acc, v], [])
    .option("--json", "print JSON")
    .action(async (id: string, opts: CoreOptions & { label: string[] }) => {
      checkEdgeId(id, "id");
      const labels = labelFlags(opts.label, "--label");
      const url = managerUrl(opts);
      const res = url
        ? await rpcClients(url, opts).edges.enrollEdge({ id, labels })
        : await withAdminCore(opts, "ongrid.v1.EdgeService/EnrollEdge", { id, labels }, (core) => core.edges.enroll(id, Object.keys(labels).length ? { labels } : {}));
      if (opts.json) console.log(JSON.stringify({ id: res.id, token: res.token, rotated: res.rotated }));
      else {
        console.error(`${res.rotated ? "rotated the token of" : "enrolled"} edge "${res.id}"; start it with: ongrid-edge --manager URL --id ${res.id} --token <token below>`);
        console.log(res.token);
      }
    });

  withCoreOptions(cmd.command("label").description("replace the labels reach and selectors use for an edge (what the edge reports is never used)").argument("<id>").argument("[labels...]", "key=value pairs; none removes every label"))
    .option("--json", "print JSON")
    .action(async (id: string, pairs: string[], opts: CoreOptions) => {
      checkEdgeId(id, "id");
      const labels = labelFlags(pairs, "labels");
      const url = managerUrl(opts);
      const set = url
        ? (await rpcClients(url, opts).edges.setEdgeLabels({ id, labels })).edge!.labels
        : await withAdminCore(opts, "ongrid.v1.EdgeService/SetEdgeLabels", { id, labels }, (core) => core.edges.setLabels(id, labels));
      if (opts.json) console.log(JSON.stringify({ id, labels: set }));
      else console.log(`edge "${id}" labels: ${Object.entries(set).map(([k, v]) => `${k}=${v}`).join(",") || "(none)"}`);
    });

  withCoreOptions(cmd.command("revoke").description("revoke an edge's token and close its tunnel").argument("<id>")).action(async (id: string, opts: CoreOptions) => {
    const url = managerUrl(opts);
    if (url) await rpcClients(url, opts).edges.revokeEdge({ id });
    else {
      await withAdminCore(opts, "ongrid.v1.EdgeService/RevokeEdge", { id }, async (core) => {
        if (!(await core.edges.revoke(id))) throw new OngridError("not_found", `unknown edge "${id}"`);
      });
    }
    console.log(`revoked edge "${id}"`);
  });

  withCoreOptions(cmd.command("list").description("list enrolled edges with their presence"))
    .option("--selector <sel>", 'only edges whose labels match, e.g. "team=payments,env!=dev"')
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions & { selector?: string }) => {
      const edges = await listEdges(opts);
      if (opts.json) {
        console.log(JSON.stringify(edges.map((e) => toJson(EdgeSchema, e, { useProtoFieldName: true })), null, 2));
        return;
      }
      printTable(
        edges.map((e) => ({
          id: e.id,
          state: e.revoked ? "revoked" : e.online ? "online" : "offline",
          last_seen: e.lastSeen ? timestampDate(e.lastSeen).toISOString() : "never",
          version: e.version,
          labels: Object.entries(e.labels).map(([k, v]) => `${k}=${v}`).join(","),
          // What the edge says of itself: shown, never used for reach or selectors.
          reported: Object.entries(e.reportedLabels).map(([k, v]) => `${k}=${v}`).join(","),
          skills: String(e.skills.length),
        })),
        ["id", "state", "last_seen", "version", "labels", "reported", "skills"],
      );
    });
  return cmd;
}

/** k=v strings as labels, naming the flag on a malformed one. */
function labelFlags(pairs: readonly string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf("=");
    if (eq <= 0) flagError(flag, `"${p}" must look like key=value`);
    out[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return out;
}
