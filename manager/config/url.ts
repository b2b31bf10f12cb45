/** Checks a URL setting that may hold a secret (a chat webhook's token): the reason names the rule, never the URL. */

/** Why `url` cannot be used as an http(s) endpoint, with the rule it breaks; undefined when it can. */
export function urlProblem(url: string): { what: string; rule: string } | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { what: "is not a valid URL", rule: "url" };
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return { what: "must use http or https", rule: "url_scheme" };
  // fetch refuses a URL with credentials, and its error quotes the URL.
  if (u.username || u.password) return { what: "must not carry a user or password (user:password@)", rule: "url_no_credentials" };
  return undefined;
}
