/**
 * A layered layout of the topology for the console's SVG (no graph library): nodes in columns by
 * how many links lead to them from a node nothing connects to (callers left, what they depend on
 * to the right), ordered in each column by the average row of their callers, links as curves from
 * a node's right side to the next one's left side. Pure, so it is tested without a browser.
 */

/** Size of one node box and the gaps between them, in SVG units. */
export const BOX = { w: 210, h: 46, gapX: 90, gapY: 18, pad: 16 } as const;

/** A placed node: its box's top-left corner, column and row. */
export interface Placed {
  id: string;
  x: number;
  y: number;
  column: number;
  row: number;
}

/** A placed link: the SVG path from its source to its target. */
export interface Routed {
  from: string;
  to: string;
  path: string;
  /** Where its label goes (the middle of the curve). */
  mid: { x: number; y: number };
  /** It points back to the same or an earlier column (a cycle or a same-column call). */
  back: boolean;
}

/** The whole layout. */
export interface Layout {
  nodes: Map<string, Placed>;
  links: Routed[];
  width: number;
  height: number;
}

/** Columns by longest path from the nodes nothing links to; links that close a cycle are left out of the ranking. */
export function columns(ids: readonly string[], links: ReadonlyArray<{ from: string; to: string }>): Map<string, number> {
  const known = new Set(ids);
  const out = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const l of links) if (known.has(l.from) && known.has(l.to) && l.from !== l.to) out.get(l.from)!.push(l.to);
  for (const list of out.values()) list.sort();
  // Depth-first from every node in id order: an edge to a node still on the stack closes a cycle.
  const state = new Map<string, 1 | 2>();
  const order: string[] = [];
  const forward = new Map<string, string[]>(ids.map((id) => [id, []]));
  const visit = (start: string) => {
    const stack: Array<{ id: string; i: number }> = [{ id: start, i: 0 }];
    state.set(start, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const next = out.get(top.id)![top.i++];
      if (next === undefined) {
        state.set(top.id, 2);
        order.push(top.id);
        stack.pop();
        continue;
      }
      const s = state.get(next);
      if (s === 1) continue; // back edge
      forward.get(top.id)!.push(next);
      if (s === undefined) {
        state.set(next, 1);
        stack.push({ id: next, i: 0 });
      }
    }
  };
  for (const id of [...ids].sort()) if (!state.has(id)) visit(id);
  const column = new Map<string, number>(ids.map((id) => [id, 0]));
  for (const id of order.reverse()) for (const to of forward.get(id)!) column.set(to, Math.max(column.get(to)!, column.get(id)! + 1));
  return column;
}

/** Lays out the nodes and links. */
export function layoutTopology(ids: readonly string[], links: ReadonlyArray<{ from: string; to: string }>): Layout {
  const column = columns(ids, links);
  const byColumn: string[][] = [];
  for (const id of [...ids].sort()) (byColumn[column.get(id)!] ??= []).push(id);
  const row = new Map<string, number>();
  const place = () => byColumn.forEach((col) => col.forEach((id, i) => row.set(id, i)));
  place();
  const callers = new Map<string, string[]>();
  for (const l of links) if (row.has(l.from) && row.has(l.to)) (callers.get(l.to) ?? callers.set(l.to, []).get(l.to)!).push(l.from);
  // Two sweeps: a node moves towards the average row of the nodes that call it.
  for (let sweep = 0; sweep < 2; sweep++) {
    for (const col of byColumn.slice(1)) {
      if (!col) continue;
      const weight = (id: string) => {
        const from = (callers.get(id) ?? []).filter((f) => column.get(f)! < column.get(id)!);
        return from.length ? from.reduce((a, f) => a + row.get(f)!, 0) / from.length : row.get(id)!;
      };
      const w = new Map(col.map((id) => [id, weight(id)]));
      col.sort((a, b) => w.get(a)! - w.get(b)! || (a < b ? -1 : 1));
      col.forEach((id, i) => row.set(id, i));
    }
  }
  const nodes = new Map<string, Placed>();
  byColumn.forEach((col, c) =>
    (col ?? []).forEach((id, r) => nodes.set(id, { id, column: c, row: r, x: BOX.pad + c * (BOX.w + BOX.gapX), y: BOX.pad + r * (BOX.h + BOX.gapY) })),
  );
  const routed: Routed[] = [];
  for (const l of links) {
    const a = nodes.get(l.from);
    const b = nodes.get(l.to);
    if (!a || !b || a === b) continue;
    const back = b.column <= a.column;
    const x1 = a.x + BOX.w;
    const y1 = a.y + BOX.h / 2;
    const x2 = back ? b.x + BOX.w : b.x;
    const y2 = b.y + BOX.h / 2;
    // A forward link bows between the columns; a back link loops out to the right of both.
    const bend = back ? BOX.gapX / 2 + 20 : Math.max(30, (x2 - x1) / 2);
    const path = back ? `M${x1},${y1} C${x1 + bend},${y1} ${x2 + bend},${y2} ${x2},${y2}` : `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
    routed.push({ from: l.from, to: l.to, path, mid: { x: back ? Math.max(x1, x2) + bend * 0.75 : (x1 + x2) / 2, y: (y1 + y2) / 2 }, back });
  }
  const cols = byColumn.length || 1;
  const rows = Math.max(1, ...byColumn.map((c) => c?.length ?? 0));
  return { nodes, links: routed, width: BOX.pad * 2 + cols * BOX.w + (cols - 1) * BOX.gapX + BOX.gapX / 2, height: BOX.pad * 2 + rows * BOX.h + (rows - 1) * BOX.gapY };
}
