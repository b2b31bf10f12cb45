/** Values the benchmark and its workers share. */

/** The one skill every simulated edge offers: safe, host scope, echoes its `text` param. */
export const BENCH_SKILL = "bench_echo";

/** Size of the bare baseline's broadcast message and of each client's reply, in bytes. */
export const BARE_MESSAGE_BYTES = 64;
