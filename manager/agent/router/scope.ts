/**
 * Phrase matching for the router's explainable signal (I3): a playbook's triggers and tags found in
 * the input. The scope check itself is rank.ts's (references ranked, no subject list).
 */

/** True when `phrase` occurs in `text` (both lower case); ASCII words must not be part of a longer word. */
export function containsPhrase(text: string, phrase: string): boolean {
  const p = phrase.toLowerCase();
  let from = 0;
  for (;;) {
    const i = text.indexOf(p, from);
    if (i < 0) return false;
    const before = i > 0 ? text[i - 1] : "";
    const after = text[i + p.length] ?? "";
    const wordStart = /[a-z0-9]/.test(p[0]) ? !/[a-z0-9]/.test(before) : true;
    const wordEnd = /[a-z0-9]/.test(p[p.length - 1]) ? !/[a-z0-9]/.test(after) : true;
    if (wordStart && wordEnd) return true;
    from = i + 1;
  }
}
