// The fallback graph (dagre layout, drawn as SVG): model groups as nodes, one edge per fallback
// list entry labelled with its kind and the failure classes that send a request along it.
import { useMemo } from 'preact/hooks';
import dagre from '@dagrejs/dagre';

const KIND_CLASS = {
  fallbacks: 'edge-fallbacks', default_fallbacks: 'edge-default', context_window_fallbacks: 'edge-context',
  content_policy_fallbacks: 'edge-content', degradation: 'edge-degradation',
};

const KIND_LABEL = {
  fallbacks: 'fallback', default_fallbacks: 'default', context_window_fallbacks: 'context window',
  content_policy_fallbacks: 'content policy',
};

const CHAR_W = 6.6;

/// `groups` = [{model_name, state}] (state: worst circuit of its deployments), `edges` = the
/// /tollgate/routing `fallbacks`.
export function FallbackGraph({ groups, edges }) {
  const layout = useMemo(() => {
    const g = new dagre.graphlib.Graph({ multigraph: true });
    g.setGraph({ rankdir: 'TB', nodesep: 40, edgesep: 20, ranksep: 40, marginx: 10, marginy: 10 });
    g.setDefaultEdgeLabel(() => ({}));
    const names = new Set(groups.map((x) => x.model_name));
    for (const e of edges) { names.add(e.from); names.add(e.to); }
    const state = Object.fromEntries(groups.map((x) => [x.model_name, x.state]));
    for (const n of names) g.setNode(n, { label: n, width: Math.min(260, 24 + n.length * CHAR_W), height: 34, state: state[n] ?? 'unknown' });
    edges.forEach((e, i) => {
      // The label: the list and position, then one line per failure class.
      const head = e.kind === 'degradation' ? `degrade: ${e.mode ?? 'mode'}` : `${KIND_LABEL[e.kind] ?? e.kind} #${e.order + 1}`;
      const lines = [head, ...((e.classes ?? []).length ? e.classes : ['no class'])];
      const width = Math.max(...lines.map((l) => l.length)) * 6 + 8;
      g.setEdge(e.from, e.to, { lines, width, height: lines.length * 13 + 4, labelpos: 'c', kind: e.kind, classes: e.classes, i }, `e${i}`);
    });
    dagre.layout(g);
    return g;
  }, [groups, edges]);

  const gr = layout.graph();
  const w = Math.ceil(gr.width ?? 200) + 20;
  const h = Math.ceil(gr.height ?? 60) + 20;
  return (
    <svg class="graph" width={w} height={h} viewBox={`0 0 ${w} ${h}`} data-testid="fallback-graph" role="img" aria-label="fallback graph">
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" />
        </marker>
      </defs>
      {layout.edges().map((ref) => {
        const e = layout.edge(ref);
        const d = e.points.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
        return (
          <g key={ref.name} class={`edge ${KIND_CLASS[e.kind] ?? ''}`} data-testid="graph-edge" data-from={ref.v} data-to={ref.w}
            data-kind={e.kind} data-classes={(e.classes ?? []).join(',')}>
            <path d={d} marker-end="url(#arrow)" />
            <rect class="edge-label-bg" x={e.x - e.width / 2} y={e.y - e.height / 2} width={e.width} height={e.height} rx="3" />
            <text x={e.x} y={e.y - e.height / 2 + 12} text-anchor="middle">
              {e.lines.map((l, j) => <tspan key={j} x={e.x} dy={j ? 13 : 0} class={j ? 'cls' : 'kind'}>{l}</tspan>)}
            </text>
          </g>
        );
      })}
      {layout.nodes().map((n) => {
        const v = layout.node(n);
        return (
          <g key={n} class={`node state-${v.state}`} data-testid="graph-node" data-name={n}>
            <rect x={v.x - v.width / 2} y={v.y - v.height / 2} width={v.width} height={v.height} rx="6" />
            <text x={v.x} y={v.y + 4} text-anchor="middle">{n}</text>
          </g>
        );
      })}
    </svg>
  );
}
