import { useMemo, useState } from 'preact/hooks';
import { Chart } from '../components/Chart';
import { Async, Empty, Panel } from '../components/ui';
import { useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtUnit } from '../lib/format';
import { setParams } from '../lib/router';
import type { MetricInfo, SeriesAnswer } from '../lib/types';

const AGG_LABELS: Record<string, string> = {
  avg: 'Average',
  sum: 'Sum',
  min: 'Min',
  max: 'Max',
  rate: 'Rate per second',
  last: 'Last value',
  p50: 'P50',
  p95: 'P95',
  p99: 'P99',
};

/**
 * The aggregations that mean something for a metric, its default first.
 * Histograms (explicit or exponential) chart percentiles; a counter charts its
 * rate, and a cumulative counter's running totals are never summed or averaged
 * (the server refuses that too); an UpDownCounter is a level: its last value.
 * A summary charts the quantiles it reports.
 */
export function aggsFor(metric: Pick<MetricInfo, 'type' | 'monotonic' | 'temporality'> | undefined): string[] {
  const t = (metric?.type ?? '').toLowerCase();
  if (t.includes('histogram') || t === 'summary') return ['p95', 'p50', 'p99'];
  if (t === 'sum') {
    if (!metric?.monotonic) return ['last', 'avg', 'min', 'max'];
    return metric.temporality === 'delta' ? ['rate', 'sum', 'last'] : ['rate', 'last'];
  }
  return ['avg', 'min', 'max', 'last', 'sum'];
}

/** Metrics whose name or description holds every word of `text`, any case. */
export function searchMetrics(metrics: MetricInfo[], text: string): MetricInfo[] {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return metrics;
  return metrics.filter((m) => {
    const hay = `${m.name} ${m.description}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  });
}

function FilterEditor(props: { labels: Record<string, string[]>; filters: string[] }) {
  const keys = Object.keys(props.labels).sort();
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const k = keys.includes(key) ? key : keys[0] ?? '';
  const values = props.labels[k] ?? [];
  return (
    <div class="field grow">
      <span>Filter</span>
      <div class="attr-input">
        {props.filters.map((f) => (
          <span class="chip" key={f}>
            {f}
            <button type="button" aria-label={`Remove ${f}`} onClick={() => setParams({ filter: props.filters.filter((x) => x !== f) })}>
              ×
            </button>
          </span>
        ))}
        <select aria-label="Filter label" data-testid="metric-filter-key" value={k} onChange={(e) => { setKey(e.currentTarget.value); setValue(''); }}>
          {keys.map((x) => (
            <option key={x} value={x}>
              {x}
            </option>
          ))}
        </select>
        <select aria-label="Filter value" data-testid="metric-filter-value" value={value} onChange={(e) => setValue(e.currentTarget.value)}>
          <option value="">value…</option>
          {values.map((v) => (
            <option key={v} value={v}>
              {v}
            </option>
          ))}
        </select>
        <button
          type="button"
          data-testid="metric-filter-add"
          disabled={!k || !value}
          onClick={() => {
            const f = `${k}=${value}`;
            if (!props.filters.includes(f)) setParams({ filter: [...props.filters, f] });
            setValue('');
          }}
        >
          Add
        </button>
      </div>
    </div>
  );
}

function seriesLabel(labels: Record<string, string>, fallback: string): string {
  const parts = Object.entries(labels ?? {}).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(', ') : fallback;
}

function MetricChart(props: { metric: MetricInfo; agg: string; groupBy: string[]; filters: string[] }) {
  const { tick } = useApp();
  const scope = useScope();
  const st = useApi<SeriesAnswer<{ labels: Record<string, string>; values: (number | null)[] }>>(
    'metrics/series',
    { ...scope, name: props.metric.name, agg: props.agg, group_by: props.groupBy.join(','), filter: props.filters },
    tick,
  );
  const series = useMemo(
    () => (st.data?.series ?? []).map((s) => ({ label: seriesLabel(s.labels, props.metric.name), values: s.values })),
    [st.data, props.metric.name],
  );
  const unit = props.metric.unit;
  const yFormat = useMemo(
    () => (props.agg === 'rate' ? (v: number) => `${fmtUnit(v, unit)}/s` : (v: number) => fmtUnit(v, unit)),
    [props.agg, unit],
  );
  return (
    <Panel
      title={
        <>
          {AGG_LABELS[props.agg] ?? props.agg} of <span class="mono">{props.metric.name}</span>
          {props.groupBy.length > 0 && <span class="muted"> by {props.groupBy.join(', ')}</span>}
        </>
      }
      busy={st.loading}
      testid="metric-chart-panel"
    >
      <Async state={st}>
        {(d) =>
          d.series.length === 0 ? (
            <Empty>No data points in this range.</Empty>
          ) : (
            <Chart
              testid="metrics-chart"
              buckets={d.buckets}
              series={series}
              kind="line"
              height={320}
              yFormat={yFormat}
              onZoom={(from, to) => setParams({ range: null, from, to })}
            />
          )
        }
      </Async>
    </Panel>
  );
}

export function MetricsPage() {
  const { loc } = useApp();
  const scope = useScope();
  const list = useApi<{ metrics: MetricInfo[] }>('metrics', scope);
  const metrics = useMemo(() => [...(list.data?.metrics ?? [])].sort((a, b) => a.name.localeCompare(b.name)), [list.data]);
  const name = loc.q.get('metric') ?? metrics[0]?.name ?? '';
  const metric = metrics.find((m) => m.name === name);
  const aggs = aggsFor(metric);
  const [search, setSearch] = useState('');
  const shown = useMemo(() => searchMetrics(metrics, search), [metrics, search]);
  const pick = (m: string) => setParams({ metric: m, agg: null, group_by: null, filter: null });
  const agg = aggs.includes(loc.q.get('agg') ?? '') ? loc.q.get('agg')! : aggs[0];
  const groupBy = (loc.q.get('group_by') ?? '').split(',').filter(Boolean);
  const filters = loc.q.getAll('filter');
  const labels = useApi<{ labels: Record<string, string[]> }>('metrics/labels', { ...scope, name }, 0);
  const labelMap = name ? labels.data?.labels ?? {} : {};
  return (
    <div class="page">
      <div class="page-head">
        <h1>Metrics</h1>
      </div>
      <Async state={list}>
        {() =>
          metrics.length === 0 ? (
            <Empty>No metrics in this range.</Empty>
          ) : (
            <>
              <div class="panel search-form" data-testid="metrics-form">
                <label class="field">
                  <span>Search metrics</span>
                  <input
                    type="search"
                    data-testid="metric-search"
                    placeholder="name or description"
                    value={search}
                    onInput={(e) => setSearch(e.currentTarget.value)}
                    onKeyDown={(e) => {
                      if (e.key === 'Enter' && shown.length > 0 && shown[0].name !== name) pick(shown[0].name);
                    }}
                  />
                  <span class="muted" data-testid="metric-search-count">
                    {search ? `${shown.length} of ${metrics.length}` : `${metrics.length} metrics`}
                  </span>
                </label>
                <label class="field grow">
                  <span>Metric</span>
                  <select data-testid="metric-name-select" value={name} onChange={(e) => pick(e.currentTarget.value)}>
                    {name && !shown.some((m) => m.name === name) && <option value={name}>{name}</option>}
                    {shown.map((m) => (
                      <option key={m.name} value={m.name}>
                        {m.name} ({m.type}{m.unit ? `, ${m.unit}` : ''})
                      </option>
                    ))}
                  </select>
                </label>
                <label class="field">
                  <span>Aggregation</span>
                  <select data-testid="agg-select" value={agg} onChange={(e) => setParams({ agg: e.currentTarget.value })}>
                    {aggs.map((a) => (
                      <option key={a} value={a}>
                        {AGG_LABELS[a]}
                      </option>
                    ))}
                  </select>
                </label>
                <div class="field grow">
                  <span>Group by</span>
                  <div class="checks" data-testid="group-by">
                    {Object.keys(labelMap).length === 0 && <span class="muted">{labels.loading ? 'Loading…' : 'No labels'}</span>}
                    {Object.keys(labelMap)
                      .sort()
                      .map((k) => (
                        <label class="check" key={k}>
                          <input
                            type="checkbox"
                            checked={groupBy.includes(k)}
                            onChange={(e) => {
                              const next = e.currentTarget.checked ? [...groupBy, k] : groupBy.filter((x) => x !== k);
                              setParams({ group_by: next.join(',') || null });
                            }}
                          />
                          {k}
                        </label>
                      ))}
                  </div>
                </div>
                <FilterEditor labels={labelMap} filters={filters} />
              </div>
              {metric?.description && <p class="muted metric-desc">{metric.description}</p>}
              {metric ? (
                <MetricChart metric={metric} agg={agg} groupBy={groupBy} filters={filters} />
              ) : (
                <Empty>
                  No metric named <span class="mono">{name}</span> in this range.
                </Empty>
              )}
            </>
          )
        }
      </Async>
    </div>
  );
}
