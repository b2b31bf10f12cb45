/** ongrid.v1.CredentialService: store, list and delete credentials (G5). Values go in, never out. Admin only (enforced by the auth interceptor). */
import type { ServiceImpl } from "@connectrpc/connect";
import { CredentialService } from "../../../proto/gen/ongrid/v1/credential_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { CredentialStore } from "../../calls/credentials/store.ts";
import { callerOf } from "../../identity/caller.ts";
import { credentialToProto } from "../messages/credential.ts";

/** Builds the CredentialService implementation. */
export function createCredentialService(deps: { credentials: CredentialStore }): ServiceImpl<typeof CredentialService> {
  const { credentials } = deps;
  return {
    async putCredential(req, ctx) {
      const info = await credentials.put(req.name, req.value, req.description, callerOf(ctx).userId);
      return { credential: credentialToProto(info) };
    },
    async listCredentials() {
      return { credentials: (await credentials.list()).map(credentialToProto) };
    },
    async deleteCredential(req) {
      if (!(await credentials.delete(req.name))) {
        throw new OngridError("not_found", `credential "${req.name.slice(0, 80)}" does not exist`, "ListCredentials shows the stored names");
      }
      return {};
    },
  };
}
