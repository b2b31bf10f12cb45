/** Running an allowed call (B3, G5): in process or down an edge's tunnel, credentials injected just before it runs and scrubbed from what comes back. */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { credentialParams } from "../../skill/credential.ts";
import { runSkill } from "../../skill/run.ts";
import type { ResultEnvelope } from "../../skill/types.ts";
import type { ManagerConfig } from "../config/schema.ts";
import type { Hub } from "../fleet/hub.ts";
import type { Evidence } from "../fleet/tunnel-calls.ts";
import { injectCredentials, scrubSecrets } from "./credentials/inject.ts";
import type { CredentialStore } from "./credentials/store.ts";
import type { Target } from "./resolve.ts";
import type { Invocation } from "./types.ts";

/** One allowed call as it is run: where, with which params and deadline, and the proof an edge asks of a non-safe call. */
export interface RunRequest {
  target: Target;
  params: Record<string, unknown>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** For a non-safe call: what let it through (an edge refuses such a call without it). */
  evidence?: Evidence;
  /** Who made the call, for a manager skill that makes calls of its own. */
  invocation: Invocation;
}

/** Creates the runner. */
export function createRunner({ hub, config, log, credentials }: { hub: Hub; config: ManagerConfig; log: Logger; credentials?: CredentialStore }) {
  return async function run({ target, params, timeoutMs, signal, evidence, invocation }: RunRequest): Promise<ResultEnvelope> {
    const { skill, edgeId } = target;
    const injected = credentials && credentialParams(skill).length ? await injectCredentials(skill, params, credentials) : { params, secrets: [] };
    // An edge call gets its call id from the hub; one run here gets its own.
    const callId = edgeId ? "" : randomUUID();
    const result = edgeId
      ? await hub.call(edgeId, skill.meta.key, injected.params, timeoutMs, signal, evidence)
      : await runSkill(skill, injected.params, {
          callId,
          timeoutMs,
          outputCapBytes: config.skills.output_cap_bytes,
          log: log.child({ skill: skill.meta.key, call_id: callId }),
          settings: (config.skills as Record<string, unknown>)[skill.meta.key] as Record<string, unknown> | undefined,
          signal,
          invocation,
        });
    return injected.secrets.length ? scrubSecrets(result, injected.secrets) : result;
  };
}
