/**
 * Separation of duties (G3): an approval counts only from a person the requester could not have
 * made or changed. An approver does not count if their account, their role (or reach, or state)
 * or the token they approve with was created or changed by the requester, or after the request was
 * filed. With the two-person rule this means two distinct people who both predate the request.
 */
import type { ApprovalRow, UserRow } from "../../db/schema/index.ts";
import type { TokenInfo } from "../../identity/store.ts";

/** What an approval is judged by: the approver's account and the token they approve with, as stored. */
export interface ApproverProvenance {
  user?: UserRow;
  token?: TokenInfo;
}

/** Why this approver cannot count toward this request, or undefined when they can. */
export function dutiesProblem(p: ApproverProvenance, request: ApprovalRow, tokenId?: string): string | undefined {
  const requesters = new Set([request.requesterUserId, request.onBehalfOf].filter(Boolean));
  const filed = request.createdAt.getTime();
  const { user, token } = p;
  if (!user) return "the approver's account is not in the identity store";
  if (user.createdAt.getTime() >= filed) return `the approver's account was created after the request was filed (${user.createdAt.toISOString()})`;
  if (requesters.has(user.createdBy)) return `the approver's account was created by the requester "${user.createdBy}"`;
  if (user.changedAt && user.changedAt.getTime() >= filed) return `the approver's role, reach or state changed after the request was filed (${user.changedAt.toISOString()})`;
  if (requesters.has(user.changedBy)) return `the approver's role, reach or state was last changed by the requester "${user.changedBy}"`;
  if (tokenId) {
    if (!token) return "the approver's token is not in the identity store";
    if (token.createdAt.getTime() >= filed) return `the approver's token was issued after the request was filed (${token.createdAt.toISOString()})`;
    if (requesters.has(token.createdBy)) return `the approver's token was issued by the requester "${token.createdBy}"`;
  }
  return undefined;
}
