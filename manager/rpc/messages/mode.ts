/** The contract's permission mode as the gate's, for the services. */
import { PermissionMode } from "../../../proto/gen/ongrid/v1/skill_pb.ts";
import type { PermissionMode as Mode } from "../../calls/gate.ts";

/** The contract's mode as the gate's; unspecified → undefined (the configured default). */
export function modeFromProto(m: PermissionMode): Mode | undefined {
  if (m === PermissionMode.UNSPECIFIED) return undefined;
  // An unknown number is passed on as it is: the dispatcher refuses it where refusals are audited.
  return (PermissionMode[m] as Mode | undefined) ?? (String(m) as Mode);
}
