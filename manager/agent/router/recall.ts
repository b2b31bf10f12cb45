/**
 * Recall of past diagnoses for the router (I3 step 2): Markdown pages in a directory (postmortems,
 * finished reports), each reduced to one index line. The router gets index lines only; the whole
 * page is for later stages (progressive disclosure). Best effort: a failure recalls nothing.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { parseDocument } from "yaml";
import { redactString } from "../../../skill/redact.ts";
import { createRankIndex, tokenize } from "./rank.ts";

/** One recalled page. */
export interface RecalledPage {
  /** Path relative to the recall directory. */
  id: string;
  title: string;
  summary: string;
  playbook: string;
  /** The page without its frontmatter. */
  body: string;
  score: number;
}

/** Reads pages on each call, so new reports are found without a reload. */
export interface Recall {
  search(text: string, limit: number): RecalledPage[];
}

const MAX_PAGES = 2000;
const MAX_PAGE_BYTES = 256 * 1024;

/** The one-line form the router prompt holds. */
export function indexLine(p: RecalledPage): string {
  return `- ${p.title}${p.summary ? ` — ${p.summary}` : ""}${p.playbook ? ` [playbook: ${p.playbook}]` : ""} (${p.id})`;
}

/** Lower-case words of 2+ letters, plus character pairs of CJK runs (Chinese has no spaces). */
export function terms(text: string): Set<string> {
  const out = new Set<string>();
  const t = text.toLowerCase();
  for (const w of t.match(/[a-z0-9][a-z0-9_.-]*[a-z0-9]/g) ?? []) if (!STOP.has(w)) out.add(w);
  for (const run of t.match(/[\u3400-\u9fff]+/g) ?? []) {
    if (run.length === 1) out.add(run);
    for (let i = 0; i + 1 < run.length; i++) out.add(run.slice(i, i + 2));
  }
  return out;
}
const STOP = new Set(["the", "and", "for", "with", "from", "this", "that", "was", "are", "not", "but", "has", "have", "its", "our", "on", "in", "at", "to", "of", "is", "it", "an", "as", "by", "or", "be"]);

/**
 * A recall over `<dir>/**.md`; pages may carry frontmatter {title, summary, playbook}, else the
 * first heading and paragraph serve. Pages are ranked with the router's own method (rank.ts: BM25,
 * stemmed English, Chinese bigrams) over title (weight 2), summary (2) and body (1); a page must
 * share at least two of the query's terms (one when the query has at most two), so one common
 * word does not recall a page. `score` is the BM25 score.
 */
export function createDirectoryRecall(dir: string): Recall {
  return {
    search(text, limit) {
      const queryTerms = new Set(tokenize(text));
      if (queryTerms.size === 0 || limit <= 0) return [];
      const pages = new Map<string, RecalledPage>();
      for (const file of markdownFiles(dir)) {
        const page = readPage(dir, file);
        if (page) pages.set(page.id, page);
      }
      if (!pages.size) return [];
      const index = createRankIndex(
        [...pages.values()].map((p) => ({ id: p.id, fields: [{ text: p.title, weight: 2 }, { text: p.summary, weight: 2 }, { text: p.body, weight: 1 }] })),
      );
      const need = queryTerms.size <= 2 ? 1 : 2;
      return index
        .rank(text)
        .filter((r) => r.matched.length >= need)
        .slice(0, limit)
        .map((r) => ({ ...pages.get(r.id)!, score: Math.round(r.score * 1000) / 1000 }));
    },
  };
}

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const n of names) {
      if (out.length >= MAX_PAGES || n.startsWith(".")) continue;
      const p = join(d, n);
      try {
        const st = statSync(p);
        if (st.isDirectory() && depth < 4) walk(p, depth + 1);
        else if (st.isFile() && n.endsWith(".md") && st.size <= MAX_PAGE_BYTES) out.push(p);
      } catch {
        // Removed while listing.
      }
    }
  };
  walk(dir, 0);
  return out;
}

function readPage(dir: string, file: string): RecalledPage | undefined {
  let text: string;
  try {
    // Pages are written by people and may quote secrets: redacted before anything reads them.
    text = redactString(readFileSync(file, "utf8").replace(/\r\n?/g, "\n"));
  } catch {
    return undefined;
  }
  let meta: Record<string, unknown> = {};
  const fm = /^---\n([\s\S]*?)\n---\n?/.exec(text);
  if (fm) {
    const doc = parseDocument(fm[1]);
    const js = doc.errors.length ? undefined : doc.toJS();
    if (js && typeof js === "object" && !Array.isArray(js)) meta = js;
    text = text.slice(fm[0].length);
  }
  const heading = /^#\s+(.+)$/m.exec(text)?.[1]?.trim();
  const firstParagraph = text.replace(/^#.*$/gm, "").trim().split(/\n\s*\n/)[0]?.replace(/\s+/g, " ").trim() ?? "";
  const str = (v: unknown) => (typeof v === "string" ? v.trim() : "");
  return {
    id: relative(dir, file),
    title: (str(meta.title) || heading || basename(file, ".md")).slice(0, 160),
    summary: (str(meta.summary) || firstParagraph).slice(0, 240),
    playbook: str(meta.playbook),
    body: text.trim(),
    score: 0,
  };
}
