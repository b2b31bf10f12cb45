import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CredentialSchema, CredentialService } from "../../../proto/gen/ongrid/v1/credential_service_pb.ts";
import { openDatabase, type Database } from "../../db/client.ts";
import { kCaller } from "../../identity/caller.ts";
import { createCredentialService } from "./credential-service.ts";
import { toConnectError } from "../errors.ts";
import { createCredentialStore } from "../../calls/credentials/store.ts";

const SECRET = "xoxb-never-shown-4711";

let dir: string;
let database: Database;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ongrid-credsvc-"));
  database = await openDatabase({ dataDir: dir });
});
afterAll(async () => {
  await database?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A client of the service as the manager serves it: caller set by (a stand-in for) the auth interceptor, errors mapped. */
function client(key: Buffer | undefined) {
  const asAdmin: Interceptor = (next) => async (req) => {
    req.contextValues.set(kCaller, { userId: "alice", role: "admin" });
    try {
      return await next(req);
    } catch (err) {
      throw toConnectError(err);
    }
  };
  const transport = createRouterTransport(
    (router) => router.service(CredentialService, createCredentialService({ credentials: createCredentialStore(database, key) })),
    { router: { interceptors: [asAdmin] } },
  );
  return createClient(CredentialService, transport);
}

describe("CredentialService", () => {
  it("puts (recording the caller), lists and deletes; no answer ever carries the value", async () => {
    const rpc = client(randomBytes(32));
    const put = await rpc.putCredential({ name: "slack.bot", value: SECRET, description: "Slack bot token" });
    expect(put.credential).toMatchObject({ name: "slack.bot", description: "Slack bot token", updatedBy: "alice" });
    expect(put.credential?.createdAt).toBeDefined();
    const list = await rpc.listCredentials({});
    expect(list.credentials.map((c) => c.name)).toEqual(["slack.bot"]);
    const answers = JSON.stringify([toJson(CredentialSchema, put.credential!), ...list.credentials.map((c) => toJson(CredentialSchema, c))]);
    expect(answers).not.toContain(SECRET);

    await rpc.deleteCredential({ name: "slack.bot" });
    expect((await rpc.listCredentials({})).credentials).toEqual([]);
    const missing = await rpc.deleteCredential({ name: "slack.bot" }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ConnectError);
    expect((missing as ConnectError).code).toBe(Code.NotFound);
    expect((missing as ConnectError).rawMessage).toMatch(/^credential "slack\.bot" does not exist/);
  });

  it("maps refusals to Connect codes without echoing the value", async () => {
    const bad = (await client(randomBytes(32))
      .putCredential({ name: "Bad Name", value: SECRET })
      .catch((e: unknown) => e)) as ConnectError;
    expect(bad).toBeInstanceOf(ConnectError);
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.rawMessage).not.toContain(SECRET);
    const unconfigured = (await client(undefined)
      .putCredential({ name: "ok", value: SECRET })
      .catch((e: unknown) => e)) as ConnectError;
    expect(unconfigured.code).toBe(Code.FailedPrecondition);
    expect(unconfigured.rawMessage).toMatch(/the credential store is not configured/);
    expect(unconfigured.rawMessage).not.toContain(SECRET);
  });
});
