/** Vite build of the console: a static single-page app the manager serves on its one port. */
import { defineConfig } from "vite";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "../..");

export default defineConfig({
  root: import.meta.dirname,
  base: "/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "react" } },
  build: {
    outDir: resolve(ROOT, "dist", "console"),
    emptyOutDir: true,
    // No inline scripts or styles: the manager serves the console under a strict CSP.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1500,
    sourcemap: false,
    rolldownOptions: {
      // RJSF marks some modules "use client" (a React Server Components hint meaningless here).
      onwarn(warning, warn) {
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
});
