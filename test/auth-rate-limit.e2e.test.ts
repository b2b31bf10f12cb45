/** S2: failed authentications are rate-limited per peer address, through a real manager. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SkillService } from "../proto/gen/ongrid/v1/skill_service_pb.ts";
import { bootManager, type TestManager } from "./support/manager.ts";
import { bearer, makeUser } from "./support/auth.ts";

let m: TestManager;
let good: string;
const BAD = "ogu_000000000000_notarealtokennotarealtokennotarealtokenxxxxxx";

/** A SkillService client whose connections leave from `localAddress`. */
function client(token: string, localAddress: string) {
  return createClient(SkillService, createConnectTransport({ baseUrl: m.url, httpVersion: "1.1", nodeOptions: { localAddress }, interceptors: [bearer(token)] }));
}

async function codeOf(p: Promise<unknown>): Promise<{ code: Code | "ok"; message: string }> {
  try {
    await p;
    return { code: "ok", message: "" };
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
}

beforeAll(async () => {
  m = await bootManager({ "server.auth_failures_per_minute": 3, "server.auth_failure_window": "1500ms" });
  good = await makeUser(m, "vera", "viewer");
}, 60_000);
afterAll(async () => {
  await m?.stop();
});

describe("rate limiting of failed authentication (S2)", () => {
  it("after 3 bad tokens from an address, its next request is refused with ResourceExhausted even with a valid token; other addresses are unaffected; after the window a valid token works", async () => {
    const before = await m.audit.list({ limit: 1000 }).then((r) => r.length);
    // Another address, working before, during and after.
    expect((await codeOf(client(good, "127.0.0.2").listSkills({}))).code).toBe("ok");
    for (let i = 0; i < 3; i++) expect((await codeOf(client(BAD, "127.0.0.1").listSkills({}))).code).toBe(Code.Unauthenticated);
    const t0 = Date.now();
    const blockedGood = await codeOf(client(good, "127.0.0.1").listSkills({}));
    expect(blockedGood.code).toBe(Code.ResourceExhausted);
    expect(blockedGood.message).toMatch(/^too many failed authentications from this address; retry in [12] s \(hint: 3 requests from this address failed authentication within 1\.5 s /);
    const blockedBad = await codeOf(client(BAD, "127.0.0.1").listSkills({}));
    expect(blockedBad.code).toBe(Code.ResourceExhausted);
    const noToken = await codeOf(client("", "127.0.0.1").listSkills({}));
    expect(noToken.code).toBe(Code.ResourceExhausted);
    // Unaffected: a valid token from 127.0.0.2 works, and a bad one there is only unauthenticated.
    expect((await codeOf(client(good, "127.0.0.2").listSkills({}))).code).toBe("ok");
    expect((await codeOf(client(BAD, "127.0.0.2").listSkills({}))).code).toBe(Code.Unauthenticated);

    // Each refusal is audited like other refusals.
    await m.audit.flush();
    const rows = (await m.audit.list({ limit: 1000 })).slice(before);
    const exhausted = rows.filter((r) => String(r.decisionReason).startsWith("resource_exhausted:"));
    expect(exhausted).toHaveLength(3);
    for (const r of exhausted) expect(r).toMatchObject({ decision: "deny", callerUserId: "", toolName: "ongrid.v1.SkillService/ListSkills" });
    expect(rows.filter((r) => String(r.decisionReason).startsWith("unauthenticated:"))).toHaveLength(4);

    // Refusals do not extend the window: keep knocking (with the valid token) until it opens, which
    // happens 1.5 s after the FIRST failure, not after the last refusal.
    let opened = 0;
    while (Date.now() - t0 < 5000) {
      const r = await codeOf(client(good, "127.0.0.1").listSkills({}));
      if (r.code === "ok") {
        opened = Date.now() - t0;
        break;
      }
      expect(r.code).toBe(Code.ResourceExhausted);
      await new Promise((res) => setTimeout(res, 100));
    }
    expect(opened).toBeGreaterThan(0);
    expect(opened).toBeLessThan(2500);
  });
});
