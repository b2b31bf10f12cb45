/** The contract's credential messages from the manager's rows, for the services and the CLI. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CredentialSchema, type Credential } from "../../../proto/gen/ongrid/v1/credential_service_pb.ts";
import type { CredentialInfo } from "../../calls/credentials/store.ts";

/** A credential's metadata as the contract's Credential (there is no field a value could go in). */
export function credentialToProto(c: CredentialInfo): Credential {
  return create(CredentialSchema, {
    name: c.name,
    description: c.description,
    createdAt: timestampFromDate(c.createdAt),
    updatedAt: timestampFromDate(c.updatedAt),
    updatedBy: c.updatedBy,
  });
}
