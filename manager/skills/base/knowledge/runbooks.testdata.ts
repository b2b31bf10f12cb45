/** Realistic Markdown runbooks the knowledge tests index (unit and end to end). */
import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** Relative path → content. */
export const RUNBOOKS: Record<string, string> = {
  "disk-full.md": `---
title: Disk full on /var
owner: sre
---

When an alert says a filesystem is above 95%, or writes fail with \`No space left on device\`:

1. Find the filesystem: \`df -h\` and \`df -i\` (inodes run out too).
2. Find what grew: \`du -xh --max-depth=2 /var | sort -h | tail\`.
3. The usual culprits are the journal (\`journalctl --vacuum-size=500M\`), nginx access logs
   that logrotate did not compress, and core dumps in /var/crash.
4. Space not freed after deleting? A process still holds the file open: \`lsof +L1\`, then
   restart that service.

Never delete files under /var/lib/postgresql by hand.
`,
  "web/nginx-502.md": `# Nginx returns 502 Bad Gateway

Users see \`502 Bad Gateway\`; the nginx error log says
\`upstream prematurely closed connection while reading response header from upstream\`
or \`connect() failed (111: Connection refused) while connecting to upstream\`.

## Check

- Is the application server up? \`systemctl status app.service\`, \`ss -ltnp\` for its port.
- Did it run out of workers or memory? Look for the OOM killer in \`dmesg\`.
- Is \`proxy_read_timeout\` shorter than the slowest request?

## Fix

Restart the upstream application server, then watch the gateway error rate fall. Raise the
worker count if the pool was exhausted.
`,
  "databases/postgres-connection-limit.md": `# PostgreSQL: too many connections

Clients fail with \`FATAL: sorry, too many clients already\` or
\`remaining connection slots are reserved for non-replication superuser connections\`.

## Check

- \`select count(*), state from pg_stat_activity group by state;\` — many \`idle in transaction\`
  sessions mean an application leaks transactions.
- Compare with \`show max_connections;\`.

## Fix

Put pgbouncer in front (pool_mode = transaction) rather than raising max_connections; each
backend costs memory. Terminate leaked sessions with \`pg_terminate_backend(pid)\`.
`,
  "notes.txt": "nginx 502 scratch notes, not a runbook\n",
};

/** Writes RUNBOOKS under dir, last modified an hour ago (runbooks that have been there a while). */
export function writeRunbooks(dir: string): void {
  const anHourAgo = new Date(Date.now() - 3_600_000);
  for (const [rel, text] of Object.entries(RUNBOOKS)) {
    const path = join(dir, rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    utimesSync(path, anHourAgo, anHourAgo);
  }
}
