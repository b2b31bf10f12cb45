/** What the knowledge index reads of a Markdown file: its title (frontmatter, else the first `# ` heading, else the file name) and its text. */
import { basename, extname } from "node:path";

/** The longest title kept; a longer one is cut (a heading is a line, not a paragraph). */
const MAX_TITLE = 300;

/** The `title:` of a leading YAML frontmatter block, unquoted; undefined when there is none. */
function frontmatterTitle(lines: string[]): string | undefined {
  if (lines[0]?.trim() !== "---") return undefined;
  for (let i = 1; i < lines.length && i < 200; i++) {
    const line = lines[i]!;
    if (line.trim() === "---" || line.trim() === "...") return undefined;
    const m = /^title\s*:\s*(.*)$/.exec(line);
    if (m) {
      const raw = m[1]!.trim();
      const unquoted = /^(["'])(.*)\1$/.exec(raw)?.[2] ?? raw;
      return unquoted.trim() || undefined;
    }
  }
  return undefined;
}

/** The index of the line after a leading frontmatter block (0 when there is none). */
function frontmatterEnd(lines: string[]): number {
  if (lines[0]?.trim() !== "---") return 0;
  const end = lines.findIndex((l, n) => n > 0 && (l.trim() === "---" || l.trim() === "..."));
  return end > 0 ? end + 1 : 0;
}

/** The first level-1 ATX heading outside fenced code blocks, from line `from`. */
function firstHeading(lines: string[], from: number): string | undefined {
  let fence: string | undefined;
  for (let i = from; i < lines.length; i++) {
    const line = lines[i]!;
    const f = /^\s{0,3}(```|~~~)/.exec(line);
    if (f) {
      if (!fence) fence = f[1];
      else if (f[1] === fence) fence = undefined;
      continue;
    }
    if (fence) continue;
    const h = /^\s{0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (h && h[1]!.trim()) return h[1]!.trim();
  }
  return undefined;
}

/** A runbook as the index holds it. */
export interface MarkdownDoc {
  /** Frontmatter `title:`, else the first `# ` heading, else the file name without `.md`. */
  title: string;
  /** The text without its frontmatter (metadata, not prose: snippets should not quote it). */
  body: string;
}

/** Reads a Markdown file's title and body. */
export function parseMarkdown(text: string, fileName: string): MarkdownDoc {
  const lines = text.split(/\r?\n/);
  const start = frontmatterEnd(lines);
  const title = frontmatterTitle(lines) ?? firstHeading(lines, start) ?? basename(fileName, extname(fileName));
  return {
    title: title.length > MAX_TITLE ? `${title.slice(0, MAX_TITLE - 1)}…` : title,
    body: start ? lines.slice(start).join("\n").replace(/^\s+/, "") : text,
  };
}
