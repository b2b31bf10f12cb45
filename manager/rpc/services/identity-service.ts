/** ongrid.v1.IdentityService: users, roles, reach and API tokens (G1, G4). */
import type { ServiceImpl } from "@connectrpc/connect";
import { IdentityService, Role } from "../../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { IdentityStore } from "../../identity/store.ts";
import { callerOf } from "../../identity/caller.ts";
import { roleFromProto, userToProto, tokenToProto } from "../messages/identity.ts";

/** Builds the IdentityService implementation. */
export function createIdentityService(deps: { identity: IdentityStore }): ServiceImpl<typeof IdentityService> {
  const { identity } = deps;
  return {
    async whoAmI(_req, ctx) {
      const caller = callerOf(ctx);
      const user = await identity.getUser(caller.userId);
      if (!user) throw new OngridError("not_found", `unknown user "${caller.userId}"`);
      const token = (await identity.listTokens(caller.userId)).find((t) => t.id === caller.tokenId);
      return { user: userToProto(user), token: token ? tokenToProto(token) : undefined };
    },
    async createUser(req, ctx) {
      const role = roleFromProto(req.role);
      if (!role) throw new OngridError("invalid_argument", "role: is required (rule: required)", "viewer, operator, approver or admin");
      return { user: userToProto(await identity.createUser(req.id, role, req.reach, callerOf(ctx).userId)) };
    },
    async listUsers() {
      return { users: (await identity.listUsers()).map(userToProto) };
    },
    async updateUser(req, ctx) {
      if (req.id === callerOf(ctx).userId && (req.disabled === true || (req.role !== Role.UNSPECIFIED && req.role !== Role.ADMIN))) {
        throw new OngridError("failed_precondition", "an admin cannot disable or demote themself", "let another admin do it");
      }
      return { user: userToProto(await identity.updateUser(req.id, { role: roleFromProto(req.role), reach: req.reach, disabled: req.disabled }, callerOf(ctx).userId)) };
    },
    async createToken(req, ctx) {
      const ttl = Number(req.ttlSeconds);
      const { token, info } = await identity.createToken(req.userId, { description: req.description, ttlMs: ttl ? ttl * 1000 : undefined, reach: req.reach, by: callerOf(ctx).userId });
      return { token, info: tokenToProto(info) };
    },
    async listTokens(req) {
      return { tokens: (await identity.listTokens(req.userId || undefined)).map(tokenToProto) };
    },
    async revokeToken(req) {
      await identity.revokeToken(req.id);
      return {};
    },
  };
}
