/** The part of mvdan-sh (mvdan/sh's parser, GopherJS build) that skill/risk uses. */
declare module "mvdan-sh" {
  /** Any syntax node; fields depend on NodeType (see mvdan/sh's syntax package). */
  export type ShNode = { [field: string]: any };
  export interface ShParser {
    Parse(src: string, name: string): ShNode;
  }
  const sh: {
    syntax: {
      NewParser(...options: unknown[]): ShParser;
      KeepComments(on: boolean): unknown;
      Variant(v: unknown): unknown;
      LangBash: unknown;
      NodeType(node: ShNode): string;
      Walk(node: ShNode, visit: (node: ShNode | null) => boolean): void;
    };
  };
  export default sh;
}
