/** `ongrid credentials set|list|delete`: the credential store (G5). Values are read from a file or stdin, never from flags, and never printed. */
import { readFile, stat } from "node:fs/promises";
import { Command, Option } from "commander";
import { toJson } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { CredentialSchema, type Credential } from "../../proto/gen/ongrid/v1/credential_service_pb.ts";
import { MAX_CREDENTIAL_VALUE_BYTES } from "../../skill/credential.ts";
import { OngridError } from "../../skill/errors.ts";
import { loadCredentialKey } from "../calls/credentials/crypto.ts";
import { checkCredentialName, createCredentialStore, notConfiguredError } from "../calls/credentials/store.ts";
import { credentialToProto } from "../rpc/messages/credential.ts";
import { cliConfig, flagError, managerUrl, printTable, rpcClients, withAdminCore, withCore, withCoreOptions, type CoreOptions } from "./common.ts";

const NO_SECRETS_ON_THE_COMMAND_LINE = "secrets on the command line leak to `ps` and shell history; pipe the value on stdin or pass --from-file FILE";

/** Drops the line breaks a file or `echo` leaves at the end; everything else is kept as it is. */
function withoutTrailingNewline(text: string): string {
  return text.replace(/(?:\r?\n)+$/, "");
}

async function readValueFile(file: string): Promise<string> {
  try {
    const st = await stat(file);
    if (!st.isFile()) flagError("--from-file", `${file} is not a regular file`);
    if (st.size > MAX_CREDENTIAL_VALUE_BYTES + 2) flagError("--from-file", `${file} is ${st.size} bytes; a credential holds at most 64 KiB`);
    return withoutTrailingNewline(await readFile(file, "utf8"));
  } catch (err) {
    if (err instanceof OngridError) throw err;
    return flagError("--from-file", `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

async function readValueStdin(): Promise<string> {
  if (process.stdin.isTTY) console.error("enter the value, then press Ctrl-D (it is read from stdin, not echoed back by ongrid)");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += b.length;
    if (size > MAX_CREDENTIAL_VALUE_BYTES + 2) throw new OngridError("invalid_argument", "value: more than 64 KiB on stdin (rule: at most 64 KiB)");
    chunks.push(b);
  }
  return withoutTrailingNewline(Buffer.concat(chunks).toString("utf8"));
}

async function listCredentials(opts: CoreOptions): Promise<Credential[]> {
  const url = managerUrl(opts);
  if (url) return (await rpcClients(url, opts).credentials.listCredentials({})).credentials;
  // Listing needs no key: names and metadata are stored in the clear.
  return withCore(opts, async (core) => (await createCredentialStore(core.database, undefined).list()).map(credentialToProto));
}

/** Builds the `credentials` command group. */
export function credentialsCommand(): Command {
  const cmd = new Command("credentials").description("store, list and delete the credentials skills use (params name them; values are injected at execution)");

  withCoreOptions(cmd.command("set").description("store (or replace) a credential; the value is read from --from-file or stdin").argument("<name>"))
    .option("--from-file <file>", "read the value from this file (trailing line breaks are dropped)")
    .option("--json", "print JSON")
    .option("--description <text>", "what the credential is for")
    .addOption(new Option("--value <secret>").hideHelp())
    .allowExcessArguments()
    .action(async (name: string, opts: CoreOptions & { fromFile?: string; description?: string; value?: string }, command: Command) => {
      if (opts.value !== undefined) flagError("--value", NO_SECRETS_ON_THE_COMMAND_LINE);
      if (command.args.length > 1) flagError("VALUE", NO_SECRETS_ON_THE_COMMAND_LINE);
      checkCredentialName(name);
      const url = managerUrl(opts);
      // Without a manager, find a missing or broken key before asking for the secret.
      const key = url ? undefined : loadCredentialKey(cliConfig(opts).credentials);
      if (!url && !key) throw notConfiguredError();
      const value = opts.fromFile !== undefined ? await readValueFile(opts.fromFile) : await readValueStdin();
      if (!value) throw new OngridError("invalid_argument", `value: ${opts.fromFile !== undefined ? opts.fromFile : "stdin"} held no value (rule: non-empty)`, "pipe the value on stdin or pass --from-file FILE");
      const description = opts.description ?? "";
      const stored = url
        ? (await rpcClients(url, opts).credentials.putCredential({ name, value, description })).credential!
        : credentialToProto(
            await withAdminCore(opts, "ongrid.v1.CredentialService/PutCredential", { name, description }, (core, actor) => createCredentialStore(core.database, key).put(name, value, description, actor.userId)),
          );
      if (opts.json) console.log(JSON.stringify(toJson(CredentialSchema, stored, { useProtoFieldName: true })));
      else console.log(`stored credential "${stored.name}"`);
    });

  withCoreOptions(cmd.command("list").description("list credential names and metadata (never values)"))
    .option("--json", "print JSON")
    .action(async (opts: CoreOptions) => {
      const creds = await listCredentials(opts);
      if (opts.json) {
        console.log(JSON.stringify(creds.map((c) => toJson(CredentialSchema, c, { useProtoFieldName: true })), null, 2));
        return;
      }
      printTable(
        creds.map((c) => ({
          name: c.name,
          description: c.description,
          updated_at: c.updatedAt ? timestampDate(c.updatedAt).toISOString() : "",
          updated_by: c.updatedBy,
        })),
        ["name", "description", "updated_at", "updated_by"],
      );
    });

  withCoreOptions(cmd.command("delete").description("delete a credential").argument("<name>")).action(async (name: string, opts: CoreOptions) => {
    const url = managerUrl(opts);
    if (url) await rpcClients(url, opts).credentials.deleteCredential({ name });
    else {
      await withAdminCore(opts, "ongrid.v1.CredentialService/DeleteCredential", { name }, async (core) => {
        if (!(await createCredentialStore(core.database, undefined).delete(name))) {
          throw new OngridError("not_found", `credential "${name.slice(0, 80)}" does not exist`, "`ongrid credentials list` shows the stored names");
        }
      });
    }
    console.log(`deleted credential "${name}"`);
  });
  return cmd;
}
