/** Replacement text for a redacted secret value. */
export const REDACTED = "[REDACTED]";
/** Replacement text for a whole PEM private key block. */
export const REDACTED_PRIVATE_KEY = "[REDACTED PRIVATE KEY]";

const MAX_DEPTH = 1000;

// Object keys that name a secret: the whole key or its suffix (db_password, AWS_SECRET_ACCESS_KEY, x-api-key).
const SECRET_NAME =
  /(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|authorization|cookie|credentials?)$/i;
// Names that end like a secret but are not one: pagination cursors and the shell's working directory.
const NOT_SECRET_NAME = /(?:page|next|continuation|continue|sync|resume)[_-]?token$/i;
const WORKING_DIR_NAME = /^(?:OLD)?PWD$/;

/** Whether an object key (or env var / header name) names a secret whose value must never be shown. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) && !NOT_SECRET_NAME.test(name) && !WORKING_DIR_NAME.test(name);
}

/**
 * Deep copy with every string scrubbed and every value under a secret-named key replaced, so
 * outputs, params and errors can reach the model, the audit log and the UI (A5). null and
 * undefined under a secret name stay as they are (absence is not a secret); cycles become
 * "[Circular]"; Dates and binary buffers are kept; an Error becomes {name, message}.
 */
export function redact<T>(value: T): T {
  return walk(value, new Set(), 0) as T;
}

function walk(v: unknown, stack: Set<object>, depth: number): unknown {
  if (typeof v === "string") return redactString(v);
  if (typeof v !== "object" || v === null) return v;
  if (v instanceof Date || v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return v;
  if (depth >= MAX_DEPTH) return "[REDACTED: nested too deep]";
  if (stack.has(v)) return "[Circular]";
  stack.add(v);
  try {
    if (Array.isArray(v)) return v.map((item) => walk(item, stack, depth + 1));
    if (v instanceof Error) return { name: v.name, message: redactString(v.message) };
    const obj = v as Record<string, unknown>;
    // {name: "DB_PASSWORD", value: "..."}: k8s env entries, header lists, settings rows.
    const label = typeof obj.name === "string" ? obj.name : typeof obj.key === "string" ? obj.key : undefined;
    const pairIsSecret = label !== undefined && "value" in obj && isSecretName(label);
    return Object.fromEntries(
      Object.entries(obj).map(([k, item]) => {
        const secret = isSecretName(k) || (pairIsSecret && k === "value");
        return [k, secret && item !== null && item !== undefined ? REDACTED : walk(item, stack, depth + 1)];
      }),
    );
  } finally {
    stack.delete(v);
  }
}

// Every pattern below starts at a literal or at the start of a character run (look-behind) and
// uses bounded or non-overlapping quantifiers, so each pass is linear in the input length.
const PEM_BEGIN = /-----BEGIN ([A-Z0-9 ]{0,40}?)PRIVATE KEY(?: BLOCK)?-----/y;
const PEM_END = /-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----/g;
const HEADER_LINE = /(['"]?)\b((?:proxy-)?authorization|(?:set-)?cookie)([ \t]*:)[ \t]*([^\r\n]+)/gi;
const QUOTED_OR_BARE = `("(?:[^"\\\\\\r\\n]|\\\\.)*"?|'[^'\\r\\n]*'?|[^\\s"'&,;]+)`;
const SECRET_WORD = "(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|credentials?|authorization|cookie)";
const KEY_VALUE = new RegExp(`(${SECRET_WORD})(["']?)([ \\t]*[=:][ \\t]*)(?![:=])${QUOTED_OR_BARE}`, "gi");
const FLAG_VALUE = new RegExp(`(--[A-Za-z0-9_-]{0,48}?${SECRET_WORD})([ \\t]+)(?!-)${QUOTED_OR_BARE}`, "gi");
const BEARER = /\b(bearer)[ \t]+[A-Za-z0-9\-._~+/]+=*/gi;
const URL_PASSWORD = /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/)([^\s:/?#@]{0,256}):([^\s/?#@]{1,1024})@/g;
const TOKEN_SHAPES: readonly RegExp[] = [
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g, // AWS access key id
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g, // Google API key
  /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})/g, // GitHub tokens
  /(?<![A-Za-z0-9-])xox[abposr]-[A-Za-z0-9-]{10,}/g, // Slack tokens
  /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}/g, // OpenAI-style secret keys
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, // JWT
];

/** Scrubs secrets out of free text (command output, logs, error messages) in linear time. */
export function redactString(s: string): string {
  if (s.length === 0) return s;
  let out = redactPem(s);
  out = out.replace(HEADER_LINE, (_m, quote: string, name: string, colon: string, rest: string) => {
    // A quoted header (curl -H 'Authorization: ...') ends at its closing quote, else at the line end.
    const close = quote ? rest.indexOf(quote) : -1;
    return `${quote}${name}${colon} ${REDACTED}${close >= 0 ? rest.slice(close) : ""}`;
  });
  out = out.replace(KEY_VALUE, (m, word: string, quote: string, sep: string, value: string, offset: number, all: string) =>
    keepsValue(word, all, offset) ? m : `${word}${quote}${sep}${maskValue(value)}`,
  );
  out = out.replace(FLAG_VALUE, (m, flag: string, gap: string, value: string) =>
    isSecretName(flag.slice(2)) ? `${flag}${gap}${maskValue(value)}` : m,
  );
  out = out.replace(BEARER, (_m, word: string) => `${word} ${REDACTED}`);
  out = out.replace(URL_PASSWORD, (_m, scheme: string, user: string) => `${scheme}${user}:${REDACTED}@`);
  for (const re of TOKEN_SHAPES) out = out.replace(re, REDACTED);
  return out;
}

/** Keeps quotes around a redacted value so JSON-ish text stays readable. */
function maskValue(value: string): string {
  const q = value[0];
  if (q === '"' || q === "'") return `${q}${REDACTED}${value.length > 1 && value.endsWith(q) ? q : ""}`;
  return REDACTED;
}

/** PWD/OLDPWD (working directories) and page/next tokens (pagination cursors) are not secrets. */
function keepsValue(word: string, all: string, offset: number): boolean {
  const before = all.slice(Math.max(0, offset - 16), offset);
  if (word === "PWD") return /(?:^|[^A-Za-z0-9_])(?:OLD)?$/.test(before);
  return word.toLowerCase() === "token" && NOT_SECRET_NAME.test(`${before}${word}`);
}

function redactPem(s: string): string {
  let begin = s.indexOf("-----BEGIN ");
  if (begin < 0) return s;
  let out = "";
  let pos = 0;
  while (begin >= 0) {
    PEM_BEGIN.lastIndex = begin;
    const head = PEM_BEGIN.exec(s);
    if (!head) {
      begin = s.indexOf("-----BEGIN ", begin + 1);
      continue;
    }
    PEM_END.lastIndex = begin + head[0].length;
    const tail = PEM_END.exec(s);
    // An unterminated key (cut output) is still a key: redact to the end.
    const end = tail ? tail.index + tail[0].length : s.length;
    out += s.slice(pos, begin) + REDACTED_PRIVATE_KEY;
    pos = end;
    begin = end < s.length ? s.indexOf("-----BEGIN ", end) : -1;
  }
  return out + s.slice(pos);
}
