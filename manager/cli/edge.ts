/** `ongrid edge enroll|revoke|list|get`: manage edge agents' enrolment and see their presence. */
import { Command } from "commander";
import { toJson } from "@bufbuild/protobuf";
import { EdgeSchema, type Edge } from "../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { OngridError } from "../../skill/errors.ts";
import { checkEdgeId } from "../edges/store.ts";
import { parseSelector } from "../edges/selector.ts";
import { edgeToProto } from "../server/edge-service.ts";
import { managerUrl, printTable, rpcClients, withAdminCore, withCore, withCoreOptions, type CoreOptions } from "./common.ts";

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
    .option("--json", "print JSON")
    .action(async (id: string, opts: CoreOptions) => {
      checkEdgeId(id, "id");
      const url = managerUrl(opts);
      const res = url ? await rpcClients(url, opts).edges.enrollEdge({ id }) : await withAdminCore(opts, "ongrid.v1.EdgeService/EnrollEdge", { id }, (core) => core.edges.enroll(id));
      if (opts.json) console.log(JSON.stringify({ id: res.id, token: res.token, rotated: res.rotated }));
      else {
        console.error(`${res.rotated ? "rotated the token of" : "enrolled"} edge "${res.id}"; start it with: ongrid-edge --manager URL --id ${res.id} --token <token below>`);
        console.log(res.token);
      }
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
          skills: String(e.skills.length),
        })),
        ["id", "state", "last_seen", "version", "labels", "skills"],
      );
    });
  return cmd;
}
