/**
 * Real headless Chromium for the console tests (Debian's `chromium`, driven by playwright-core).
 * Without a browser the tests skip and say why; under CI (CI=true) a missing browser is a failure.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { ROOT } from "./cli.ts";

/** The browser binary: $ONGRID_CHROMIUM or Debian's /usr/bin/chromium. */
export const CHROMIUM = process.env.ONGRID_CHROMIUM || "/usr/bin/chromium";

/** Flags for a headless Chromium on a closed network as root (see the machine notes). */
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"];

/** `describe` that runs where Chromium exists, skips with the reason elsewhere, fails under CI. */
export function describeInBrowser(name: string, fn: () => void): void {
  if (existsSync(CHROMIUM)) {
    describe(name, fn);
    return;
  }
  const why = `no Chromium at ${CHROMIUM} (install Debian's chromium package, or set ONGRID_CHROMIUM)`;
  if (process.env.CI === "true") {
    describe(name, () => {
      throw new Error(`${why}; under CI the console tests must run (.ci/run installs chromium)`);
    });
    return;
  }
  console.warn(`skipping "${name}": ${why}`);
  describe.skip(name, fn);
}

/** Launches headless Chromium. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

/** Opens the console at `url` in a fresh context (1280×800 unless told) and logs in with `token`. */
export async function openConsole(browser: Browser, url: string, token: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  await page.goto(url);
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByTestId("whoami").waitFor();
  return page;
}

/**
 * Saves a screenshot of the page: into docs/screenshots/ when ONGRID_SCREENSHOTS=1 (what
 * `npm run screenshots` sets, to refresh the README's pictures), else into a scratch directory.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir = process.env.ONGRID_SCREENSHOTS === "1" ? join(ROOT, "docs", "screenshots") : join(ROOT, "dist", "screenshots");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
