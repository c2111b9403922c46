// The service map: services as boxes, calls between them (parent/child spans
// across services, computed by the server: /api/v1/service_map) as arrows
// labelled with rate, error % and P95. A box opens the service's endpoints,
// an arrow the traces of the called service, both in the same time range.
import { useMemo } from 'preact/hooks';
import { ServiceSelect } from '../components/ServiceSelect';
import { Async, Empty, onActivateKey, Panel } from '../components/ui';
import { useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtMs, fmtPct, fmtRate } from '../lib/format';
import { edgeKey, layoutMap, NODE_H, NODE_W } from '../lib/mapLayout';
import { hrefTo, navigate, setParams } from '../lib/router';

interface MapNode {
  service: string;
  count: number;
  errors: number;
  rate_per_s: number;
  error_rate: number;
  p95_ms: number | null;
}

interface MapEdge {
  from: string;
  to: string;
  count: number;
  rate_per_s: number;
  errors: number;
  error_rate: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

interface MapAnswer {
  nodes: MapNode[];
  edges: MapEdge[];
  truncated: boolean;
  parent_margin_ms: number;
}

/** Colour class of an error rate: none, some (under 5%), many. */
function errClass(rate: number): string {
  return rate <= 0 ? 'ok' : rate < 0.05 ? 'warn' : 'bad';
}

/** Two lines: rate and error %, then P95 (the same for a box, from its entry spans). */
function statLines(rate: number, errorRate: number, p95: number | null): [string, string] {
  return [`${fmtRate(rate)} · ${fmtPct(errorRate)} err`, `p95 ${fmtMs(p95)}`];
}

function MapView({ data }: { data: MapAnswer }) {
  const layout = useMemo(
    () => layoutMap({ nodes: data.nodes.map((n) => n.service), edges: data.edges }),
    [data],
  );
  const nodeHref = (service: string) => hrefTo('/endpoints', { service });
  const edgeHref = (e: MapEdge) => hrefTo('/traces', { service: e.to });
  return (
    <div class="map-scroll">
      <svg
        class="service-map"
        data-testid="service-map"
        width={layout.width}
        height={layout.height}
        viewBox={`0 0 ${layout.width} ${layout.height}`}
        role="group"
        aria-label="Service map"
      >
        <defs>
          {['ok', 'warn', 'bad'].map((c) => (
            <marker key={c} id={`map-arrow-${c}`} viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">
              <path d="M 0 0 L 10 5 L 0 10 z" class={`map-arrowhead ${c}`} />
            </marker>
          ))}
        </defs>
        {/* tabindex in lower case: Preact sets SVG attributes as spelled, and SVG
            (unlike HTML) does not fold "tabIndex" to the focusable attribute. */}
        {data.edges.map((e, i) => {
          const a = layout.nodes.get(e.from)!;
          const b = layout.nodes.get(e.to)!;
          const backwards = layout.back.has(edgeKey(e.from, e.to));
          let d: string;
          let lx: number;
          let ly: number;
          if (!backwards && b.layer > a.layer) {
            const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
            const mid = (x1 + x2) / 2;
            d = `M ${x1} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`;
            lx = mid;
            ly = (y1 + y2) / 2 - 20;
          } else {
            // A call back to an earlier layer (a cycle): a loop under the boxes.
            const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y + NODE_H;
            const dip = Math.max(y1, y2) + 40 + (i % 3) * 14;
            d = `M ${x1} ${y1} C ${x1} ${dip}, ${x2} ${dip}, ${x2} ${y2}`;
            lx = (x1 + x2) / 2;
            ly = dip - 18;
          }
          const cls = errClass(e.error_rate);
          const [line1, line2] = statLines(e.rate_per_s, e.error_rate, e.p95_ms);
          const label = `${line1} · ${line2}`;
          const go = () => navigate(edgeHref(e));
          return (
            <g
              key={edgeKey(e.from, e.to)}
              class={`map-edge ${cls}`}
              data-testid="map-edge"
              data-from={e.from}
              data-to={e.to}
              role="link"
              tabindex={0}
              aria-label={`${e.from} calls ${e.to}: ${line1} ${line2}. Open the traces of ${e.to}`}
              onClick={go}
              onKeyDown={onActivateKey(go)}
            >
              <title>{`${e.from} → ${e.to}: ${e.count} calls, ${e.errors} errors, p50 ${fmtMs(e.p50_ms)}, p95 ${fmtMs(e.p95_ms)}`}</title>
              <path d={d} class="map-edge-hit" />
              <path d={d} class="map-edge-line" marker-end={`url(#map-arrow-${cls})`} />
              <text x={lx} y={ly} text-anchor="middle" class="map-edge-label" data-testid="map-edge-label">
                <tspan x={lx}>{line1}</tspan>{' '}
                <tspan x={lx} dy="1.2em">
                  {line2}
                </tspan>
              </text>
            </g>
          );
        })}
        {data.nodes.map((n) => {
          const p = layout.nodes.get(n.service)!;
          const go = () => navigate(nodeHref(n.service));
          const [line1, line2] = statLines(n.rate_per_s, n.error_rate, n.p95_ms);
          const shown = n.service.length > 22 ? `${n.service.slice(0, 21)}…` : n.service;
          return (
            <g
              key={n.service}
              class={`map-node ${errClass(n.error_rate)}`}
              data-testid="map-node"
              data-service={n.service}
              transform={`translate(${p.x} ${p.y})`}
              role="link"
              tabindex={0}
              // The accessible name holds the visible text (WCAG 2.5.3), then what it opens.
              aria-label={`${shown} ${line1} ${line2}. ${n.service}: open its endpoints`}
              onClick={go}
              onKeyDown={onActivateKey(go)}
            >
              <rect width={NODE_W} height={NODE_H} rx="6" class="map-node-box" />
              {/* One text element, its lines separated by spaces: the visible
                  text reads as the accessible name's start. */}
              <text x={10} y={22}>
                <tspan class="map-node-name" data-testid="map-node-name">
                  {shown}
                </tspan>{' '}
                <tspan x={10} dy="22" class="map-node-stats" data-testid="map-node-stats">
                  {line1}
                </tspan>{' '}
                <tspan x={10} dy="1.3em" class="map-node-stats" data-testid="map-node-stats">
                  {line2}
                </tspan>
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}

export function ServiceMapPage() {
  const { loc, tick } = useApp();
  const scope = useScope();
  const service = loc.q.get('service') ?? '';
  const st = useApi<MapAnswer>('service_map', { ...scope, service }, tick);
  return (
    <div class="page">
      <div class="page-head">
        <h1>Service map</h1>
        <div class="filters">
          <ServiceSelect
            value={service}
            label="Focus"
            testid="map-focus"
            onChange={(v) => setParams({ service: v || null })}
          />
        </div>
      </div>
      <Panel title="Calls between services" busy={st.loading} testid="service-map-panel">
        <Async state={st}>
          {(d) =>
            d.nodes.length === 0 ? (
              <Empty>No spans in this range.</Empty>
            ) : (
              <>
                {d.truncated && (
                  <p class="note" data-testid="map-truncated">
                    Only the {d.edges.length} busiest calls are drawn (the cap is --max-service-map-edges).
                  </p>
                )}
                {d.edges.length === 0 && (
                  <p class="note" data-testid="map-no-edges">
                    No calls between services in this range: no span has a parent span of another service.
                  </p>
                )}
                <MapView data={d} />
                <p class="note muted">
                  Boxes: entry spans of each service (rate, error %, P95). Arrows: spans whose parent span belongs to
                  another service, labelled with call rate, error % and P95 of the called span. Click a box for its
                  endpoints, an arrow for the traces of the called service.
                </p>
              </>
            )
          }
        </Async>
      </Panel>
    </div>
  );
}
