import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { createDirectoryRecall, indexLine, terms, type RecalledPage } from "./recall.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "ongrid-recall-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function page(path: string, text: string): void {
  mkdirSync(join(dir, path, ".."), { recursive: true });
  writeFileSync(join(dir, path), text);
}

const REDIS = `---
title: Redis connection timeout on cache hosts
summary: conntrack table full on the host dropped new connections
playbook: network_diagnosis
---
# A heading that the frontmatter title overrides

On cache-1 the conntrack table was full; raised nf_conntrack_max.
`;

describe("indexLine", () => {
  const p: RecalledPage = { id: "2024/redis.md", title: "Redis timeouts", summary: "conntrack full", playbook: "network_diagnosis", body: "long body", score: 1 };
  test("title — summary [playbook: name] (id), never the body", () => {
    expect(indexLine(p)).toBe("- Redis timeouts — conntrack full [playbook: network_diagnosis] (2024/redis.md)");
  });
  test("summary and playbook are left out when empty", () => {
    expect(indexLine({ ...p, summary: "", playbook: "" })).toBe("- Redis timeouts (2024/redis.md)");
    expect(indexLine({ ...p, summary: "" })).toBe("- Redis timeouts [playbook: network_diagnosis] (2024/redis.md)");
  });
});

describe("terms", () => {
  test("lower-case words of 2+ characters without stop words; dotted and dashed names stay whole", () => {
    expect([...terms("The Redis on cache-1 is DOWN, see nginx.service a")].sort()).toEqual(["cache-1", "down", "nginx.service", "redis", "see"]);
  });
  test("CJK runs become character pairs; a lone character stays", () => {
    expect([...terms("缓存连接超时")].sort()).toEqual(["存连", "接超", "缓存", "超时", "连接"].sort());
    expect([...terms("卡 redis")].sort()).toEqual(["redis", "卡"]);
  });
});

describe("createDirectoryRecall", () => {
  test("frontmatter gives title, summary and playbook; the body is the page without its frontmatter", () => {
    page("redis.md", REDIS);
    const [hit, ...rest] = createDirectoryRecall(dir).search("redis connection timeout on cache-1", 3);
    expect(rest).toEqual([]);
    expect(hit).toMatchObject({
      id: "redis.md",
      title: "Redis connection timeout on cache hosts",
      summary: "conntrack table full on the host dropped new connections",
      playbook: "network_diagnosis",
    });
    expect(hit.body.startsWith("# A heading that the frontmatter title overrides")).toBe(true);
    expect(hit.body).not.toContain("playbook:");
    expect(hit.score).toBeGreaterThan(0); // the BM25 score
  });

  test("without frontmatter, the first heading is the title and the first paragraph the summary", () => {
    page("reports/disk.md", "# Disk full on db-2\n\nWAL files filled\n/var on db-2.\n\nArchived and pruned them.\n");
    page("notes.md", "WAL archiving on db-2 stopped\nafter the upgrade.\n\nSecond paragraph.\n");
    const hits = createDirectoryRecall(dir).search("WAL files on db-2", 5);
    expect(hits.map((h) => [h.id, h.title, h.summary, h.playbook])).toEqual([
      [join("reports", "disk.md"), "Disk full on db-2", "WAL files filled /var on db-2.", ""],
      ["notes.md", "notes", "WAL archiving on db-2 stopped after the upgrade.", ""],
    ]);
  });

  test("a Chinese query finds a Chinese page by character pairs, and not an unrelated one", () => {
    page("redis-zh.md", "# 缓存连接超时\n\ncache-1 上 redis 连接数打满，conntrack 表满导致新连接超时。\n");
    page("disk-zh.md", "# 磁盘满\n\ndb-2 的 WAL 日志写满了 /var 分区。\n");
    const recall = createDirectoryRecall(dir);
    expect(recall.search("缓存服务连接超时了", 3).map((p) => p.id)).toEqual(["redis-zh.md"]);
    expect(recall.search("磁盘空间满了", 3).map((p) => p.id)).toEqual(["disk-zh.md"]);
    expect(recall.search("证书过期", 3)).toEqual([]);
  });

  test("a single query word is enough only when the query is short; longer queries need two", () => {
    page("redis.md", REDIS);
    const recall = createDirectoryRecall(dir);
    expect(recall.search("redis", 3).map((p) => p.id)).toEqual(["redis.md"]);
    expect(recall.search("redis deployment rollout stuck", 3)).toEqual([]);
  });

  test("the best pages first, at most `limit`; ties by id", () => {
    page("a.md", "# Kafka consumer lag\n\nconsumer lag on orders topic.\n");
    page("b.md", "# Kafka consumer lag on orders\n\nconsumer lag on orders topic, partition 3 stuck.\n");
    page("c.md", "# Kafka consumer lag\n\nconsumer lag again.\n");
    page("d.md", "# Nginx reload\n\nunrelated page.\n");
    const recall = createDirectoryRecall(dir);
    const all = recall.search("kafka consumer lag orders partition", 10);
    expect(all.map((p) => p.id)).toEqual(["b.md", "a.md", "c.md"]);
    expect(all[0].score).toBeGreaterThan(all[1].score);
    expect(recall.search("kafka consumer lag orders partition", 2).map((p) => p.id)).toEqual(["b.md", "a.md"]);
    expect(recall.search("kafka consumer lag orders partition", 0)).toEqual([]);
  });

  test("reads the directory on each call: a new page is found without a reload", () => {
    const recall = createDirectoryRecall(dir);
    expect(recall.search("redis connection timeout", 3)).toEqual([]);
    page("redis.md", REDIS);
    expect(recall.search("redis connection timeout", 3).map((p) => p.id)).toEqual(["redis.md"]);
  });

  test("hidden files, non-Markdown files and dangling links are skipped", () => {
    page(".draft.md", "# Redis connection timeout draft\n");
    page("redis.txt", "# Redis connection timeout text\n");
    symlinkSync(join(dir, "gone.md"), join(dir, "dangling.md"));
    page("redis.md", REDIS);
    expect(createDirectoryRecall(dir).search("redis connection timeout", 5).map((p) => p.id)).toEqual(["redis.md"]);
  });

  test("a missing directory, a file instead of a directory, or an empty query recall nothing and do not throw", () => {
    expect(createDirectoryRecall(join(dir, "nope")).search("redis connection timeout", 3)).toEqual([]);
    page("file.md", REDIS);
    expect(createDirectoryRecall(join(dir, "file.md")).search("redis connection timeout", 3)).toEqual([]);
    expect(createDirectoryRecall(dir).search("the and of", 3)).toEqual([]);
  });

  test("broken frontmatter YAML still yields the page, titled from its heading", () => {
    page("bad.md", "---\ntitle: [unclosed\n---\n# Redis connection timeout again\n\nconntrack full.\n");
    const [hit] = createDirectoryRecall(dir).search("redis connection timeout", 3);
    expect(hit).toMatchObject({ id: "bad.md", title: "Redis connection timeout again", summary: "conntrack full.", playbook: "" });
  });
});

describe("recall ranks with the router's method", () => {
  test("stemmed English and word forms meet: a page about 'timeouts' is found by 'timed out connecting'", () => {
    page("redis.md", REDIS);
    page("disk.md", "# Disk full on db-2\n\nWAL files filled /var.\n");
    const hits = createDirectoryRecall(dir).search("Redis connections timing out from app hosts", 3);
    expect(hits.map((h) => h.id)).toEqual(["redis.md"]);
  });
  test("a page sharing several terms is recalled, one sharing a single common word is not", () => {
    page("a.md", "# nginx restarted\n\nnginx restarted after a config change.\n");
    page("b.md", "# nginx 502 from upstream\n\nupstream php-fpm pool exhausted, nginx answered 502.\n");
    expect(createDirectoryRecall(dir).search("nginx answers 502, upstream pool exhausted", 2).map((h) => h.id)).toEqual(["b.md"]);
  });
});
