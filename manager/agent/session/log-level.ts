/**
 * The severity of a log line or a structured record (J5, analyze_output): a level field or word
 * in a known log format first, then error and warning words of the message; a record that is not
 * a log message by its fields only. Flags, paths and compound names in command lines are never
 * read as severities.
 */

/** Severity of a line or a shape. */
export type Level = "error" | "warning" | "info";

const LEVEL_WORDS: Readonly<Record<string, Level>> = {
  trace: "info", debug: "info", info: "info", notice: "info",
  warn: "warning", warning: "warning",
  error: "error", err: "error", fatal: "error", critical: "error", crit: "error", panic: "error", emerg: "error", alert: "error", severe: "error",
};
export const PINO_LEVELS: Readonly<Record<string, string>> = { "10": "trace", "20": "debug", "30": "info", "40": "warn", "50": "error", "60": "fatal" };
const GLOG_LEVEL = /^([IWEF])<n> <n>:<n>:<n>/;
// A level field, never a flag's value: "--log-level=ERROR" on a command line is not an error.
const KEYED_LEVEL = /(?<![-\w.])(?:level|lvl|severity|loglevel|log_level|priority)["']?\s*[=:]\s*["']?([A-Za-z]+)/i;
const BRACKET_LEVEL = /\[(trace|debug|info|notice|warn|warning|error|err|crit|critical|alert|emerg|fatal)\]/i;
// A level word stands alone (log prefixes: "ERROR ", "ERROR:", "[ERROR]", "<ERROR>"), never inside a flag, path or name.
const WORD_LEVEL = /(?:^|[\s[\](|:,;"'<>])(TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR|FATAL|CRITICAL|CRIT|PANIC|EMERG|ALERT|SEVERE)(?![A-Za-z0-9_=-])/;
const ERROR_WORDS =
  /\b(?:errors?|err|fatal|panic(?:ked|s)?|exceptions?|traceback|oom(?:[ _-]?kill(?:er|ed)?)?|out of memory|killed|segfault|segmentation fault|core dumped|refused|time ?outs?|timed ?out|failed|failures?|fails?|denied|critical|unreachable|no space left|E(?:CONNREFUSED|CONNRESET|TIMEDOUT|NOSPC|ACCES|HOSTUNREACH))\b|错误|失败|异常|超时/i;
const ERROR_CAMEL = /[a-z](?:Error|Exception)\b/;
const WARNING_WORDS = /\b(?:warn(?:ings?)?|deprecat(?:ed|ion)|retry(?:ing)?|retries|retried|slow|throttl(?:ed|ing))\b|警告/i;

const EDGE_PUNCT = /^["'([{<`]+|["')\]}>`,;:.!?]+$/g;
const PATH_TOKEN = /^(?:[a-z][a-z0-9+.-]*:\/\/|~?\.{0,2}\/)|^[\w.-]+\/[\w./-]*$/i;
const COMPOUND = /[A-Za-z0-9][-_.][A-Za-z0-9]/;
const CLASS_ERROR = /(?:^|\.)[A-Z][A-Za-z0-9]*(?:Error|Exception)$/;
const KEYWORD_WHOLE = new RegExp(`^(?:${ERROR_WORDS.source}|${WARNING_WORDS.source})$`, "i");

/**
 * The words of a line that keyword rules may read: a command-line flag (--suppress-warnings,
 * -XX:OnOutOfMemoryError=…), a path or URL (/var/log/error.log), or a compound name
 * (error-reporter, error_count, app.errors) says nothing about the line's severity, so it is
 * left out; of a key=value pair only the value is read (status=failed); a qualified class name
 * ending in Error or Exception (java.lang.OutOfMemoryError) is kept as what it is.
 */
export function keywordText(shape: string): string {
  const out: string[] = [];
  for (const raw of shape.split(/\s+/)) {
    let t = raw.replace(EDGE_PUNCT, "");
    if (!t) continue;
    if (/^-{1,2}[A-Za-z]/.test(t) || PATH_TOKEN.test(t)) continue;
    const eq = t.indexOf("=");
    if (eq > 0) {
      t = t.slice(eq + 1).replace(EDGE_PUNCT, "");
      if (!t || /^-{1,2}[A-Za-z]/.test(t) || PATH_TOKEN.test(t)) continue;
    }
    if (COMPOUND.test(t) && !KEYWORD_WHOLE.test(t)) {
      if (CLASS_ERROR.test(t)) out.push("ClassError");
      continue;
    }
    out.push(t);
  }
  return out.join(" ");
}

/** Level of a shape: an explicit level field or word wins; otherwise error and warning keywords (in the words keywordText keeps) and HTTP status classes. */
export function shapeLevel(shape: string): Level {
  const head = shape.slice(0, 200);
  const explicit =
    GLOG_LEVEL.exec(head)?.[1] ?? KEYED_LEVEL.exec(head)?.[1] ?? BRACKET_LEVEL.exec(head)?.[1] ?? WORD_LEVEL.exec(head)?.[1];
  if (explicit !== undefined) {
    const glog = { I: "info", W: "warning", E: "error", F: "error" }[explicit] as Level | undefined;
    const level = glog ?? LEVEL_WORDS[explicit.toLowerCase()];
    if (level) return level;
  }
  if (shape.includes("<5xx>")) return "error";
  const words = keywordText(shape);
  if (ERROR_WORDS.test(words) || ERROR_CAMEL.test(words)) return "error";
  if (WARNING_WORDS.test(words) || shape.includes("<4xx>")) return "warning";
  return "info";
}

const ERROR_STATES = /^(?:failed|failure|error|errored|crashed|dead|fatal|oomkilled|crashloopbackoff|imagepullbackoff|errimagepull|unhealthy|down)$/i;
const WARNING_STATES = /^(?:degraded|warning|warn|pending|activating|deactivating|reloading|unknown|evicted)$/i;
const ERROR_KEYS = /^(?:error|err|errors|exception|error_message|errormessage|stack|stacktrace|traceback|panic)$/i;
const STATE_KEYS = /^(?:state|status|active_state|activestate|sub_state|health|result|phase|outcome)$/i;
const EXIT_KEYS = /^(?:exit_code|exitcode|exit_status|exitstatus|returncode|return_code|rc)$/i;
const HTTP_KEYS = /^(?:status|status_code|statuscode|http_status|code|response_code)$/i;

/**
 * The level of a structured record (a JSON object that is not a log message: a process row, a
 * unit, a probe result), from its fields alone: a level field; an error field with a value;
 * success/ok false; a state that names a failure; a non-zero exit code; an HTTP status of 5xx or
 * 4xx. Never from words inside other values (a command line's --suppress-warnings).
 */
export function recordLevel(o: Record<string, unknown>): Level {
  let level: Level = "info";
  const raise = (l: Level) => {
    if (l === "error" || (l === "warning" && level === "info")) level = l;
  };
  for (const [k, v] of Object.entries(o)) {
    if (/^(?:level|lvl|severity|loglevel|log_level|priority)$/i.test(k)) {
      const word = typeof v === "number" ? (PINO_LEVELS[String(v)] ?? (v <= 3 ? "error" : v === 4 ? "warning" : "info")) : typeof v === "string" ? v.toLowerCase() : "";
      const l = LEVEL_WORDS[word];
      if (l) return l;
    } else if (ERROR_KEYS.test(k)) {
      if ((typeof v === "string" && v.trim() !== "") || (v !== null && typeof v === "object" && Object.keys(v).length > 0) || v === true) raise("error");
    } else if ((k === "success" || k === "ok") && v === false) {
      raise("error");
    } else if (EXIT_KEYS.test(k) && typeof v === "number" && v !== 0) {
      raise("error");
    } else if (HTTP_KEYS.test(k) && typeof v === "number" && v >= 400 && v <= 599) {
      raise(v >= 500 ? "error" : "warning");
    } else if (STATE_KEYS.test(k) && typeof v === "string") {
      if (ERROR_STATES.test(v.trim())) raise("error");
      else if (WARNING_STATES.test(v.trim())) raise("warning");
    }
  }
  return level;
}

/** The level of a `path=value` field line: by what its key says (a level, an error, a state), never by words in other values. */
export function fieldLevel(path: string, value: unknown): Level {
  const key = path.slice(path.lastIndexOf(".") + 1).replace(/\[\]$/, "");
  return recordLevel({ [key]: value });
}
