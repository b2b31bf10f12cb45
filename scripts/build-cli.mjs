#!/usr/bin/env node
// Builds the `ongrid` CLI (and the manager it starts) into prebuilt JavaScript, dist/cli/, with
// esbuild: one ESM entry (main.mjs) and code-split chunks, so a command loads only its own modules
// and no TypeScript is compiled at start. Packages are bundled, except PGlite.
// bin/ongrid.mjs runs the build when it is there and not older than its sources, else the sources
// through tsx. `npm run build:cli`; `prepare`, `prestart`, .ci/run and the test setup run it too.
//
// Paths a module computes from its own location (import.meta.url / import.meta.dirname: the
// migrations, the built-in playbooks, skill-packs/, dist/console) keep pointing at the source tree:
// each such use is rewritten relative to the chunk, which sits in dist/cli/ like every other.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";

const root = resolve(import.meta.dirname, "..");
const outdir = join(root, "dist", "cli");
const quiet = process.argv.includes("--quiet");

let esbuild;
try {
  esbuild = await import("esbuild");
} catch {
  // An install without esbuild (it comes with tsx): the CLI runs from source, as in development.
  console.error("build-cli: esbuild is not installed; the CLI will run from source through tsx");
  process.exit(0);
}

/** Rewrites import.meta.url / import.meta.dirname of a source file into the same place seen from dist/cli/. */
const sourceLocation = {
  name: "source-location",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      let text = readFileSync(args.path, "utf8");
      if (text.includes("import.meta.")) {
        const file = relative(outdir, args.path).split(sep).join("/");
        const dir = relative(outdir, dirname(args.path)).split(sep).join("/");
        text = text
          .replaceAll("import.meta.url", `new URL(${JSON.stringify(file)}, import.meta.url).href`)
          .replaceAll("import.meta.dirname", `(import.meta.dirname + ${JSON.stringify(`/${dir}`)})`);
      }
      return { contents: text, loader: "ts" };
    });
  },
};

/**
 * The config validator compiled ahead of time: manager/config/validator.ts, run once here (bundled
 * to a temporary module), gives Ajv's standalone code for the schema, which replaces that module
 * in the build. Compiling it at each start was a third of `ongrid skills list --manager`.
 */
async function configValidatorModule() {
  const gen = join(root, "dist", `.config-validator.${process.pid}.mjs`);
  await esbuild.build({
    absWorkingDir: root,
    stdin: {
      contents: 'export { createConfigAjv } from "./manager/config/validator.ts"; export { CONFIG_SCHEMA } from "./manager/config/schema.ts"; export { default as standaloneCode } from "ajv/dist/standalone/index.js";',
      resolveDir: root,
      loader: "ts",
    },
    outfile: gen,
    bundle: true,
    format: "esm",
    platform: "node",
    packages: "external",
    logLevel: "warning",
  });
  try {
    const { createConfigAjv, CONFIG_SCHEMA, standaloneCode } = await import(pathToFileURL(gen).href);
    const ajv = createConfigAjv({ code: { source: true, esm: true } });
    const code = standaloneCode(ajv, ajv.compile(CONFIG_SCHEMA));
    return `${code}\n/** Compiled by scripts/build-cli.mjs from manager/config/validator.ts. */\nexport function configValidator() { return validate; }\n`;
  } finally {
    rmSync(gen, { force: true });
  }
}
const configValidator = await configValidatorModule();
const precompiled = {
  name: "precompiled-config-validator",
  setup(build) {
    build.onLoad({ filter: /[\\/]manager[\\/]config[\\/]validator\.ts$/ }, () => ({ contents: configValidator, loader: "js", resolveDir: join(root, "manager", "config") }));
  },
};

/** Whether two directories hold the same files with the same bytes. */
function sameFiles(a, b) {
  if (!existsSync(b)) return false;
  const names = readdirSync(a).sort();
  const other = readdirSync(b).sort();
  return names.length === other.length && names.every((n, i) => n === other[i] && readFileSync(join(a, n)).equals(readFileSync(join(b, n))));
}

const started = Date.now();
// Build into a fresh directory and swap it in, so a running CLI never sees half a build.
const tmp = `${outdir}.${process.pid}.tmp`;
rmSync(tmp, { recursive: true, force: true });
const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { main: "manager/cli/main.ts" },
  outdir: tmp,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.11",
  // Packages are bundled too (Node resolving and loading hundreds of files costs more than the
  // parse); PGlite stays in node_modules, it finds its WebAssembly and data files beside itself.
  external: ["@electric-sql/pglite", "@electric-sql/pglite/*"],
  // CommonJS packages inside an ES module still call require() for Node's own modules.
  banner: { js: 'import { createRequire as __ongridRequire } from "node:module"; const require = __ongridRequire(import.meta.url);' },
  chunkNames: "[name]-[hash]",
  outExtension: { ".js": ".mjs" },
  sourcemap: "linked",
  sourcesContent: false,
  legalComments: "none",
  logLevel: "warning",
  metafile: true,
  plugins: [precompiled, sourceLocation],
});
// The inputs, so bin/ongrid.mjs can tell a build older than its sources (then it runs the sources).
if (process.env.ONGRID_BUILD_META) writeFileSync(process.env.ONGRID_BUILD_META, JSON.stringify(result.metafile));
const inputs = Object.keys(result.metafile.inputs).filter((p) => !p.startsWith("node_modules/"));
writeFileSync(join(tmp, "inputs.json"), JSON.stringify(inputs));
mkdirSync(dirname(outdir), { recursive: true });
if (sameFiles(tmp, outdir)) {
  // The build is deterministic: an unchanged one leaves dist/cli in place (a CLI running from it
  // meanwhile, say in a test run beside `npm start`, never loses a chunk) and only renews the stamp.
  const now = new Date();
  utimesSync(join(outdir, "inputs.json"), now, now);
  rmSync(tmp, { recursive: true, force: true });
} else {
  rmSync(outdir, { recursive: true, force: true });
  renameSync(tmp, outdir);
}
if (!quiet) console.log(`built ${relative(root, outdir)}/ from ${inputs.length} sources in ${Date.now() - started} ms`);
