/** ongrid.v1.AuditService: read and verify the tamper-evident tool-call log. */
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AuditService } from "../../../proto/gen/ongrid/v1/audit_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { AuditLog } from "../../audit/types.ts";
import { toolCallToProto } from "../convert.ts";

const MAX_LIMIT = 1000;

/** Builds the AuditService implementation over the audit log. */
export function createAuditService(deps: { audit: AuditLog }): ServiceImpl<typeof AuditService> {
  const { audit } = deps;
  return {
    async listToolCalls(req) {
      if (req.limit > MAX_LIMIT) {
        throw new OngridError("invalid_argument", `limit: must be <= ${MAX_LIMIT} (rule: maximum)`, "page with after_seq");
      }
      const limit = req.limit || 100;
      const rows = await audit.list({
        since: req.since ? timestampDate(req.since) : undefined,
        until: req.until ? timestampDate(req.until) : undefined,
        toolName: req.toolName || undefined,
        edgeId: req.edgeId || undefined,
        userId: req.userId || undefined,
        sessionId: req.sessionId || undefined,
        decision: req.decision || undefined,
        afterSeq: req.afterSeq ? Number(req.afterSeq) : undefined,
        beforeSeq: req.beforeSeq ? Number(req.beforeSeq) : undefined,
        newestFirst: req.newestFirst,
        limit,
      });
      const last = rows.length === limit ? rows[rows.length - 1].seq : 0;
      return { toolCalls: rows.map(toolCallToProto), nextAfterSeq: req.newestFirst ? 0n : BigInt(last), nextBeforeSeq: req.newestFirst ? BigInt(last) : 0n };
    },
    async verifyChain() {
      const r = await audit.verify();
      return {
        ok: r.ok,
        rowsChecked: BigInt(r.rowsChecked),
        firstBrokenSeq: BigInt(r.firstBrokenSeq),
        reason: r.reason,
        lastSeq: BigInt(r.lastSeq ?? 0),
        lastRowHash: r.lastRowHash ?? "",
      };
    },
  };
}
