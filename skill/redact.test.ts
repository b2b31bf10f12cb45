import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { isSecretName, REDACTED, REDACTED_PRIVATE_KEY, redact, redactString, redactStringUnfiltered } from "./redact.ts";
import { SECRET_CORPUS } from "./redact.corpus.ts";

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

  // A URL parser splits user info from the host at the LAST "@" of the authority; so must redaction.
  it.each([
    ["a password containing @", "postgres://u:p@ss@host/db", `postgres://u:${REDACTED}@host/db`],
    ["a password containing several @", "amqp://user:a@b@@c@broker:5672/vh", `amqp://user:${REDACTED}@broker:5672/vh`],
    ["a password ending in @ before an empty user part", "redis://:pw@@cache:6379", `redis://:${REDACTED}@cache:6379`],
    ["only up to whitespace", "redis://u:p@h1 then mail bob@example.com", `redis://u:${REDACTED}@h1 then mail bob@example.com`],
    ["not into a following URL", "redis://u:p@h1,redis://v:q@w@h2/0", `redis://u:${REDACTED}@h1,redis://v:${REDACTED}@h2/0`],
    ["not into the query", "postgres://u:p@h/db?mirror=x@y", `postgres://u:${REDACTED}@h/db?mirror=x@y`],
    ["not across a closing quote", '{"a":"http://u:p@h","b":"x@y"}', `{"a":"http://u:${REDACTED}@h","b":"x@y"}`],
  ])("redacts a URL password: %s", (_kind, input, expected) => {
    expect(redactString(input)).toBe(expected);
  });

  it.each([
    [
      "Azure storage AccountKey",
      "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
      `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${REDACTED};EndpointSuffix=core.windows.net`,
    ],
    ["account_key env var", "AZURE_STORAGE_ACCOUNT_KEY=abc+/def==", `AZURE_STORAGE_ACCOUNT_KEY=${REDACTED}`],
    ["az --account-key flag", "az storage blob list --account-name acct --account-key abc+/def== -c c", `az storage blob list --account-name acct --account-key ${REDACTED} -c c`],
    [
      "Azure SAS connection string",
      "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&srt=co&sp=rl&se=2030-01-01T00:00:00Z&sig=AbC%2Bdef%3D;QueueEndpoint=https://q",
      `BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=${REDACTED};QueueEndpoint=https://q`,
    ],
    [
      "Service Bus SAS connection string",
      "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature sr=ns&sig=AbC%3D&se=1700000000&skn=Root",
      `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessSignature=${REDACTED}`,
    ],
    [
      "Service Bus shared access key",
      "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=AbCd+eF=",
      `Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${REDACTED}`,
    ],
    [
      "sig= in a SAS URL",
      "GET https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2030-01-01&sr=b&sp=r&sig=AbC%2Fdef%3D 200",
      `GET https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2030-01-01&sr=b&sp=r&sig=${REDACTED} 200`,
    ],
    ["sig= first in the query", "/c/b.txt?sig=AbC%3D&sv=2022-11-02", `/c/b.txt?sig=${REDACTED}&sv=2022-11-02`],
  ])("redacts Azure credentials: %s", (_kind, input, expected) => {
    expect(redactString(input)).toBe(expected);
  });

  it.each([
    ["-u user:pass", "curl -u admin:s3cret https://api", `curl -u admin:${REDACTED} https://api`],
    ["--user user:pass", "curl --user admin:s3:cret -s https://api", `curl --user admin:${REDACTED} -s https://api`],
    ["--user=user:pass", "curl --user=admin:s3cret https://api", `curl --user=admin:${REDACTED} https://api`],
    ["attached -uuser:pass", "curl -uadmin:s3cret https://api", `curl -uadmin:${REDACTED} https://api`],
    ["single-quoted", "curl -u 'admin:p@ss word' https://api", `curl -u 'admin:${REDACTED}' https://api`],
    ["double-quoted", 'curl -u "admin:pa\\"ss" https://api', `curl -u "admin:${REDACTED}" https://api`],
    ["empty user", "curl -u :tok https://api", `curl -u :${REDACTED} https://api`],
    ["proxy user", "curl -U px:pw --proxy-user px:pw2 https://api", `curl -U px:${REDACTED} --proxy-user px:${REDACTED} https://api`],
  ])("redacts a curl credential: %s", (_kind, input, expected) => {
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
    "AccountName=acct;EndpointSuffix=core.windows.net kill -s SIGTERM 1 /x?signal=9&design=sig&sig_figs=3",
    "curl -u admin https://api; sort -u list; docker run -u 1000:1000 img; curl --user-agent Mozilla:5.0 -uv",
  ])("leaves ordinary text alone: %j", (text) => {
    expect(redactString(text)).toBe(text);
  });

  it("is idempotent", () => {
    const once = redactString(
      `password=x Bearer abc ${JWT} postgres://u:p@h/db postgres://u:p@ss@h/db AccountKey=k;SharedAccessSignature=sv=1&sig=s ?sig=t curl -u a:b --user 'c:d'`,
    );
    expect(redactString(once)).toBe(once);
  });

  // 1 MB inputs built to make a careless pattern backtrack. The assertions are about the result
  // only (no timing): a near-miss prefix comes out byte for byte unchanged and the real secret
  // after it is still found; text made of nothing but matches has every occurrence redacted.
  const MB = 1 << 20;
  const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));

  it.each([
    ["secret words without a separator", "lorem token dolor password sit Bearer ! amet secret; ", "\npassword=hunter2", `\npassword=${REDACTED}`],
    ["quoted names without a separator", 'token"', ' token="abc"', ` token="${REDACTED}"`],
    ["pagination cursors", "nextPageToken=abc ", "api_key=zzz", `api_key=${REDACTED}`],
    ["JWT-like runs", "eyJ", ` ${JWT}`, ` ${REDACTED}`],
    ["URL-like schemes without @", "a://b:", " postgres://u:p@ss@host/db", ` postgres://u:${REDACTED}@host/db`],
    ["user:pass@host without a scheme", "user:p@ss@host ", "amqp://u:a@b@h/", `amqp://u:${REDACTED}@h/`],
    ["certificates", "-----BEGIN CERTIFICATE-----\n", PEM("RSA "), REDACTED_PRIVATE_KEY],
    ["header names in prose", "Authorization required ", "\nAuthorization: Basic dXNlcjpwYXNz", `\nAuthorization: ${REDACTED}`],
    ["flag-like runs", "--password-", " --password hunter2", ` --password ${REDACTED}`],
    ["one long word", "x", " password=hunter2", ` password=${REDACTED}`],
    ["AWS key ids one character short", "AKIAIOSFODNN7EXAMPL ", AWS_KEY_ID, REDACTED],
    ["curl -u without a password", "curl -u admin ", "curl -u admin:s3cret", `curl -u admin:${REDACTED}`],
    ["Azure names that are not keys", "AccountName=acct;", "AccountKey=abc==;", `AccountKey=${REDACTED};`],
    ["query names that start with sig", "&signal=9", "&sig=AbC%3D", `&sig=${REDACTED}`],
  ])("finds the secret after 1 MB of near-misses: %s", (_kind, unit, secret, redactedSecret) => {
    const prefix = fill(unit);
    const out = redactString(prefix + secret);
    expect(out.length).toBe(prefix.length + redactedSecret.length);
    expectSameText(out.slice(0, prefix.length), prefix);
    expect(out.slice(prefix.length)).toBe(redactedSecret);
  });

  it.each([
    ["bearer tokens", "Bearer x ", `Bearer ${REDACTED} `],
    ["key=value pairs", "password=x&", `password=${REDACTED}&`],
    ["quoted values that never close", 'token="token="', `token="${REDACTED}"`],
    ["URL passwords", "a://u:p@h ", `a://u:${REDACTED}@h `],
    ["curl credentials", "curl -u a:b ", `curl -u a:${REDACTED} `],
    ["SAS signatures", "?sig=s&", `?sig=${REDACTED}&`],
  ])("redacts every one of 1 MB of back-to-back %s", (_kind, unit, redactedUnit) => {
    const n = Math.ceil(MB / unit.length);
    expectSameText(redactString(unit.repeat(n)), redactedUnit.repeat(n));
  });

  it("redacts 1 MB of unterminated private key headers as one key", () => {
    expect(redactString(`x ${"-----BEGIN PRIVATE KEY-----".repeat(MB / 27)}`)).toBe(`x ${REDACTED_PRIVATE_KEY}`);
  });
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

  it("redacts the value of [name, value] tuples whose name is secret-like", () => {
    expect(redact([["Authorization", "Basic x"]])).toEqual([["Authorization", REDACTED]]);
    expect(
      redact({
        headers: [
          ["authorization", "Bearer y"],
          ["accept", "*/*"],
          ["Set-Cookie", ["a=1", "b=2"]],
          ["x-api-key", null],
          ["PWD", "/srv"],
        ],
        entries: Object.entries({ db_password: "hunter2", user: "bob" }),
      }),
    ).toEqual({
      headers: [
        ["authorization", REDACTED],
        ["accept", "*/*"],
        ["Set-Cookie", REDACTED],
        ["x-api-key", null],
        ["PWD", "/srv"],
      ],
      entries: [
        ["db_password", REDACTED],
        ["user", "bob"],
      ],
    });
  });

  it("leaves arrays that are not lists of [name, value] pairs alone", () => {
    expect(redact(["token", "secret", "password"])).toEqual(["token", "secret", "password"]);
    expect(redact([["token", "a", "b"], ["x", "y"]])).toEqual([["token", "a", "b"], ["x", "y"]]);
    expect(redact([["token", "a"], "b"])).toEqual([["token", "a"], "b"]);
  });

  it("turns an Error into a redacted {name, message}", () => {
    expect(redact(new Error("login failed for postgres://u:pw@db/x"))).toEqual({
      name: "Error",
      message: `login failed for postgres://u:${REDACTED}@db/x`,
    });
  });
});

describe("isSecretName", () => {
  it.each(["password", "DB_PASSWORD", "passwd", "pwd", "mysql_pwd", "secret", "token", "api_key", "apikey", "api-key", "AccessKey", "secret_key", "private_key", "Authorization", "set-cookie", "client_secret", "credential", "credentials", "AccountKey", "account_key", "SharedAccessKey", "SharedAccessSignature"])(
    "%s is a secret name",
    (name) => expect(isSecretName(name)).toBe(true),
  );
  it.each(["tokens_used", "token_count", "max_tokens", "secret_name", "password_hint", "PWD", "OLDPWD", "nextPageToken", "page_token", "sync_token", "resumeToken", "user", "key", "AccountName", "SharedAccessKeyName", "sig"])(
    "%s is not",
    (name) => expect(isSecretName(name)).toBe(false),
  );
});

/** Compares two long strings, reporting a short window around the first difference instead of a 1 MB diff. */
function expectSameText(actual: string, expected: string): void {
  let i = 0;
  while (i < actual.length && i < expected.length && actual[i] === expected[i]) i++;
  if (i === actual.length && i === expected.length) return;
  const window = (s: string) => `@${i}: ${JSON.stringify(s.slice(Math.max(0, i - 40), i + 40))} (length ${s.length})`;
  expect(window(actual)).toBe(window(expected));
}

describe("redactString's pre-check", () => {
  // Fragments of every kind of secret the passes know, cut so that some pieces hold no trigger character.
  const fragments = [
    "password", "token", "api_key", "secret", "Authorization", "Cookie", "Bearer", "bearer", "BEARER", "AKIA", "ASIA", "AIza",
    "ghp_", "github_pat_", "xoxb", "sk", "eyJ", "SharedAccessSignature", "sig", "PRIVATE KEY", "BEGIN", "user", "https", "//",
    "IOSFODNN7EXAMPLE", "abcdefghijklmnopqrstuvwxyz0123456789", " ", "\t", "\n", "'", '"', ".", "_", "/", "?", "&", ";", "#",
  ];
  const triggers = ["-", ":", "=", "@"];
  const text = (withTriggers: boolean) =>
    fc.array(fc.oneof(fc.constantFrom(...fragments, ...(withTriggers ? triggers : [])), fc.string({ maxLength: 8 })), { maxLength: 24 }).map((parts) => parts.join(""));

  it("lets through only text that no pass would change", () => {
    fc.assert(
      fc.property(fc.oneof(text(false), text(true)), (s) => {
        if (redactString(s) === s) expect(redactStringUnfiltered(s)).toBe(s);
        expect(redactString(s)).toBe(redactStringUnfiltered(s));
      }),
      { numRuns: 20_000 },
    );
  });

  it("still redacts the secrets that need no -, :, = or @", () => {
    expect(redactString("Bearer abcdef123456")).toBe(`Bearer ${REDACTED}`);
    expect(redactString("key AKIAIOSFODNN7EXAMPLE in use")).toBe(`key ${REDACTED} in use`);
    expect(redactString("ghp_abcdefghijklmnopqrstuvwxyz0123456789")).toBe(REDACTED);
  });
});

describe("the secret corpus (A5): every kind is masked wherever it appears", () => {
  it(`holds at least 40 kinds`, () => {
    expect(SECRET_CORPUS.length).toBeGreaterThanOrEqual(40);
  });
  it.each(SECRET_CORPUS.map((s) => [s.kind, s] as const))("%s: in free text, in a JSON param, in a list of lines, in a process list", (_kind, s) => {
    expect(redactString(s.text)).not.toContain(s.secret);
    expect(JSON.stringify(redact({ command: s.text, nested: [{ env: s.text }] }))).not.toContain(s.secret);
    // Line by line, as tail_file and read_journal return text: a key block split over lines too.
    const lines = `first line\n${s.text}\nlast line`.split("\n");
    expect(JSON.stringify(redact({ lines }))).not.toContain(s.secret);
    expect(redactString(`root  4242  0.0  0.1 ${s.text} --flag`)).not.toContain(s.secret);
  });
  it("masks the value only, never the rest of a line an approver must read", () => {
    expect(redactString("echo Authorization: ; systemctl stop db ; rm data.db")).toBe("echo Authorization: ; systemctl stop db ; rm data.db");
    expect(redactString("curl -H 'Authorization: Bearer abc.def' https://x; systemctl stop db")).toBe(`curl -H 'Authorization: ${REDACTED}' https://x; systemctl stop db`);
    expect(redactString("Cookie: a=1; b=2 && reboot")).toBe(`Cookie: ${REDACTED} && reboot`);
    expect(redactString("mysql -pS3cret -e 'select 1'; rm -rf /tmp/x")).toBe(`mysql -p${REDACTED} -e 'select 1'; rm -rf /tmp/x`);
  });
});
