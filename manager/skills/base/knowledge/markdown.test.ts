import { describe, expect, it } from "vitest";
import { parseMarkdown } from "./markdown.ts";

describe("parseMarkdown", () => {
  it("takes the title from the frontmatter, keeps the frontmatter out of the body", () => {
    const doc = parseMarkdown("---\nowner: sre\ntitle: 'Disk full on /var'\n---\n\n# Something else\n\nRun df -h.\n", "/r/disk.md");
    expect(doc.title).toBe("Disk full on /var");
    expect(doc.body).toBe("# Something else\n\nRun df -h.\n");
  });

  it("falls back to the first level-1 heading outside code fences, then to the file name", () => {
    expect(parseMarkdown("intro\n\n```sh\n# not a heading, a shell comment\n```\n\n## Sub\n\n# Nginx 502 #\n", "x.md").title).toBe("Nginx 502");
    expect(parseMarkdown("---\nowner: sre\n---\n# From the heading\n", "x.md").title).toBe("From the heading");
    expect(parseMarkdown("no heading at all\n", "/runbooks/redis-evictions.md").title).toBe("redis-evictions");
    expect(parseMarkdown("#hashtag is not a heading\n", "/runbooks/tags.md").title).toBe("tags");
  });

  it("keeps a document without frontmatter as it is and cuts an endless title", () => {
    const text = `# ${"x".repeat(1000)}\nbody\n`;
    const doc = parseMarkdown(text, "long.md");
    expect(doc.body).toBe(text);
    expect(doc.title.length).toBe(300);
    expect(doc.title.endsWith("…")).toBe(true);
  });
});
