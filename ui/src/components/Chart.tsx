// uPlot wrapper: time series as lines, (stacked) areas or (stacked) bars,
// themed from CSS variables, resized with its container. Dragging across the
// plot selects a time range (onZoom).
//
// Faithful by construction: a null value is a gap (never drawn as 0), a value
// whose neighbours are gaps is drawn as a point (a line needs two), and only
// additive series (counts) may be stacked. What was drawn is kept on the
// element as `chartState` (see ChartState) so tests can check the chart's own
// data rather than pixels.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { fmtCompact, fmtTime } from '../lib/format';
import { cssVar, paletteColor, useTheme } from '../lib/theme';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
  color?: string;
}

export interface ChartProps {
  buckets: number[]; // ms since the epoch
  series: ChartSeries[];
  kind?: 'line' | 'area' | 'bars';
  /** Only for counts: stacking percentiles or averages adds up values that do not add. */
  stacked?: boolean;
  yFormat?: (v: number) => string;
  height?: number;
  testid?: string;
  onZoom?: (fromMs: number, toMs: number) => void;
}

/** What a chart drew: bucket starts (ms), y values (stacked when stacked) and, per series, the indices drawn as points ("all" or a list). */
export interface ChartState {
  buckets: number[];
  kind: string;
  stacked: boolean;
  labels: string[];
  data: (number | null)[][];
  points: ('all' | number[])[];
}

/** Indices of values whose neighbours are both gaps (or the edge): no line passes through them. */
function isolated(vals: (number | null)[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < vals.length; i++) {
    if (vals[i] !== null && (i === 0 || vals[i - 1] === null) && (i === vals.length - 1 || vals[i + 1] === null)) {
      out.push(i);
    }
  }
  return out;
}

function withAlpha(hex: string, alpha: number): string {
  const a = Math.round(alpha * 255)
    .toString(16)
    .padStart(2, '0');
  return /^#[0-9a-f]{6}$/i.test(hex) ? hex + a : hex;
}

export function Chart(props: ChartProps) {
  const ref = useRef<HTMLDivElement>(null);
  const theme = useTheme();
  const zoomRef = useRef(props.onZoom);
  zoomRef.current = props.onZoom;
  const kind = props.kind ?? 'line';
  const stacked = !!props.stacked && props.series.length > 0;
  const height = props.height ?? 240;

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const yFormat = props.yFormat ?? fmtCompact;
    const raw = props.series.map((s) => s.values.map((v) => (v === null || v === undefined ? null : Number(v))));
    let ys: (number | null)[][] = raw;
    const bands: uPlot.Band[] = [];
    if (stacked) {
      // A bucket where no series has a value is a gap in every layer; in a
      // bucket with data, a series without a value adds nothing (a count of 0).
      const acc = new Array<number>(props.buckets.length).fill(0);
      const some = props.buckets.map((_, i) => raw.some((vals) => vals[i] !== null));
      ys = raw.map((vals) => vals.map((v, i) => (some[i] ? (acc[i] += v ?? 0) : null)));
      for (let i = 2; i <= ys.length; i++) bands.push({ series: [i, i - 1] });
    }
    const state: ChartState = {
      buckets: props.buckets,
      kind,
      stacked,
      labels: props.series.map((s) => s.label),
      data: ys,
      points: ys.map(() => []),
    };
    (el as HTMLElement & { chartState?: ChartState }).chartState = state;
    const lone = ys.map(isolated);
    const dot = 6;
    const text = cssVar('--text-muted') || '#666';
    const grid = cssVar('--grid') || '#ddd';
    const font = `11px ${cssVar('--font') || 'system-ui, sans-serif'}`;
    const axis = (extra: Partial<uPlot.Axis> = {}): uPlot.Axis => ({
      stroke: text,
      font,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1, size: 4 },
      ...extra,
    });
    const bars = kind === 'bars' ? uPlot.paths.bars!({ size: [0.8, 60], align: 1 }) : undefined;
    const series: uPlot.Series[] = [
      { value: (_u, v) => (v === null || v === undefined ? '—' : fmtTime(v * 1000)) },
      ...props.series.map((s, i) => {
        const color = s.color ?? paletteColor(i);
        return {
          label: s.label,
          stroke: color,
          width: kind === 'bars' ? 0 : 1.5,
          fill: kind === 'line' ? undefined : withAlpha(color, kind === 'bars' ? 0.85 : 0.35),
          paths: bars,
          points: {
            size: dot,
            fill: color,
            // Lines show every point when there is room; otherwise, as for
            // areas, only the points no line passes through. Bars draw
            // every value already.
            show: (u: uPlot) => kind === 'line' && props.buckets.length * dot * 4 <= u.bbox.width / devicePixelRatio,
            filter: (_u: uPlot, si: number, show: boolean) => {
              const idxs = kind === 'bars' ? [] : lone[si - 1];
              state.points[si - 1] = show ? 'all' : idxs;
              return show || idxs.length === 0 ? null : idxs;
            },
          },
          spanGaps: false,
          value: (_u: uPlot, _v: number | null, _si: number, idx: number | null) => {
            const r = idx === null ? null : raw[i][idx];
            return r === null || r === undefined ? '—' : yFormat(r);
          },
        } as uPlot.Series;
      }),
    ];
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      series,
      bands,
      scales: {
        x: { time: true },
        y: {
          range: (_u, min, max) => {
            const lo = kind !== 'line' || stacked || min >= 0 ? 0 : min;
            const hi = max > 0 ? max * 1.08 : 1;
            return [lo, hi];
          },
        },
      },
      axes: [axis(), axis({ size: 64, values: (_u, splits) => splits.map((v) => (v === null ? '' : yFormat(v))) })],
      cursor: { drag: { x: true, y: false, setScale: false }, points: { size: 6 } },
      legend: { live: true },
      hooks: {
        // uPlot sizes its canvas after the constructor returns.
        ready: [() => void (el.style.height = '')],
        setSelect: [
          (u) => {
            const { left, width } = u.select;
            if (width > 4 && zoomRef.current) {
              const from = u.posToVal(left, 'x') * 1000;
              const to = u.posToVal(left + width, 'x') * 1000;
              zoomRef.current(Math.floor(from), Math.ceil(to));
            }
            u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          },
        ],
      },
    };
    const data = [props.buckets.map((b) => b / 1000), ...ys] as uPlot.AlignedData;
    const chart = new uPlot(opts, data, el);
    let lastWidth = el.clientWidth;
    const ro = new ResizeObserver(() => {
      const w = el.clientWidth;
      if (w > 0 && w !== lastWidth) {
        lastWidth = w;
        chart.setSize({ width: Math.max(200, w), height });
      }
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      // Hold the place until the next chart is drawn: a page whose height
      // changes for an instant is scrolled by the browser (scroll anchoring).
      el.style.height = `${el.getBoundingClientRect().height}px`;
      chart.destroy();
    };
  }, [props.buckets, props.series, kind, stacked, height, theme, props.yFormat]);

  return <div class="chart" ref={ref} data-testid={props.testid} />;
}
