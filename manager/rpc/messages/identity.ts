/** The contract's identity messages from the manager's rows, for the services and the CLI. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Role, TokenInfoSchema, UserSchema, type TokenInfo, type User } from "../../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { UserRow } from "../../db/schema/index.ts";
import type { TokenInfo as TokenRow } from "../../identity/store.ts";

const ROLE_TO_PROTO: Record<string, Role> = { viewer: Role.VIEWER, operator: Role.OPERATOR, approver: Role.APPROVER, admin: Role.ADMIN };

/** A proto Role as the store's role name; unspecified is refused when required. */
export function roleFromProto(r: Role, field = "role"): string | undefined {
  if (r === Role.UNSPECIFIED) return undefined;
  const name = Object.entries(ROLE_TO_PROTO).find(([, v]) => v === r)?.[0];
  if (!name) throw new OngridError("invalid_argument", `${field}: ${r} is not a role (rule: enum)`);
  return name;
}

/** A users row as the contract's User. */
export function userToProto(u: UserRow): User {
  return create(UserSchema, { id: u.id, role: ROLE_TO_PROTO[u.role] ?? Role.UNSPECIFIED, reach: u.reach, createdAt: timestampFromDate(u.createdAt), disabled: Boolean(u.disabledAt) });
}

/** Token metadata as the contract's TokenInfo. */
export function tokenToProto(t: TokenRow): TokenInfo {
  return create(TokenInfoSchema, {
    id: t.id,
    userId: t.userId,
    description: t.description,
    createdAt: timestampFromDate(t.createdAt),
    expiresAt: t.expiresAt ? timestampFromDate(t.expiresAt) : undefined,
    revokedAt: t.revokedAt ? timestampFromDate(t.revokedAt) : undefined,
    reach: t.reach,
    lastUsedAt: t.lastUsedAt ? timestampFromDate(t.lastUsedAt) : undefined,
  });
}
