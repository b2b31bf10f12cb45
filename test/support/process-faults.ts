/**
 * Unhandled rejections (and, when asked, uncaught exceptions) raised in the test's own process,
 * where a manager booted by the test runs: each one that would end a real manager's process. Kept
 * as text with its stack and its enumerable fields (a bare socket error's message says nothing of
 * the promise it rejected; its code and syscall say a little more).
 */
export interface ProcessFaults {
  /** What was seen while watching, one entry each: "unhandledRejection: <stack>[ <fields>]". */
  readonly seen: string[];
  start(): void;
  stop(): void;
}

function describeFault(kind: string, reason: unknown): string {
  if (!(reason instanceof Error)) return `${kind}: ${String(reason)}`;
  let fields = "";
  try {
    fields = Object.keys(reason).length > 0 ? ` ${JSON.stringify(reason)}` : "";
  } catch {
    // circular or otherwise unprintable: the stack alone
  }
  return `${kind}: ${reason.stack ?? reason.message}${fields}`;
}

export function processFaults(opts: { exceptions?: boolean } = {}): ProcessFaults {
  const seen: string[] = [];
  const onRejection = (reason: unknown) => void seen.push(describeFault("unhandledRejection", reason));
  const onException = (err: unknown) => void seen.push(describeFault("uncaughtException", err));
  return {
    seen,
    start() {
      process.on("unhandledRejection", onRejection);
      if (opts.exceptions) process.on("uncaughtException", onException);
    },
    stop() {
      process.off("unhandledRejection", onRejection);
      process.off("uncaughtException", onException);
    },
  };
}
