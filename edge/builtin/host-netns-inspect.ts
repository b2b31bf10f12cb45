/** host_netns_inspect (D3): named network namespaces with their interfaces, addresses and routes (iproute2 JSON). */
import { defineSkill } from "../../skill/define.ts";
import { HOST_NETNS_INSPECT } from "../../skill/catalog/host-netns-inspect.ts";
import { SkillError } from "../../skill/errors.ts";
import { ProcessStartError, runProcess, SYSTEM_PATH } from "../../skill/subprocess.ts";

/** Namespaces reported at most per call; the rest are counted. */
const MAX_NAMESPACES = 64;
const CONCURRENCY = 4;
const DENIED = /Permission denied|Operation not permitted/i;

interface IpAddrInfo {
  family?: string;
  local?: string;
  prefixlen?: number;
}
interface IpLink {
  ifname?: string;
  operstate?: string;
  flags?: string[];
  mtu?: number;
  address?: string;
  link?: string;
  link_type?: string;
  addr_info?: IpAddrInfo[];
}
interface IpRoute {
  dst?: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  scope?: string;
  prefsrc?: string;
  metric?: number;
}

export default defineSkill({
  ...HOST_NETNS_INSPECT,
  async execute(ctx, params) {
    const bin = typeof ctx.settings.ip === "string" && ctx.settings.ip ? ctx.settings.ip : "ip";
    const ip = async (args: string[]): Promise<{ ok: true; json: unknown } | { ok: false; error: string }> => {
      let r;
      try {
        r = await runProcess({ file: bin, args, env: { PATH: SYSTEM_PATH, LANG: "C" }, signal: ctx.signal, timeoutMs: Math.max(1, ctx.deadline - Date.now()), maxOutputBytes: 8 * 1024 * 1024 });
      } catch (err) {
        if (err instanceof ProcessStartError) throw new SkillError("tool_missing", `the ip command (iproute2) cannot be started: ${err.message}`, "Install iproute2 on the host (apt install iproute2 / dnf install iproute), or set skills.host_netns_inspect.ip to its path.");
        throw err;
      }
      if (r.cancelled || r.timedOut) throw new SkillError("deadline_exceeded", `ip ${args.join(" ")} did not finish before the call's deadline`, "Retry for one namespace at a time.");
      const stderr = r.stderr.trim();
      if (r.exitCode !== 0) return { ok: false, error: stderr || `exit ${r.exitCode ?? r.signal}` };
      const text = r.stdout.trim();
      if (text === "") return { ok: true, json: [] };
      try {
        return { ok: true, json: JSON.parse(text) };
      } catch {
        return { ok: false, error: `ip ${args.join(" ")} did not print JSON (iproute2 too old for -j?)` };
      }
    };

    const list = await ip(["-j", "netns", "list"]);
    if (!list.ok) {
      if (DENIED.test(list.error)) throw denied(list.error);
      throw new SkillError("ip_failed", `ip netns list failed: ${list.error}`, "Check that iproute2 supports -j (JSON output, iproute2 4.13 or later).");
    }
    const all = (Array.isArray(list.json) ? list.json : [])
      .filter((n): n is { name: string; id?: number } => typeof n?.name === "string")
      .map((n) => ({ name: n.name, id: typeof n.id === "number" ? n.id : null }));
    let chosen = all;
    if (params.namespace !== undefined) {
      chosen = all.filter((n) => n.name === params.namespace);
      if (chosen.length === 0) {
        const known = all.map((n) => n.name);
        throw new SkillError(
          "namespace_not_found",
          `there is no network namespace named ${JSON.stringify(params.namespace)}`,
          known.length ? `Known namespaces: ${known.slice(0, 20).join(", ")}${known.length > 20 ? ", …" : ""}. Call without namespace to see them all.` : "This host has no named network namespaces (ip netns list is empty); container runtimes may keep unnamed ones under /proc/PID/ns/net.",
        );
      }
    }
    const shown = chosen.slice(0, MAX_NAMESPACES);
    const namespaces = new Array(shown.length);
    const inspect = async (name: string, id: number | null) => {
      const addr = await ip(["-n", name, "-j", "addr", "show"]);
      const route4 = await ip(["-n", name, "-j", "-4", "route", "show"]);
      const route6 = await ip(["-n", name, "-j", "-6", "route", "show"]);
      const failure = [addr, route4, route6].find((r) => !r.ok) as { error: string } | undefined;
      if (failure && DENIED.test(failure.error)) throw denied(failure.error);
      const links = addr.ok && Array.isArray(addr.json) ? (addr.json as IpLink[]) : [];
      const routes = [
        ...(route4.ok && Array.isArray(route4.json) ? (route4.json as IpRoute[]).map((r) => ({ ...r, family: "inet" })) : []),
        ...(route6.ok && Array.isArray(route6.json) ? (route6.json as IpRoute[]).map((r) => ({ ...r, family: "inet6" })) : []),
      ];
      return {
        name,
        id,
        interfaces: links.map((l) => ({
          name: l.ifname ?? "",
          state: l.operstate ?? "UNKNOWN",
          flags: l.flags ?? [],
          mtu: l.mtu ?? null,
          mac: l.address ?? null,
          addresses: (l.addr_info ?? []).filter((a) => a.local).map((a) => `${a.local}/${a.prefixlen}`),
          ...(l.link ? { peer: l.link } : {}),
        })),
        routes: routes.map((r) => ({
          family: r.family,
          dst: r.dst ?? "",
          gateway: r.gateway ?? null,
          dev: r.dev ?? null,
          protocol: r.protocol ?? null,
          scope: r.scope ?? null,
          ...(r.prefsrc ? { prefsrc: r.prefsrc } : {}),
          ...(r.metric !== undefined ? { metric: r.metric } : {}),
        })),
        ...(failure ? { error: failure.error } : {}),
      };
    };
    let next = 0;
    const worker = async () => {
      while (next < shown.length) {
        const i = next++;
        namespaces[i] = await inspect(shown[i].name, shown[i].id);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, shown.length) }, worker));
    return { namespaces, count: namespaces.length, total: chosen.length, ...(chosen.length > shown.length ? { truncated: true } : {}) };
  },
});

function denied(detail: string): SkillError {
  return new SkillError("permission_denied", `entering network namespaces was refused: ${detail}`, "The edge needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) to inspect network namespaces.");
}
