/**
 * The layout's figures (issue 27): folders under manager/, import circles between production
 * files, files over 300 and 600 lines, the longest functions. `npx tsx scripts/arch.ts [--json]`;
 * test/architecture.test.ts holds the rules these figures must keep.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

export const ROOT = resolve(import.meta.dirname, "..");
const PRODUCTION_DIRS = ["manager", "edge", "skill"];

/** Whether a path is a production source file (not a test, a test kit, generated code or the web console). */
export function isProduction(rel: string): boolean {
  return /\.tsx?$/.test(rel) && !/\.(test|fuzz\.test|testkit|testdata|corpus)\.ts$/.test(rel) && !rel.endsWith(".d.ts") && !rel.startsWith("manager/web/") && !rel.includes("/migrations/");
}

/** Every production file, relative to the root. */
export function productionFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const rel = `${dir}/${name}`;
      if (statSync(join(ROOT, rel)).isDirectory()) walk(rel);
      else if (isProduction(rel)) out.push(rel);
    }
  };
  for (const d of PRODUCTION_DIRS) walk(d);
  return out.sort();
}

/** The files a file imports (relative specifiers only, type-only imports included), relative to the root. */
export function importsOf(rel: string): string[] {
  const text = readFileSync(join(ROOT, rel), "utf8");
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((s) => s.startsWith("./") || s.startsWith("../"))
    .map((s) => relative(ROOT, resolve(ROOT, dirname(rel), s)));
}

/** The import graph's strongly connected components of more than one file (and files importing themselves). */
export function importCircles(files: string[], edgesOf: (file: string) => string[] = importsOf): string[][] {
  const set = new Set(files);
  const edges = new Map(files.map((f) => [f, edgesOf(f).filter((t) => set.has(t))]));
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const strong = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (edges.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const f of files) if (!idx.has(f)) strong(f);
  return out;
}

/** Every function's length in lines (declarations, arrows, methods), longest first. */
export function functionLengths(files: string[]): { file: string; name: string; lines: number }[] {
  const out: { file: string; name: string; lines: number }[] = [];
  for (const file of files) {
    const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node) || ts.isMethodDeclaration(node)) {
        const start = src.getLineAndCharacterOfPosition(node.getStart()).line;
        const end = src.getLineAndCharacterOfPosition(node.getEnd()).line;
        let name = "(anonymous)";
        if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) name = node.name.getText();
        else if (ts.isVariableDeclaration(node.parent)) name = node.parent.name.getText();
        else if (ts.isPropertyAssignment(node.parent)) name = node.parent.name.getText();
        out.push({ file, name, lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(src);
  }
  return out.sort((a, b) => b.lines - a.lines);
}

/** The figures the issue asks for, before and after. */
export function layoutFigures() {
  const files = productionFiles();
  const lines = (f: string) => readFileSync(join(ROOT, f), "utf8").split("\n").length;
  const managerFolders = readdirSync(join(ROOT, "manager")).filter((n) => statSync(join(ROOT, "manager", n)).isDirectory()).length;
  const sizes = files.map((f) => ({ file: f, lines: lines(f) })).sort((a, b) => b.lines - a.lines);
  const circles = importCircles(files);
  return {
    managerFolders,
    productionFiles: files.length,
    circles: circles.length,
    filesInCircles: circles.reduce((n, c) => n + c.length, 0),
    over300: sizes.filter((s) => s.lines > 300),
    over600: sizes.filter((s) => s.lines > 600),
    longest: functionLengths(files).slice(0, 5),
    circleList: circles,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const f = layoutFigures();
  if (process.argv.includes("--json")) console.log(JSON.stringify(f, null, 2));
  else {
    console.log(`folders in manager/: ${f.managerFolders}`);
    console.log(`production files: ${f.productionFiles}`);
    console.log(`import circles: ${f.circles} (${f.filesInCircles} files)`);
    for (const c of f.circleList) console.log(`  - ${c.join(" ↔ ")}`);
    console.log(`files over 300 lines: ${f.over300.length}; over 600: ${f.over600.length}`);
    for (const s of f.over300) console.log(`  ${String(s.lines).padStart(5)} ${s.file}`);
    console.log("longest functions:");
    for (const l of f.longest) console.log(`  ${String(l.lines).padStart(5)} ${l.file} ${l.name}`);
  }
}
