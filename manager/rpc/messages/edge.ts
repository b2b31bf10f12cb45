/** The contract's edge messages from the manager's rows, for the services and the CLI. */
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { EdgeSchema, type Edge } from "../../../proto/gen/ongrid/v1/edge_service_pb.ts";
import { MetadataSchema } from "../../../proto/gen/ongrid/v1/skill_pb.ts";
import { create } from "@bufbuild/protobuf";
import type { EdgeRow } from "../../db/schema/index.ts";
import type { Hub } from "../../fleet/hub.ts";
import { classToProto, metadataToProto, scopeToProto } from "../convert.ts";

/** An edge row plus live presence as the contract's Edge; `full` includes every skill's metadata. */
export function edgeToProto(row: EdgeRow, hub: Hub, full: boolean): Edge {
  const live = hub.session(row.id);
  // A list shows each skill's key, class and scope only: built straight from the session's skills
  // (the full metadata of 15,000 edges' dozen skills each was most of a ListEdges' time).
  const skills = live
    ? [...live.skills.values()].map((s) => (full ? metadataToProto(s) : create(MetadataSchema, { key: s.meta.key, class: classToProto(s.meta.class), scope: scopeToProto(s.meta.scope) })))
    : (row.skills as JsonValue[]).flatMap((j) => {
        try {
          return [fromJson(MetadataSchema, j, { ignoreUnknownFields: true })];
        } catch {
          return [];
        }
      });
  return create(EdgeSchema, {
    id: row.id,
    online: Boolean(live),
    lastSeen: live ? timestampFromDate(new Date(live.lastHeard)) : row.lastSeenAt ? timestampFromDate(row.lastSeenAt) : undefined,
    version: live?.hello.version ?? row.version,
    hostname: live?.hello.hostname ?? row.hostname,
    os: live?.hello.os ?? row.os,
    labels: live ? { ...live.hello.labels } : row.labels,
    reportedLabels: live ? { ...live.reportedLabels } : (row.reportedLabels ?? {}),
    skills: full ? skills : skills.map((m) => create(MetadataSchema, { key: m.key, class: m.class, scope: m.scope })),
    revoked: Boolean(row.revokedAt),
    enrolledAt: timestampFromDate(row.enrolledAt),
    managerId: live ? (live.manager ?? row.managerId) : "",
  });
}
