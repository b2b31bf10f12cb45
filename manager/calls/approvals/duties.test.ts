import { describe, expect, it } from "vitest";
import type { ApprovalRow, UserRow } from "../../db/schema/index.ts";
import type { TokenInfo } from "../../identity/store.ts";
import { dutiesProblem } from "./duties.ts";

const filed = new Date("2026-12-04T10:00:00Z");
const before = new Date("2026-12-01T00:00:00Z");
const after = new Date("2026-12-04T10:00:01Z");
const request = { requesterUserId: "rita", onBehalfOf: "", createdAt: filed } as ApprovalRow;
const user = (o: Partial<UserRow> = {}) => ({ id: "alice", role: "approver", reach: "", createdAt: before, disabledAt: null, createdBy: "admin", changedAt: null, changedBy: "", ...o }) as UserRow;
const token = (o: Partial<TokenInfo> = {}) => ({ id: "t1", userId: "alice", createdAt: before, createdBy: "admin", ...o }) as TokenInfo;

describe("dutiesProblem", () => {
  it.each([
    ["an approver who predates the request and owes the requester nothing", { user: user(), token: token() }, request, undefined],
    ["an account created after the request", { user: user({ createdAt: after }), token: token() }, request, /account was created after/],
    ["an account created by the requester", { user: user({ createdBy: "rita" }), token: token() }, request, /created by the requester "rita"/],
    ["a role changed after the request", { user: user({ changedAt: after, changedBy: "admin" }), token: token() }, request, /changed after the request/],
    ["a role last changed by the requester, long ago", { user: user({ changedAt: before, changedBy: "rita" }), token: token() }, request, /last changed by the requester/],
    ["a token issued after the request", { user: user(), token: token({ createdAt: after }) }, request, /token was issued after/],
    ["a token issued by the requester", { user: user(), token: token({ createdBy: "rita" }) }, request, /token was issued by the requester/],
    ["the user an agent session acted for counts as the requester", { user: user({ createdBy: "una" }), token: token() }, { ...request, requesterUserId: "0", onBehalfOf: "una" } as ApprovalRow, /created by the requester "una"/],
    ["an unknown account", { token: token() }, request, /not in the identity store/],
  ] as const)("%s", (_what, p, req, want) => {
    const got = dutiesProblem(p, req, "t1");
    if (want === undefined) expect(got).toBeUndefined();
    else expect(got).toMatch(want);
  });

  it("a token named by the caller but missing from the store does not count", () => {
    expect(dutiesProblem({ user: user() }, request, "t9")).toMatch(/token is not in the identity store/);
  });
});
