// The service map's layout: callers left, callees right. Deterministic (the
// same nodes and edges always give the same picture): cycles are broken by a
// depth-first search in name order (an edge back to a service on the search
// path is drawn backwards and ignored for layering), layers are the longest
// path from a source, and each layer is ordered by the mean position of its
// callers in the layer before (ties by name).

export interface LayoutInput {
  nodes: string[];
  edges: { from: string; to: string }[];
}

export interface LayoutNode {
  id: string;
  layer: number;
  x: number;
  y: number;
}

export interface LayoutResult {
  nodes: Map<string, LayoutNode>;
  /** Edges ignored for layering (they close a cycle), as "from\u0000to". */
  back: Set<string>;
  width: number;
  height: number;
}

export const NODE_W = 180;
export const NODE_H = 74;
const GAP_X = 190;
const GAP_Y = 44;
const PAD = 24;

export function edgeKey(from: string, to: string): string {
  return `${from}\u0000${to}`;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function layoutMap(input: LayoutInput): LayoutResult {
  const names = [...new Set([...input.nodes, ...input.edges.flatMap((e) => [e.from, e.to])])].sort(byName);
  const out = new Map<string, string[]>();
  for (const n of names) out.set(n, []);
  for (const e of input.edges) if (e.from !== e.to) out.get(e.from)!.push(e.to);
  for (const list of out.values()) list.sort(byName);

  // Back edges: an iterative DFS from each unvisited node in name order.
  const state = new Map<string, 0 | 1 | 2>(); // 0 new, 1 on the path, 2 done
  const back = new Set<string>();
  for (const root of names) {
    if (state.get(root)) continue;
    const stack: { node: string; next: number }[] = [{ node: root, next: 0 }];
    state.set(root, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const succ = out.get(top.node)!;
      if (top.next >= succ.length) {
        state.set(top.node, 2);
        stack.pop();
        continue;
      }
      const v = succ[top.next++];
      const s = state.get(v) ?? 0;
      if (s === 1) back.add(edgeKey(top.node, v));
      else if (s === 0) {
        state.set(v, 1);
        stack.push({ node: v, next: 0 });
      }
    }
  }
  for (const e of input.edges) if (e.from === e.to) back.add(edgeKey(e.from, e.to));

  // Longest path from a source over the forward edges (a DAG now), in a
  // topological order (Kahn's, taking names in order).
  const indeg = new Map<string, number>(names.map((n) => [n, 0]));
  const fwd = new Map<string, string[]>(names.map((n) => [n, []]));
  const preds = new Map<string, string[]>(names.map((n) => [n, []]));
  for (const [u, list] of out) {
    for (const v of list) {
      if (back.has(edgeKey(u, v))) continue;
      fwd.get(u)!.push(v);
      preds.get(v)!.push(u);
      indeg.set(v, indeg.get(v)! + 1);
    }
  }
  const layer = new Map<string, number>(names.map((n) => [n, 0]));
  const ready = names.filter((n) => indeg.get(n) === 0);
  while (ready.length) {
    ready.sort(byName);
    const u = ready.shift()!;
    for (const v of fwd.get(u)!) {
      layer.set(v, Math.max(layer.get(v)!, layer.get(u)! + 1));
      indeg.set(v, indeg.get(v)! - 1);
      if (indeg.get(v) === 0) ready.push(v);
    }
  }

  // Order within layers by the mean index of callers in earlier layers.
  const layers: string[][] = [];
  for (const n of names) (layers[layer.get(n)!] ??= []).push(n);
  const index = new Map<string, number>();
  layers.forEach((l, li) => {
    const key = (n: string) => {
      const ps = preds.get(n)!.filter((p) => index.has(p));
      return ps.length ? ps.reduce((s, p) => s + index.get(p)!, 0) / ps.length : Number.POSITIVE_INFINITY;
    };
    if (li > 0) l.sort((a, b) => key(a) - key(b) || byName(a, b));
    l.forEach((n, i) => index.set(n, i));
  });

  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const height = PAD * 2 + tallest * NODE_H + (tallest - 1) * GAP_Y;
  const nodes = new Map<string, LayoutNode>();
  layers.forEach((l, li) => {
    const used = l.length * NODE_H + (l.length - 1) * GAP_Y;
    const top = (height - used) / 2;
    l.forEach((n, i) => {
      nodes.set(n, { id: n, layer: li, x: PAD + li * (NODE_W + GAP_X), y: top + i * (NODE_H + GAP_Y) });
    });
  });
  const width = PAD * 2 + Math.max(1, layers.length) * NODE_W + Math.max(0, layers.length - 1) * GAP_X;
  return { nodes, back, width, height };
}
