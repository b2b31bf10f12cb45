import { describe, expect, it } from "vitest";
import { isSecretName, REDACTED, REDACTED_PRIVATE_KEY, redact, redactString } from "./redact.ts";

// Shape-valid fakes (not real credentials).
const AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE";
const AWS_SESSION_KEY_ID = "ASIAY34FZKBOKMUTVV7A";
const GOOGLE_KEY = "AIzaSyD-0123456789abcdefghijklmnopqrstu";
const GITHUB_TOKEN = `ghp_${"a1B2c3D4e5".repeat(3)}a1B2c3`;
const GITHUB_PAT = `github_pat_11ABCDEFG0123456789abc_${"x".repeat(59)}`;
const SLACK_TOKEN = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx";
const OPENAI_KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345";
const JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
const PEM = (label: string) =>
  `-----BEGIN ${label}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nq1w2e3r4t5y6u7i8o9p0\n-----END ${label}PRIVATE KEY-----`;

describe("redactString", () => {
  it.each([
    ["bearer token", "curl -H 'Accept: x' then Bearer abc.DEF-123_xyz~+/= done", `curl -H 'Accept: x' then Bearer ${REDACTED} done`],
    ["Authorization header (Basic)", "GET / HTTP/1.1\nAuthorization: Basic dXNlcjpwYXNzd29yZA==\nHost: x", `GET / HTTP/1.1\nAuthorization: ${REDACTED}\nHost: x`],
    ["Authorization header (any scheme)", "authorization: Digest username=\"u\", response=\"abc\"", `authorization: ${REDACTED}`],
    ["quoted header in a command line", "curl -H 'Authorization: Token abc' https://api", `curl -H 'Authorization: ${REDACTED}' https://api`],
    ["Cookie header", "Cookie: session=abc123; theme=dark", `Cookie: ${REDACTED}`],
    ["URL password", "dsn=postgres://app:s3cr%40t@db.internal:5432/app", `dsn=postgres://app:${REDACTED}@db.internal:5432/app`],
    ["URL password without user", "redis://:hunter2@cache:6379/0", `redis://:${REDACTED}@cache:6379/0`],
    ["key=value", "password=hunter2 user=bob", `password=${REDACTED} user=bob`],
    ["prefixed env vars", "DB_PASSWORD=pw1\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", `DB_PASSWORD=${REDACTED}\nAWS_SECRET_ACCESS_KEY=${REDACTED}`],
    ["key: value", "client_secret: abc123\napi_key: zzz", `client_secret: ${REDACTED}\napi_key: ${REDACTED}`],
    ["JSON text", '{"token":"abc","password": "p\\"w", "user":"bob"}', `{"token":"${REDACTED}","password": "${REDACTED}", "user":"bob"}`],
    ["query string", "GET /cb?access_token=abc123&state=ok", `GET /cb?access_token=${REDACTED}&state=ok`],
    ["--password value and --password=value", "mysql --password hunter2 --token=t0k -h db", `mysql --password ${REDACTED} --token=${REDACTED} -h db`],
    ["AWS access key ids", `keys ${AWS_KEY_ID},${AWS_SESSION_KEY_ID}`, `keys ${REDACTED},${REDACTED}`],
    ["Google API key", `maps ${GOOGLE_KEY}`, `maps ${REDACTED}`],
    ["GitHub tokens", `${GITHUB_TOKEN} and ${GITHUB_PAT}`, `${REDACTED} and ${REDACTED}`],
    ["Slack token", `slack ${SLACK_TOKEN} ok`, `slack ${REDACTED} ok`],
    ["OpenAI key", `OPENAI ${OPENAI_KEY}`, `OPENAI ${REDACTED}`],
    ["JWT", `jwt ${JWT} end`, `jwt ${REDACTED} end`],
  ])("redacts %s", (_kind, input, expected) => {
    expect(redactString(input)).toBe(expected);
  });

  it.each(["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", ""])("redacts a %sPEM private key block", (label) => {
    expect(redactString(`before\n${PEM(label)}\nafter`)).toBe(`before\n${REDACTED_PRIVATE_KEY}\nafter`);
  });

  it("redacts an unterminated private key (cut output) to the end", () => {
    expect(redactString(`x ${PEM("RSA ").slice(0, 80)}`)).toBe(`x ${REDACTED_PRIVATE_KEY}`);
  });

  it.each([
    "df -h\nFilesystem      Size  Used Avail Use% Mounted on\n/dev/sda1        50G   20G   30G  40% /",
    "https://example.com:8443/path?q=1 and https://user@example.com/x and ssh://git@github.com/o/r.git",
    "tokens_used=5 token_count=3 max_tokens=100 secret_name=db-creds password_hint=pet",
    "PWD=/root OLDPWD=/tmp nextPageToken=abc123 page_token: xyz",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "risk-assessment task-runner-for-production-hosts ask-me-anything-about-the-cluster",
    "Authorization required", // no colon: prose, not a header
  ])("leaves ordinary text alone: %j", (text) => {
    expect(redactString(text)).toBe(text);
  });

  it("is idempotent", () => {
    const once = redactString(`password=x Bearer abc ${JWT} postgres://u:p@h/db`);
    expect(redactString(once)).toBe(once);
  });

  it("stays linear on 1 MB inputs, including adversarial ones", () => {
    const MB = 1 << 20;
    const inputs = [
      "lorem ipsum token dolor sit amet password consectetur Bearer adipiscing ".repeat(MB / 72),
      'token="'.repeat(MB / 7),
      "eyJ".repeat(MB / 3),
      "a://b:".repeat(MB / 6),
      "-----BEGIN PRIVATE KEY-----".repeat(MB / 27),
      "'Authorization: ".repeat(MB / 16),
      "--password-".repeat(MB / 11),
      "x".repeat(MB),
    ];
    for (const input of inputs) {
      expect(typeof redactString(input)).toBe("string");
    }
  }, 20_000);
});

describe("redact", () => {
  it("scrubs strings and secret-named keys in nested objects and arrays", () => {
    const input = {
      status: 200,
      headers: [{ name: "Authorization", value: "Basic dXNlcjpwYXNz" }, { name: "Accept", value: "*/*" }],
      env: [{ name: "DB_PASSWORD", value: "hunter2" }, { name: "PWD", value: "/srv" }],
      config: {
        db_password: "hunter2",
        ApiKey: 12345,
        "x-api-key": "k",
        private_key: { pem: "..." },
        credentials: ["a", "b"],
        client_secret: "c",
        Cookie: "s=1",
        nextPageToken: "cursor-1",
        password: null,
        nested: [[{ auth_token: "t", note: `see ${AWS_KEY_ID}` }]],
      },
      log: ["ok", `url=https://u:pw@h/x`, PEM("EC ")],
      count: 3,
      ok: true,
    };
    const snapshot = structuredClone(input);
    expect(redact(input)).toEqual({
      status: 200,
      headers: [{ name: "Authorization", value: REDACTED }, { name: "Accept", value: "*/*" }],
      env: [{ name: "DB_PASSWORD", value: REDACTED }, { name: "PWD", value: "/srv" }],
      config: {
        db_password: REDACTED,
        ApiKey: REDACTED,
        "x-api-key": REDACTED,
        private_key: REDACTED,
        credentials: REDACTED,
        client_secret: REDACTED,
        Cookie: REDACTED,
        nextPageToken: "cursor-1",
        password: null,
        nested: [[{ auth_token: REDACTED, note: `see ${REDACTED}` }]],
      },
      log: ["ok", `url=https://u:${REDACTED}@h/x`, REDACTED_PRIVATE_KEY],
      count: 3,
      ok: true,
    });
    expect(input).toEqual(snapshot); // a copy, not in place
  });

  it("survives cycles and keeps scalars", () => {
    const a: Record<string, unknown> = { token: "x", n: 1 };
    a.self = a;
    expect(redact(a)).toEqual({ token: REDACTED, n: 1, self: "[Circular]" });
    expect(redact("Bearer abc")).toBe(`Bearer ${REDACTED}`);
    expect(redact(42)).toBe(42);
    expect(redact(null)).toBe(null);
  });

  it("turns an Error into a redacted {name, message}", () => {
    expect(redact(new Error("login failed for postgres://u:pw@db/x"))).toEqual({
      name: "Error",
      message: `login failed for postgres://u:${REDACTED}@db/x`,
    });
  });
});

describe("isSecretName", () => {
  it.each(["password", "DB_PASSWORD", "passwd", "pwd", "mysql_pwd", "secret", "token", "api_key", "apikey", "api-key", "AccessKey", "secret_key", "private_key", "Authorization", "set-cookie", "client_secret", "credential", "credentials"])(
    "%s is a secret name",
    (name) => expect(isSecretName(name)).toBe(true),
  );
  it.each(["tokens_used", "token_count", "max_tokens", "secret_name", "password_hint", "PWD", "OLDPWD", "nextPageToken", "page_token", "user", "key"])(
    "%s is not",
    (name) => expect(isSecretName(name)).toBe(false),
  );
});
