/** Replacement text for a redacted secret value. */
export const REDACTED = "[REDACTED]";
/** Replacement text for a whole PEM private key block. */
export const REDACTED_PRIVATE_KEY = "[REDACTED PRIVATE KEY]";

const MAX_DEPTH = 1000;

/**
 * The one list of words that make a name secret-like (as regular-expression fragments): an object
 * key, env var, header, flag or param name is secret when it ends with one of them (db_password,
 * AWS_SECRET_ACCESS_KEY, x-api-key, AccountKey), unless it is a pagination cursor or PWD/OLDPWD.
 * redact, redactString and the no-plaintext-credentials lint rule all read this list.
 */
export const SECRET_NAME_WORDS: readonly string[] = [
  "password",
  "passwd",
  "pwd",
  "secret",
  "token",
  "api[_-]?key",
  "access[_-]?key",
  "secret[_-]?key",
  "private[_-]?key",
  "account[_-]?key",
  "shared[_-]?access[_-]?signature",
  "authorization",
  "cookie",
  "credentials?",
];
const SECRET_WORD = `(?:${SECRET_NAME_WORDS.join("|")})`;
const SECRET_NAME = new RegExp(`${SECRET_WORD}$`, "i");
// Names that end like a secret but are not one: pagination cursors and the shell's working directory.
const NOT_SECRET_NAME = /(?:page|next|continuation|continue|sync|resume)[_-]?token$/i;
const WORKING_DIR_NAME = /^(?:OLD)?PWD$/;

/** Whether an object key (or env var, header, flag or param name) names a secret whose value must never be shown. */
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
    if (Array.isArray(v)) {
      // [["Authorization", "Basic …"], …]: header tuple lists, Object.entries, Headers#entries().
      const pairs = isPairList(v);
      return v.map((item) =>
        pairs && isSecretName((item as unknown[])[0] as string) && (item as unknown[])[1] != null
          ? [(item as unknown[])[0], REDACTED]
          : walk(item, stack, depth + 1),
      );
    }
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

/** A non-empty array whose every element is a [name, value] pair with a string name. */
function isPairList(list: readonly unknown[]): boolean {
  if (list.length === 0) return false;
  for (const item of list) {
    if (!Array.isArray(item) || item.length !== 2 || typeof item[0] !== "string") return false;
  }
  return true;
}

// Every pattern below starts at a literal or at the start of a character run (look-behind) and
// uses bounded or non-overlapping quantifiers, so each pass is linear in the input length.
const PEM_BEGIN = /-----BEGIN ([A-Z0-9 ]{0,40}?)PRIVATE KEY(?: BLOCK)?-----/y;
const PEM_END = /-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----/g;
const HEADER_LINE = /(['"]?)\b((?:proxy-)?authorization|(?:set-)?cookie)([ \t]*:)[ \t]*([^\r\n]+)/gi;
const QUOTED_OR_BARE = `("(?:[^"\\\\\\r\\n]|\\\\.)*"?|'[^'\\r\\n]*'?|[^\\s"'&,;]+)`;
const KEY_VALUE = new RegExp(`(${SECRET_WORD})(["']?)([ \\t]*[=:][ \\t]*)(?![:=])${QUOTED_OR_BARE}`, "gi");
const FLAG_VALUE = new RegExp(`(--[A-Za-z0-9_-]{0,48}?${SECRET_WORD})([ \\t]+)(?!-)${QUOTED_OR_BARE}`, "gi");
// curl -u/--user and -U/--proxy-user take "user:password"; the value ends at whitespace or its closing quote.
const USER_PASSWORD_FLAG = /(?<![^\s"'=])(-[uU][ \t]*|--(?:proxy-)?user(?:[ \t]+|=))("(?:[^"\\\r\n]|\\.)*"?|'[^'\r\n]*'?|[^\s"'-][^\s"']*)/g;
// Azure SAS connection strings: the signature runs to the next ";" (it holds "&", which ends KEY_VALUE's value).
const SAS_CONNECTION = /\b(SharedAccessSignature[ \t]*=[ \t]*)(?:SharedAccessSignature[ \t]+)?[^\s;"'<>]+/gi;
// SAS URLs (?sv=…&sig=…): only the signature is secret; sv, se, sp, sr stay readable. "sig" alone is too
// short to be a secret name, so it counts only as a query parameter.
const SAS_SIG_PARAM = /([?&;]sig=)[^\s&#;"'<>]+/gi;
const BEARER = /\b(bearer)[ \t]+[A-Za-z0-9\-._~+/]+=*/gi;
// "[credential:<name>]", what scrubSecrets leaves where a credential's value was (the name rule of skill/credential.ts).
const CREDENTIAL_MARKER = /^credential:[a-z][a-z0-9_.-]{0,63}\]/;
// The user info ends at the LAST "@" before the host (as URL parsers split it), so a password may hold
// "@"; the authority never runs past whitespace, "/", "?" or "#" (so never into the path or a following
// URL), and after the first "@" not past quotes or angle brackets (so not out of a JSON string or <…>).
const URL_PASSWORD =
  /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}:\/\/)([^\s:/?#@]{0,256}):([^\s/?#@]{1,1024}(?:@[^\s/?#@"'`<>\\]{0,1024}){0,32})@/g;
const TOKEN_SHAPES: readonly RegExp[] = [
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g, // AWS access key id
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g, // Google API key
  /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})/g, // GitHub tokens
  /(?<![A-Za-z0-9-])xox[abposr]-[A-Za-z0-9-]{10,}/g, // Slack tokens
  /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}/g, // OpenAI-style secret keys
  /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, // JWT
];

/**
 * What every pattern below needs somewhere in its match: "-" (PEM armour, flags, xox-/sk- tokens),
 * ":" (headers, key: value, URLs), "=" (key=value, SAS), "@" (URL user info), or a token prefix
 * without one of those (bearer, AKIA/ASIA, AIza, gh?_/github_pat_, eyJ). Text with none of them
 * (identifiers, numbers, plain words) has nothing to redact and skips the dozen passes; a pattern
 * added below must keep this true.
 */
const MAY_HOLD_SECRET = /[-:=@]|bearer|AKIA|ASIA|AIza|gh[pousr]_|github_pat_|eyJ/i;

/** Scrubs secrets out of free text (command output, logs, error messages) in linear time. */
export function redactString(s: string): string {
  if (s.length === 0 || !MAY_HOLD_SECRET.test(s)) return s;
  return redactStringUnfiltered(s);
}

/** Every pass of redactString, without its pre-check (exported for the test that holds the pre-check to the passes). */
export function redactStringUnfiltered(s: string): string {
  let out = redactPem(s);
  out = out.replace(HEADER_LINE, (_m, quote: string, name: string, colon: string, rest: string) => {
    // A quoted header (curl -H 'Authorization: ...') ends at its closing quote, else at the line end.
    const close = quote ? rest.indexOf(quote) : -1;
    return `${quote}${name}${colon} ${REDACTED}${close >= 0 ? rest.slice(close) : ""}`;
  });
  out = out.replace(SAS_CONNECTION, (_m, name: string) => `${name}${REDACTED}`);
  out = out.replace(KEY_VALUE, (m, word: string, quote: string, sep: string, value: string, offset: number, all: string) =>
    keepsValue(word, all, offset) ? m : `${word}${quote}${sep}${maskValue(value)}`,
  );
  out = out.replace(FLAG_VALUE, (m, flag: string, gap: string, value: string) =>
    isSecretName(flag.slice(2)) ? `${flag}${gap}${maskValue(value)}` : m,
  );
  out = out.replace(USER_PASSWORD_FLAG, maskUserPassword);
  out = out.replace(BEARER, (_m, word: string) => `${word} ${REDACTED}`);
  out = out.replace(URL_PASSWORD, (_m, scheme: string, user: string) => `${scheme}${user}:${REDACTED}@`);
  out = out.replace(SAS_SIG_PARAM, (_m, name: string) => `${name}${REDACTED}`);
  for (const re of TOKEN_SHAPES) out = out.replace(re, REDACTED);
  return out;
}

/** Keeps quotes around a redacted value so JSON-ish text stays readable. */
function maskValue(value: string): string {
  const q = value[0];
  if (q === '"' || q === "'") return `${q}${REDACTED}${value.length > 1 && value.endsWith(q) ? q : ""}`;
  return REDACTED;
}

/** `-u user:password` → `-u user:[REDACTED]`; a value without a password (curl prompts) or a numeric uid:gid (docker -u 1000:1000) stays. */
function maskUserPassword(m: string, flag: string, value: string): string {
  const q = value[0] === '"' || value[0] === "'" ? value[0] : "";
  const closed = q !== "" && value.length > 1 && value.endsWith(q);
  const inner = q ? value.slice(1, closed ? -1 : undefined) : value;
  const colon = inner.indexOf(":");
  if (colon < 0 || colon === inner.length - 1) return m;
  const user = inner.slice(0, colon);
  if (/^\d+$/.test(user) && /^\d+$/.test(inner.slice(colon + 1))) return m;
  return `${flag}${q}${user}:${REDACTED}${closed ? q : ""}`;
}

/** PWD/OLDPWD (working directories), page/next tokens (pagination cursors) and "[credential:<name>]" markers are not secrets. */
function keepsValue(word: string, all: string, offset: number): boolean {
  // The credential store's marker for a scrubbed value (scrubSecrets in skill/credential.ts) holds a name, never a value.
  if (all[offset - 1] === "[" && CREDENTIAL_MARKER.test(all.slice(offset, offset + 80))) return true;
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
