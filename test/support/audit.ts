/** Reading a test manager's audit log. */
import type { Manager } from "../../manager/main.ts";

/** The newest audit row, after the pending batch is written. */
export async function lastAuditRow(m: Pick<Manager, "audit">) {
  await m.audit.flush();
  const rows = await m.audit.list({ limit: 1000 });
  return rows[rows.length - 1];
}
