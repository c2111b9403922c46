// The duration distribution of the Traces page: a bar per log-scale duration
// bucket (GET /api/v1/traces/durations), trimmed to the buckets from the
// shortest to the longest span. Dragging across bars (or clicking one)
// selects a duration range: onSelect gets its bounds in ms (max null for the
// open last bucket). From the keyboard: arrow keys (Home, End) pick a bar,
// with Shift they extend the choice, Enter filters, Esc drops it. The selected
// range, from the page's min/max filter, is highlighted. What was drawn is kept on the element as `histState` so tests
// check the chart's own data.
import { useRef, useState } from 'preact/hooks';
import { fmtCount, fmtMs } from '../lib/format';

export interface DurationBucket {
  from_ms: number;
  to_ms: number | null;
  count: number;
}

export interface HistState {
  buckets: DurationBucket[];
  selected: [number, number] | null;
}

const W = 1000;
const H = 120;
const AXIS = 18;

/** The trimmed buckets: from the first to the last with spans (none when there are none). */
export function shownBuckets(all: DurationBucket[]): DurationBucket[] {
  const first = all.findIndex((b) => b.count > 0);
  if (first < 0) return [];
  let last = all.length - 1;
  while (all[last].count === 0) last--;
  return all.slice(first, last + 1);
}

function label(ms: number): string {
  const short = (v: number) => String(+v.toPrecision(3));
  return ms >= 1000 ? `${short(ms / 1000)} s` : ms >= 1 ? `${short(ms)} ms` : `${short(ms * 1000)} µs`;
}

export function DurationChart(props: {
  buckets: DurationBucket[];
  /** The page's current min/max duration filter, in ms. */
  min?: number;
  max?: number;
  onSelect: (minMs: number, maxMs: number | null) => void;
  /** Of the answer: every matching span, the shortest and longest (ms). */
  total: number;
  minMs: number | null;
  maxMs: number | null;
  testid?: string;
}) {
  const shown = shownBuckets(props.buckets);
  const ref = useRef<SVGSVGElement>(null);
  const [drag, setDrag] = useState<[number, number] | null>(null);
  // [anchor, cursor] of a choice made with the keyboard.
  const [keys, setKeys] = useState<[number, number] | null>(null);
  const n = shown.length;
  const top = Math.max(1, ...shown.map((b) => b.count));
  const bw = n ? W / n : W;
  // The buckets the filter covers: those overlapping [min, max) (a brushed
  // max is the end of the last bar, so the bar starting there is not lit).
  const filtered = (b: DurationBucket) =>
    (props.min !== undefined || props.max !== undefined) &&
    (props.min === undefined || b.to_ms === null || b.to_ms > props.min) &&
    (props.max === undefined || b.from_ms < props.max);
  const chosen = drag ?? keys;
  const sel = chosen ? [Math.min(chosen[0], chosen[1]), Math.max(chosen[0], chosen[1])] : null;
  const range = (lo: number, hi: number) =>
    `${label(shown[lo].from_ms)} to ${shown[hi].to_ms === null ? 'more' : label(shown[hi].to_ms!)}`;
  const onKeyDown = (e: KeyboardEvent) => {
    if (!n) return;
    if (e.key === 'Enter' && keys) {
      e.preventDefault();
      const [lo, hi] = [Math.min(keys[0], keys[1]), Math.max(keys[0], keys[1])];
      setKeys(null);
      props.onSelect(shown[lo].from_ms, shown[hi].to_ms);
      return;
    }
    if (e.key === 'Escape' && keys) {
      e.preventDefault();
      e.stopPropagation();
      setKeys(null);
      return;
    }
    const at = keys ? keys[1] : -1;
    const to =
      e.key === 'ArrowRight' ? Math.min(n - 1, at + 1)
      : e.key === 'ArrowLeft' ? (at < 0 ? n - 1 : Math.max(0, at - 1))
      : e.key === 'Home' ? 0
      : e.key === 'End' ? n - 1
      : null;
    if (to === null) return;
    e.preventDefault();
    setKeys([e.shiftKey && keys ? keys[0] : to, to]);
  };
  const indexAt = (clientX: number) => {
    const box = ref.current!.getBoundingClientRect();
    const i = Math.floor(((clientX - box.left) / box.width) * n);
    return Math.max(0, Math.min(n - 1, i));
  };
  const state: HistState = { buckets: shown, selected: sel ? [sel[0], sel[1]] : null };
  const total = props.total;
  const summary =
    n === 0
      ? 'No spans in this range'
      : `${fmtCount(total)} spans from ${label(shown[0].from_ms)} to ${shown[n - 1].to_ms === null ? 'more' : label(shown[n - 1].to_ms!)}; drag across the bars to filter by duration`;
  const ticks = shown.map((b, i) => ({ i, ms: b.from_ms })).filter((t, k) => k % Math.max(1, Math.ceil(n / 8)) === 0);
  return (
    <div
      class="duration-chart"
      data-testid={props.testid ?? 'duration-chart'}
      ref={(el) => {
        if (el) (el as HTMLElement & { histState?: HistState }).histState = state;
      }}
      tabIndex={n ? 0 : undefined}
      role="group"
      aria-label="Span durations: arrow keys choose bars, Shift extends, Enter filters by their durations"
      onKeyDown={onKeyDown}
      onBlur={() => setKeys(null)}
    >
      <span class="sr-only" aria-live="polite">
        {keys && sel ? `${range(sel[0], sel[1])}: ${fmtCount(shown.slice(sel[0], sel[1] + 1).reduce((a, b) => a + b.count, 0))} spans` : ''}
      </span>
      <svg
        ref={ref}
        viewBox={`0 0 ${W} ${H + AXIS}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`Span durations: ${summary}`}
        onPointerDown={(e) => {
          if (!n) return;
          const i = indexAt(e.clientX);
          (e.currentTarget as SVGSVGElement).setPointerCapture?.(e.pointerId);
          setDrag([i, i]);
        }}
        onPointerMove={(e) => {
          if (drag) setDrag([drag[0], indexAt(e.clientX)]);
        }}
        onPointerUp={(e) => {
          if (!drag) return;
          const j = indexAt(e.clientX);
          const lo = Math.min(drag[0], j);
          const hi = Math.max(drag[0], j);
          setDrag(null);
          props.onSelect(shown[lo].from_ms, shown[hi].to_ms);
        }}
        onPointerCancel={() => setDrag(null)}
      >
        {shown.map((b, i) => {
          const h = b.count ? Math.max(2, (b.count / top) * (H - 4)) : 0;
          const active = sel ? i >= sel[0] && i <= sel[1] : filtered(b);
          return (
            <g key={i} data-testid="duration-bar" data-from={b.from_ms} data-to={b.to_ms ?? ''} data-count={b.count}>
              <rect class="hit" x={i * bw} y={0} width={bw} height={H} />
              <rect class={`bar ${active ? 'active' : ''}`} x={i * bw + bw * 0.08} y={H - h} width={bw * 0.84} height={h}>
                <title>
                  {`${label(b.from_ms)} – ${b.to_ms === null ? '…' : label(b.to_ms)}: ${fmtCount(b.count)} spans`}
                </title>
              </rect>
            </g>
          );
        })}
        <line class="axis" x1={0} x2={W} y1={H + 0.5} y2={H + 0.5} />
      </svg>
      <div class="duration-ticks" aria-hidden="true">
        {ticks.map((t) => (
          <span key={t.i} style={{ left: `${(t.i / Math.max(1, n)) * 100}%` }}>
            {label(t.ms)}
          </span>
        ))}
      </div>
      <div class="muted duration-note" data-testid="duration-note">
        {props.total === 0 || props.minMs === null || props.maxMs === null
          ? 'No spans match in this range.'
          : `${fmtCount(props.total)} spans, ${fmtMs(props.minMs)} to ${fmtMs(props.maxMs)}. Drag across the bars to filter by duration.`}
      </div>
    </div>
  );
}
