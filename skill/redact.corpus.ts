/**
 * Secrets of many kinds, as they appear in files, command lines, environments and replies, for
 * the redaction tests (A5). Every value is made up for the test, in the documented format of its
 * kind; `secret` is the part that must never be shown.
 */

/** One planted secret: its kind, the text it appears in, and the value that must not survive redaction. */
export interface PlantedSecret {
  kind: string;
  text: string;
  secret: string;
}

const b64 = (n: number, seed: string) => (seed.repeat(Math.ceil(n / seed.length)).slice(0, n));
const hex = (n: number) => b64(n, "0123456789abcdef".split("").reverse().join("") + "a1b2c3d4e5f6");
const alnum = (n: number, seed = "Zq7Xw3Rt9Kp2Lm5Vb8Nc4Hd6Jf1Gs0") => b64(n, seed);

const rsaBody = `${alnum(64, "MIIEowIBAAKCAQEAvX9pQ2")}\n${alnum(64, "Rk3mT8sW1yB4nH6jL0cF5gD")}\n${alnum(40, "Qa2Ws4Ed6Rf8Tg0Yh")}`;
const sshBody = `b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n${alnum(64, "QyNTUxOQAAACBmZXN0a2V5Zm9ydGVzdHM")}\n${alnum(30, "AAAAEGZha2VrZXk")}`;
const pgpBody = `lQOYBGV${alnum(57, "hPk8sQ2mW4xY7zA1bC3dE5fG")}\n${alnum(64, "H9jK0lM2nO4pQ6rS8tU")}`;

/** The corpus: at least 40 kinds. */
export const SECRET_CORPUS: readonly PlantedSecret[] = [
  { kind: "RSA private key (PEM)", text: `-----BEGIN RSA PRIVATE KEY-----\n${rsaBody}\n-----END RSA PRIVATE KEY-----`, secret: rsaBody.split("\n")[1] },
  { kind: "PKCS#8 private key", text: `-----BEGIN PRIVATE KEY-----\n${rsaBody}\n-----END PRIVATE KEY-----`, secret: rsaBody.split("\n")[2] },
  { kind: "EC private key", text: `-----BEGIN EC PRIVATE KEY-----\n${rsaBody}\n-----END EC PRIVATE KEY-----`, secret: rsaBody.split("\n")[0] },
  { kind: "OpenSSH private key", text: `-----BEGIN OPENSSH PRIVATE KEY-----\n${sshBody}\n-----END OPENSSH PRIVATE KEY-----`, secret: sshBody.split("\n")[1] },
  { kind: "PGP private key block", text: `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${pgpBody}\n-----END PGP PRIVATE KEY BLOCK-----`, secret: pgpBody.split("\n")[1] },
  { kind: "ongrid user token", text: `export ONGRID_TOKEN_VALUE=ogu_0123456789ab_${alnum(43)}`, secret: `ogu_0123456789ab_${alnum(43)}` },
  { kind: "ongrid edge token", text: `ongrid-edge --token ogt_${alnum(43, "Ed9gE7tO4kE2n")}`, secret: `ogt_${alnum(43, "Ed9gE7tO4kE2n")}` },
  { kind: "AWS access key id", text: "aws_key_id AKIAIOSFODNN7EXAMPLE in use", secret: "AKIAIOSFODNN7EXAMPLE" },
  { kind: "AWS secret access key", text: "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
  { kind: "GitHub personal token", text: `git clone https://github.com/x/y using ghp_${alnum(36)}`, secret: `ghp_${alnum(36)}` },
  { kind: "GitHub fine-grained token", text: `token github_pat_11ABCDEFG0${alnum(72, "aB3dE5gH7jK9mN1pQ3sT5vW7yZ")}`, secret: `github_pat_11ABCDEFG0${alnum(72, "aB3dE5gH7jK9mN1pQ3sT5vW7yZ")}` },
  { kind: "GitLab personal token", text: `glpat-${alnum(20, "xY12zW34vU56tS78rQ90")} for the runner`, secret: `glpat-${alnum(20, "xY12zW34vU56tS78rQ90")}` },
  { kind: "Slack bot token", text: `slack xoxb-1234567890-0987654321-${alnum(24)}`, secret: `xoxb-1234567890-0987654321-${alnum(24)}` },
  { kind: "Slack webhook", text: `post to https://hooks.slack.com/services/T00000000/B00000000/${alnum(24)}`, secret: alnum(24) },
  { kind: "Stripe live key", text: `stripe key sk_live_${alnum(24)}`, secret: `sk_live_${alnum(24)}` },
  { kind: "Stripe restricted key", text: `rk_live_${alnum(24, "Rr5tT6yY7uU8")} configured`, secret: `rk_live_${alnum(24, "Rr5tT6yY7uU8")}` },
  { kind: "npm token", text: `//registry.npmjs.org/:_authToken=npm_${alnum(36)}`, secret: `npm_${alnum(36)}` },
  { kind: "Google API key", text: `maps key AIzaSyA${alnum(32, "bCdEfGhIjKlMnOpQrStUvWxYz012345")}`, secret: `AIzaSyA${alnum(32, "bCdEfGhIjKlMnOpQrStUvWxYz012345")}` },
  { kind: "Google OAuth token", text: `Bearer-less ya29.${alnum(60, "a0AfH6SMB")}`, secret: `ya29.${alnum(60, "a0AfH6SMB")}` },
  { kind: "Google OAuth client secret", text: `client GOCSPX-${alnum(28)}`, secret: `GOCSPX-${alnum(28)}` },
  { kind: "Azure storage connection string", text: `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${alnum(86, "Az9uR3eK5eY7")}==;EndpointSuffix=core.windows.net`, secret: alnum(86, "Az9uR3eK5eY7") },
  { kind: "Azure SAS signature", text: `https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=${alnum(40)}%3D`, secret: alnum(40) },
  { kind: "JWT", text: `cookie-less jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcHMiLCJuYW1lIjoidGVzdCJ9.${alnum(43)}`, secret: `eyJzdWIiOiJvcHMiLCJuYW1lIjoidGVzdCJ9.${alnum(43)}` },
  { kind: "Bearer header", text: `curl -H 'Authorization: Bearer ${alnum(32, "BeArEr")}' http://x`, secret: alnum(32, "BeArEr") },
  { kind: "Basic auth header", text: "Authorization: Basic dXNlcjpzM2NyM3RQYXNzd29yZA==", secret: "dXNlcjpzM2NyM3RQYXNzd29yZA==" },
  { kind: "Cookie header", text: `Cookie: session=${alnum(30, "SeSs10n")}; theme=dark`, secret: alnum(30, "SeSs10n") },
  { kind: "URL with password", text: "DATABASE_URL_RO is postgres://app:Pa55w0rdInUrl@db:5432/app", secret: "Pa55w0rdInUrl" },
  { kind: "mysql -pPASS", text: "mysql -u root -pMyS3cretPass -h db app", secret: "MyS3cretPass" },
  { kind: "mysqldump -pPASS", text: "mysqldump --single-transaction -uadmin -p'Dump3rPass' app > x.sql", secret: "Dump3rPass" },
  { kind: "--password X", text: "psql --password Ps9lSecret --host db", secret: "Ps9lSecret" },
  { kind: "--password=X", text: "app --password=EqS1gnSecret --verbose", secret: "EqS1gnSecret" },
  { kind: "sshpass -p", text: "sshpass -p SshP4ssword ssh ops@host", secret: "SshP4ssword" },
  { kind: "redis-cli -a", text: "redis-cli -h cache -a R3disP4ss ping", secret: "R3disP4ss" },
  { kind: "curl -u user:pass", text: "curl -u ops:CurlUs3rPass https://x", secret: "CurlUs3rPass" },
  { kind: "env assignment", text: "DB_PASSWORD=EnvAss1gned", secret: "EnvAss1gned" },
  { kind: "YAML key", text: "  client_secret: Yaml5ecretValue", secret: "Yaml5ecretValue" },
  { kind: "JSON key", text: '{"api_key":"Js0nApiKeyValue","user":"ops"}', secret: "Js0nApiKeyValue" },
  { kind: "SendGrid key", text: `SG.${alnum(22, "sEnDgRiD")}.${alnum(43, "kEy")}`, secret: `SG.${alnum(22, "sEnDgRiD")}.${alnum(43, "kEy")}` },
  { kind: "Hugging Face token", text: `hf_${alnum(34, "HuGgInGfAcE")}`, secret: `hf_${alnum(34, "HuGgInGfAcE")}` },
  { kind: "DigitalOcean token", text: `doctl auth dop_v1_${hex(64)}`, secret: `dop_v1_${hex(64)}` },
  { kind: "Docker Hub token", text: `docker login -p dckr_pat_${alnum(27)}`, secret: `dckr_pat_${alnum(27)}` },
  { kind: "HashiCorp Vault token", text: `VAULT hvs.${alnum(24, "VaUlTtOkEn")}`, secret: `hvs.${alnum(24, "VaUlTtOkEn")}` },
  { kind: "Grafana service account token", text: `glsa_${alnum(32)}_${hex(8)}`, secret: `glsa_${alnum(32)}_${hex(8)}` },
  { kind: "Shopify token", text: `shpat_${hex(32)}`, secret: `shpat_${hex(32)}` },
  { kind: "OpenAI key", text: `OPENAI sk-proj-${alnum(40)}`, secret: `sk-proj-${alnum(40)}` },
  { kind: "Twilio API key", text: `twilio SK${hex(32)}`, secret: `SK${hex(32)}` },
  { kind: "Telegram bot token", text: `bot 123456789:AA${alnum(33, "TeLeGrAm")}`, secret: `123456789:AA${alnum(33, "TeLeGrAm")}` },
  { kind: "Discord webhook", text: `https://discord.com/api/webhooks/123456789012345678/${alnum(68, "DiScOrD")}`, secret: alnum(68, "DiScOrD") },
  { kind: "Linear API key", text: `lin_api_${alnum(40)}`, secret: `lin_api_${alnum(40)}` },
  { kind: "Postman API key", text: `PMAK-${hex(24)}-${hex(34)}`, secret: `PMAK-${hex(24)}-${hex(34)}` },
];
