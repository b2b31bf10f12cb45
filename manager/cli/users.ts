/** `ongrid users add|list|set` and `ongrid tokens create|list|revoke`: identity (G1) and reach (G4). */
import { Command } from "commander";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Role, type TokenInfo, type User } from "../../proto/gen/ongrid/v1/identity_service_pb.ts";
import { parseDuration } from "../../skill/duration.ts";
import { checkRole, checkUserId } from "../identity/store.ts";
import { tokenToProto, userToProto } from "../rpc/messages/identity.ts";
import { flagError, managerUrl, printTable, rpcClients, withAdminCore, withCore, withCoreOptions, type CoreOptions } from "./common.ts";

const ROLE_NAMES: Record<number, string> = { [Role.VIEWER]: "viewer", [Role.OPERATOR]: "operator", [Role.APPROVER]: "approver", [Role.ADMIN]: "admin" };
const roleToProto = (r: string): Role => Number(Object.entries(ROLE_NAMES).find(([, n]) => n === r)?.[0] ?? Role.UNSPECIFIED) as Role;
const when = (t?: { seconds: bigint; nanos: number }) => (t ? timestampDate(t as never).toISOString() : "");

function printUsers(users: User[], json: boolean): void {
  if (json) {
    console.log(JSON.stringify(users.map((u) => ({ id: u.id, role: ROLE_NAMES[u.role], reach: u.reach, disabled: u.disabled, created_at: when(u.createdAt) })), null, 2));
    return;
  }
  printTable(users.map((u) => ({ id: u.id, role: ROLE_NAMES[u.role] ?? "?", reach: u.reach || "(all edges)", state: u.disabled ? "disabled" : "active", created: when(u.createdAt) })), ["id", "role", "reach", "state", "created"]);
}

function tokenJson(t: TokenInfo) {
  return { id: t.id, user_id: t.userId, description: t.description, reach: t.reach, created_at: when(t.createdAt), expires_at: when(t.expiresAt) || null, revoked_at: when(t.revokedAt) || null, last_used_at: when(t.lastUsedAt) || null };
}

/** Builds the `users` command group. */
export function usersCommand(): Command {
  const cmd = new Command("users").description("users and their roles (viewer, operator, approver, admin) and reach over edges");

  withCoreOptions(cmd.command("add").description("create a user").argument("<id>"))
    .requiredOption("--role <role>", "viewer, operator, approver or admin")
    .option("--reach <selector>", 'label selector limiting the edges the user reaches, e.g. "team=payments"', "")
    .option("--json", "print JSON")
    .action(async (id: string, opts: CoreOptions & { role: string; reach: string }) => {
      checkUserId(id, "id");
      checkRole(opts.role, "--role");
      const url = managerUrl(opts);
      const user = url
        ? (await rpcClients(url, opts).identity.createUser({ id, role: roleToProto(opts.role), reach: opts.reach })).user!
        : userToProto(await withAdminCore(opts, "ongrid.v1.IdentityService/CreateUser", { id, role: opts.role, reach: opts.reach }, (core, actor) => core.identity.createUser(id, opts.role, opts.reach, actor.userId)));
      printUsers([user], Boolean(opts.json));
      // A user signs in with a token: say how to issue one (on stderr, so --json stays one document).
      console.error(`next: ongrid tokens create --user ${id} --description "…"   (prints the token once)`);
    });

  withCoreOptions(cmd.command("list").description("list users"))
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions) => {
      const url = managerUrl(opts);
      const users = url ? (await rpcClients(url, opts).identity.listUsers({})).users : (await withCore(opts, (core) => core.identity.listUsers())).map(userToProto);
      printUsers(users, Boolean(opts.json));
    });

  withCoreOptions(cmd.command("set").description("change a user's role, reach, or disable/enable them").argument("<id>"))
    .option("--role <role>", "new role")
    .option("--reach <selector>", 'new reach ("" for all edges)')
    .option("--disable", "disable the user (their tokens stop working)")
    .option("--enable", "enable the user again")
    .option("--json", "print JSON")
    .action(async (id: string, opts: CoreOptions & { role?: string; reach?: string; disable?: boolean; enable?: boolean }) => {
      if (opts.disable && opts.enable) flagError("--disable", "use either --disable or --enable");
      if (opts.role) checkRole(opts.role, "--role");
      const disabled = opts.disable ? true : opts.enable ? false : undefined;
      const url = managerUrl(opts);
      const user = url
        ? (await rpcClients(url, opts).identity.updateUser({ id, role: opts.role ? roleToProto(opts.role) : Role.UNSPECIFIED, reach: opts.reach, disabled })).user!
        : userToProto(
            await withAdminCore(opts, "ongrid.v1.IdentityService/UpdateUser", { id, role: opts.role, reach: opts.reach, disabled }, (core, actor) =>
              core.identity.updateUser(id, { role: opts.role, reach: opts.reach, disabled }, actor.userId),
            ),
          );
      printUsers([user], Boolean(opts.json));
    });
  return cmd;
}

/** Builds the `tokens` command group. */
export function tokensCommand(): Command {
  const cmd = new Command("tokens").description("API tokens (stored hashed; shown once when created)");

  withCoreOptions(cmd.command("create").description("issue a token for a user; prints the token on the last line"))
    .requiredOption("--user <id>", "the user it authenticates")
    .option("--description <text>", "what it is for", "")
    .option("--ttl <duration>", "lifetime, e.g. 30d, 12h (default: no expiry)")
    .option("--reach <selector>", "label selector narrowing the user's reach for this token", "")
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions & { user: string; description: string; ttl?: string; reach: string }) => {
      let ttlMs: number | undefined;
      if (opts.ttl) {
        const m = /^(\d+)d$/.exec(opts.ttl.trim());
        try {
          ttlMs = m ? Number(m[1]) * 86_400_000 : parseDuration(opts.ttl);
        } catch {
          flagError("--ttl", `"${opts.ttl}" is not a duration (e.g. 90d, 12h, 30m)`);
        }
      }
      const url = managerUrl(opts);
      const res = url
        ? await rpcClients(url, opts).identity.createToken({ userId: opts.user, description: opts.description, ttlSeconds: BigInt(Math.round((ttlMs ?? 0) / 1000)), reach: opts.reach })
        : await withAdminCore(opts, "ongrid.v1.IdentityService/CreateToken", { userId: opts.user, description: opts.description, ttlMs, reach: opts.reach }, async (core, actor) => {
            const r = await core.identity.createToken(opts.user, { description: opts.description, ttlMs, reach: opts.reach, by: actor.userId });
            return { token: r.token, info: tokenToProto(r.info) };
          });
      if (opts.json) console.log(JSON.stringify({ token: res.token, ...tokenJson(res.info!) }));
      else {
        const i = res.info!;
        console.error(`token ${i.id} for "${i.userId}"${i.expiresAt ? `, expires ${when(i.expiresAt)}` : ", no expiry"}${i.reach ? `, reach ${i.reach}` : ""}; it is shown only now:`);
        console.log(res.token);
      }
    });

  withCoreOptions(cmd.command("list").description("list tokens (never the tokens themselves)"))
    .option("--user <id>", "only this user's")
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions & { user?: string }) => {
      const url = managerUrl(opts);
      const tokens = url
        ? (await rpcClients(url, opts).identity.listTokens({ userId: opts.user ?? "" })).tokens
        : (await withCore(opts, (core) => core.identity.listTokens(opts.user))).map(tokenToProto);
      if (opts.json) return console.log(JSON.stringify(tokens.map(tokenJson), null, 2));
      printTable(
        tokens.map((t) => ({
          id: t.id,
          user: t.userId,
          state: t.revokedAt ? "revoked" : t.expiresAt && timestampDate(t.expiresAt).getTime() <= Date.now() ? "expired" : "active",
          expires: when(t.expiresAt) || "never",
          last_used: when(t.lastUsedAt) || "never",
          reach: t.reach,
          description: t.description,
        })),
        ["id", "user", "state", "expires", "last_used", "reach", "description"],
      );
    });

  withCoreOptions(cmd.command("revoke").description("revoke a token; it stops working from the next call").argument("<id>")).action(async (id: string, opts: CoreOptions) => {
    const url = managerUrl(opts);
    if (url) await rpcClients(url, opts).identity.revokeToken({ id });
    else await withAdminCore(opts, "ongrid.v1.IdentityService/RevokeToken", { id }, (core) => core.identity.revokeToken(id));
    console.log(`revoked token ${id}`);
  });
  return cmd;
}
