/** web_search (D6): a manager skill that queries a SearXNG-compatible JSON API at a configured URL. */
import { readCapped } from "../../../skill/read-capped.ts";
import { defineSkill } from "../../../skill/define.ts";
import { SkillError } from "../../../skill/errors.ts";
import { parseDuration } from "../../../skill/duration.ts";

interface SearxResult {
  title?: unknown;
  url?: unknown;
  content?: unknown;
  engine?: unknown;
  publishedDate?: unknown;
}

const HINT_CONFIG = "check skills.web_search.url (ONGRID_WEB_SEARCH_URL) points at a SearXNG instance with the json format enabled";

function str(v: unknown, max = 2000): string {
  return typeof v === "string" ? v.slice(0, max) : "";
}

const MAX_BODY_BYTES = 2 * 1024 * 1024;


export default defineSkill({
  key: "web_search",
  name: "Web search",
  description:
    "Search the public web through the configured SearXNG-compatible endpoint. Use when an error message, CVE, vendor advisory or software version needs context the fleet cannot provide; returns titles, URLs and snippets, not full pages.",
  class: "safe",
  scope: "manager",
  category: "search",
  params: {
    query: { type: "string", description: "What to search for, e.g. an exact error message.", required: true, min: 1, max: 500 },
    limit: { type: "integer", description: "How many results to return.", min: 1, max: 50, default: 5 },
    category: {
      type: "enum",
      description: "SearXNG category to search in.",
      values: ["general", "it", "news", "science"],
      default: "general",
    },
    language: { type: "string", description: "Result language code, e.g. en or de-DE.", pattern: "^[a-z]{2}(-[A-Z]{2})?$" },
    time_range: { type: "enum", description: "Only results from this period.", values: ["day", "week", "month", "year"] },
  },
  resultPreview: JSON.stringify({
    query: "nginx 502 bad gateway upstream prematurely closed",
    results: [{ title: "…", url: "https://…", snippet: "…", engine: "duckduckgo" }],
    returned: 1,
  }),
  async execute(ctx, params) {
    const settings = ctx.settings as { url?: string; timeout?: string; max_results?: number };
    const base = settings.url ?? "";
    if (!base) {
      throw new SkillError("not_configured", "web_search has no endpoint configured", HINT_CONFIG);
    }
    const url = new URL(base);
    url.searchParams.set("q", params.query);
    url.searchParams.set("format", "json");
    url.searchParams.set("categories", params.category);
    if (params.language) url.searchParams.set("language", params.language);
    if (params.time_range) url.searchParams.set("time_range", params.time_range);
    const timeoutMs = parseDuration(settings.timeout ?? "10s");
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { signal, headers: { accept: "application/json" } });
      text = await readCapped(res, MAX_BODY_BYTES, () => new SkillError("upstream_bad_response", `search endpoint's answer exceeds ${MAX_BODY_BYTES} bytes`, HINT_CONFIG));
    } catch (err) {
      if (ctx.signal.aborted || err instanceof SkillError) throw err;
      const e = err as Error & { cause?: { code?: string } };
      if (e.name === "TimeoutError") {
        throw new SkillError("upstream_timeout", `search endpoint did not answer within ${settings.timeout ?? "10s"}`, "retry later or raise skills.web_search.timeout");
      }
      throw new SkillError("upstream_unavailable", `cannot reach the search endpoint ${url.origin}: ${e.cause?.code ?? e.message}`, HINT_CONFIG);
    }
    if (res.status === 403) {
      throw new SkillError("upstream_refused", `search endpoint refused the JSON format (HTTP 403)`, "enable `json` under search.formats in SearXNG's settings.yml");
    }
    if (!res.ok) {
      throw new SkillError("upstream_error", `search endpoint answered HTTP ${res.status}`, res.status === 429 ? "the endpoint is rate limiting; wait and retry" : HINT_CONFIG);
    }
    let body: { results?: unknown; answers?: unknown; suggestions?: unknown };
    try {
      body = JSON.parse(text);
    } catch {
      throw new SkillError("upstream_bad_response", "search endpoint did not return JSON", HINT_CONFIG);
    }
    if (!body || !Array.isArray(body.results)) {
      throw new SkillError("upstream_bad_response", "search endpoint's JSON has no results array", HINT_CONFIG);
    }
    const max = Math.min(params.limit, settings.max_results ?? 10);
    const results = (body.results as SearxResult[]).slice(0, max).map((r) => ({
      title: str(r.title, 300),
      url: str(r.url, 2000),
      snippet: str(r.content, 1000),
      engine: str(r.engine, 100),
      ...(typeof r.publishedDate === "string" ? { published: r.publishedDate } : {}),
    }));
    const answers = Array.isArray(body.answers) ? body.answers.filter((a): a is string => typeof a === "string").slice(0, 3) : [];
    return { query: params.query, results, returned: results.length, ...(answers.length ? { answers } : {}) };
  },
});
