/** ongrid.v1.PlaybookService: the playbook registry (list, read, reload) and the router. */
import type { ServiceImpl } from "@connectrpc/connect";
import { PlaybookService } from "../../../proto/gen/ongrid/v1/playbook_service_pb.ts";
import { OngridError } from "../../../skill/errors.ts";
import type { Router } from "../../agent/router/router.ts";
import type { PlaybookRegistry } from "../../playbooks/registry.ts";
import { callerOf } from "../../identity/caller.ts";
import { playbookToProto, decisionToProto, listPlaybooksResponse, problemToProto } from "../messages/playbook.ts";

/** Builds the PlaybookService implementation. */
export function createPlaybookService(deps: { playbooks: PlaybookRegistry; router: Router; reloadEverywhere?(what: "playbooks"): void }): ServiceImpl<typeof PlaybookService> {
  const { playbooks, router } = deps;
  return {
    listPlaybooks() {
      return listPlaybooksResponse(playbooks.current());
    },
    getPlaybook(req) {
      const p = playbooks.get(req.name);
      if (!p) throw new OngridError("not_found", `no playbook named "${req.name.slice(0, 64)}"`, "ListPlaybooks shows the loaded playbooks");
      return { playbook: playbookToProto(p, true) };
    },
    reload() {
      const r = playbooks.reload();
      // The other managers sharing the database reload their own playbook directories too.
      deps.reloadEverywhere?.("playbooks");
      return { added: r.added, changed: r.changed, removed: r.removed, loaded: r.loaded, problems: r.problems.map(problemToProto), skipped: r.skipped, generation: BigInt(r.generation) };
    },
    async route(req, ctx) {
      const caller = callerOf(ctx);
      const d = await router.route({ text: req.text, rulesOnly: req.rulesOnly, userId: caller.onBehalfOf ?? caller.userId, sessionId: req.sessionId, signal: ctx.signal });
      return { decision: decisionToProto(d) };
    },
  };
}
