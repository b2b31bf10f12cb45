/** The part of stopword 3.x the router uses: its stop-word lists, one array per language (ISO 639-3). */
declare module "stopword" {
  export const eng: readonly string[];
  export const zho: readonly string[];
}
