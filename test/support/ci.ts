/** Under CI (CI=true) a test that needs a host tool or privilege must run: a skip there would hide a missing install step. */
import { it } from "vitest";

/**
 * Registers a test that, under CI, fails naming why `what` would be skipped (`reason()` is read
 * when the test runs, after the file's beforeAll hooks have tried their setup). Outside CI the
 * tests that need the tool skip as before and say why.
 */
export function requiredUnderCi(what: string, reason: () => string | undefined): void {
  it.runIf(process.env.CI === "true")(`runs ${what} under CI (.ci/run installs the tools and runs as root)`, () => {
    const why = reason();
    if (why) throw new Error(`${what} would be skipped: ${why}; under CI=true it must run`);
  });
}
