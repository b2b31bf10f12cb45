import { describe, expect, it } from "vitest";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { isLoopback, kPeerAddress, requireLocalAdmin } from "./caller.ts";

function ctxFrom(peer: string): HandlerContext {
  const values = createContextValues();
  values.set(kPeerAddress, peer);
  return { values } as unknown as HandlerContext;
}

describe("local admin RPCs", () => {
  it("recognises loopback addresses only", () => {
    for (const a of ["127.0.0.1", "127.5.6.7", "::1", "::ffff:127.0.0.1"]) expect(isLoopback(a), a).toBe(true);
    for (const a of ["10.0.0.1", "192.168.1.2", "::ffff:10.1.1.1", "fe80::1", "", "127.0.0.1.evil", "0.0.0.0"]) expect(isLoopback(a), a).toBe(false);
  });

  it("refuses a remote caller with permission_denied naming the RPC and the caller", () => {
    expect(() => requireLocalAdmin(ctxFrom("10.1.2.3"), "EnrollEdge")).toThrow(/EnrollEdge is only served to callers on the manager's host .*caller: 10\.1\.2\.3/);
    expect(() => requireLocalAdmin(ctxFrom(""), "RevokeEdge")).toThrow(/caller: unknown/);
    expect(() => requireLocalAdmin(ctxFrom("127.0.0.1"), "EnrollEdge")).not.toThrow();
  });
});
