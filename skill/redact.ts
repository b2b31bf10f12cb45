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
      // A list of lines (tail_file, read_journal): a key block spread over several elements is one block.
      if (v.some((item) => typeof item === "string" && item.includes("-----BEGIN "))) return redactLines(v, stack, depth);
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

/** Redacts a list of lines, masking every element from a private key's BEGIN line to its END line. */
function redactLines(list: readonly unknown[], stack: Set<object>, depth: number): unknown[] {
  let inKey = false;
  return list.map((item) => {
    if (typeof item !== "string") return walk(item, stack, depth + 1);
    let line = item;
    if (inKey) {
      PEM_END.lastIndex = 0;
      const end = PEM_END.exec(line);
      if (!end) return REDACTED_PRIVATE_KEY;
      line = REDACTED_PRIVATE_KEY + line.slice(end.index + end[0].length);
      inKey = false;
    }
    inKey = opensKeyBlock(line);
    return redactString(line);
  });
}

/** Whether a line opens a private key block it does not close. */
function opensKeyBlock(line: string): boolean {
  const begin = /-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----/g;
  let last = -1;
  for (let m = begin.exec(line); m; m = begin.exec(line)) last = m.index + m[0].length;
  if (last < 0) return false;
  PEM_END.lastIndex = last;
  return PEM_END.exec(line) === null;
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
// A header's value only: Authorization's optional scheme and its credential (one token), a Cookie's
// name=value pairs. Never to the end of the line: what follows may be a command an approver must see.
const AUTH_HEADER = /\b((?:proxy-)?authorization)([ \t]*:[ \t]*)((?:[A-Za-z][A-Za-z0-9_-]{0,30}[ \t]+)?(?:[A-Za-z0-9_-]+=(?:"[^"\r\n]*"|[^\s,;"'`<>()]*)(?:[ \t]*,[ \t]*[A-Za-z0-9_-]+=(?:"[^"\r\n]*"|[^\s,;"'`<>()]*))*|[^\s;&|'"`<>(),]+))/gi;
const COOKIE_HEADER = /\b((?:set-)?cookie)([ \t]*:[ \t]*)([^\s;=,]+=[^\s;,]*(?:;[ \t]*[^\s;=,]+=?[^\s;,]*)*)/gi;
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
  // The secret kinds of secretlint's recommended preset and gitleaks' common rules, by their documented formats.
  /(?<![A-Za-z0-9_])og[ut]_[A-Za-z0-9_-]{20,}/g, // ongrid's own user (ogu_) and edge (ogt_) tokens
  /(?<![A-Za-z0-9_])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}/g, // Stripe keys
  /(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])/g, // npm tokens
  /(?<![A-Za-z0-9_-])gl(?:pat|dt|rt|ptt|cbt|imt|agent|soat|ffct)-[A-Za-z0-9_-]{20,}/g, // GitLab tokens
  /(?<![A-Za-z0-9_-])xapp-[0-9]-[A-Za-z0-9-]{10,}/g, // Slack app tokens
  /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9_/+-]{20,}/g, // Slack webhooks
  /https:\/\/(?:ptb\.|canary\.)?discord(?:app)?\.com\/api\/webhooks\/\d+\/[A-Za-z0-9_-]{20,}/g, // Discord webhooks
  /(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}/g, // SendGrid
  /(?<![A-Za-z0-9_-])ya29\.[A-Za-z0-9_-]{20,}/g, // Google OAuth access tokens
  /(?<![A-Za-z0-9_-])GOCSPX-[A-Za-z0-9_-]{20,}/g, // Google OAuth client secrets
  /(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}/g, // Hugging Face
  /(?<![A-Za-z0-9_])(?:dop|doo|dor)_v1_[a-f0-9]{64}/g, // DigitalOcean
  /(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}/g, // PyPI
  /(?<![A-Za-z0-9_])dckr_pat_[A-Za-z0-9_-]{20,}/g, // Docker Hub
  /(?<![A-Za-z0-9_])hv[sbr]\.[A-Za-z0-9_-]{24,}/g, // HashiCorp Vault
  /(?<![A-Za-z0-9_])(?:glsa|glc)_[A-Za-z0-9_=+/-]{32,}/g, // Grafana
  /(?<![A-Za-z0-9_])lin_(?:api|oauth)_[A-Za-z0-9]{40}/g, // Linear
  /(?<![A-Za-z0-9_])shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}/g, // Shopify
  /(?<![A-Za-z0-9_])sntr[ysu]s?_[A-Za-z0-9_=+/-]{30,}/g, // Sentry
  /(?<![A-Za-z0-9_-])NRAK-[A-Z0-9]{27}/g, // New Relic
  /(?<![A-Za-z0-9_])dapi[a-f0-9]{32}(?:-\d)?/g, // Databricks
  /(?<![A-Za-z0-9_-])PMAK-[a-f0-9]{24}-[a-f0-9]{34}/g, // Postman
  /(?<![A-Za-z0-9_-])ops_[A-Za-z0-9_-]{40,}|(?<![A-Za-z0-9_-])A3-[A-Z0-9]{6}-[A-Z0-9-]{20,}/g, // 1Password service account tokens, secret keys
  /(?<![A-Za-z0-9_-])ATATT3[A-Za-z0-9_=-]{150,}/g, // Atlassian API tokens
  /(?<![0-9])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])/g, // Telegram bot tokens
  /(?<![A-Za-z0-9_-])(?:AC|SK)[a-f0-9]{32}(?![A-Za-z0-9])/g, // Twilio
  /(?<![A-Za-z0-9_-])sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}/g, // Square
];
// Passwords attached to a client's flag: mysql/mariadb -pPASS (attached: -p alone prompts), sshpass -p X,
// redis-cli -a X / --pass X, and the like. The prefix is kept, the value masked.
const CLI_PASSWORD =
  /(\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump|mariadb-admin)\b[^\n|;&]*?[ \t]-p)(?!assword)([^\s'"]+|'[^'\n]*'|"[^"\n]*")|(\bsshpass[ \t]+(?:-[a-zA-Z]+[ \t]+)*-p[ \t]*)([^\s'"]+|'[^'\n]*'|"[^"\n]*")|(\bredis-cli\b[^\n|;&]*?[ \t](?:-a|--pass|--askpass)[ \t]+)([^\s'"]+|'[^'\n]*'|"[^"\n]*")/g;

/**
 * What every pattern below needs somewhere in its match: "-" (PEM armour, flags, xox-/sk- tokens),
 * ":" (headers, key: value, URLs), "=" (key=value, SAS), "@" (URL user info), or a token prefix
 * without one of those (bearer, AKIA/ASIA, AIza, gh?_/github_pat_, eyJ, ogu_/ogt_, sk_live_, npm_, …). Text with none of them
 * (identifiers, numbers, plain words) has nothing to redact and skips the dozen passes; a pattern
 * added below must keep this true.
 */
const MAY_HOLD_SECRET = /[-:=@]|bearer|AKIA|ASIA|AIza|gh[pousr]_|github_pat_|eyJ|og[ut]_|[spr]k_|npm_|ya29\.|SG\.|hf_|do[por]_v1|dckr_|hv[sbr]\.|gl(?:sa|c)_|lin_|shp|sntr|dapi|ops_|(?:AC|SK)[a-f0-9]{32}/i;

/** Scrubs secrets out of free text (command output, logs, error messages) in linear time. */
export function redactString(s: string): string {
  if (s.length === 0 || !MAY_HOLD_SECRET.test(s)) return s;
  return redactStringUnfiltered(s);
}

/** Every pass of redactString, without its pre-check (exported for the test that holds the pre-check to the passes). */
export function redactStringUnfiltered(s: string): string {
  let out = redactPem(s);
  // The scheme goes with the credential: "Authorization: [REDACTED]".
  out = out.replace(AUTH_HEADER, (_m, name: string, colon: string) => `${name}${colon}${REDACTED}`);
  out = out.replace(COOKIE_HEADER, (_m, name: string, colon: string) => `${name}${colon}${REDACTED}`);
  out = out.replace(CLI_PASSWORD, (_m, a?: string, _av?: string, b?: string, _bv?: string, c?: string) => `${a ?? b ?? c}${REDACTED}`);
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
