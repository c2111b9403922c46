import { useMemo } from 'preact/hooks';
import { Chart } from '../components/Chart';
import { ServiceSelect } from '../components/ServiceSelect';
import { Async, Empty, Link, Panel, rowLink, SortHeader } from '../components/ui';
import { useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtCompact, fmtCount, fmtMs, fmtPct } from '../lib/format';
import { hrefTo, setParams } from '../lib/router';
import type { EndpointRow, SeriesAnswer } from '../lib/types';

const PAGE = 50;
const METRICS = [
  { key: 'p50', label: 'P50 latency' },
  { key: 'p95', label: 'P95 latency' },
  { key: 'p99', label: 'P99 latency' },
  { key: 'count', label: 'Requests' },
];
const SORTS = ['count', 'error_rate', 'p50', 'p95', 'p99', 'endpoint'];

function EndpointsChart({ service }: { service: string }) {
  const { loc, tick } = useApp();
  const scope = useScope();
  const metric = METRICS.some((m) => m.key === loc.q.get('metric')) ? loc.q.get('metric')! : 'p95';
  const isCount = metric === 'count';
  // Percentiles do not add up: only request counts are stacked.
  const stacked = isCount && loc.q.get('stack') !== '0';
  const st = useApi<SeriesAnswer<{ name: string; values: (number | null)[] }>>(
    'endpoints/series',
    { ...scope, service, metric, top: 10 },
    tick,
  );
  const series = useMemo(
    () => (st.data?.series ?? []).map((s) => ({ label: s.name, values: s.values })),
    [st.data],
  );
  return (
    <Panel
      title={`${METRICS.find((m) => m.key === metric)!.label}${stacked ? ', stacked' : ''} by endpoint`}
      busy={st.loading}
      testid="endpoints-chart-panel"
      actions={
        <>
          <select
            aria-label="Chart metric"
            data-testid="metric-select"
            value={metric}
            onChange={(e) => setParams({ metric: e.currentTarget.value === 'p95' ? null : e.currentTarget.value }, true)}
          >
            {METRICS.map((m) => (
              <option key={m.key} value={m.key}>
                {m.label}
              </option>
            ))}
          </select>
          {isCount && (
            <label class="check">
              <input
                type="checkbox"
                data-testid="stack-toggle"
                checked={stacked}
                onChange={(e) => setParams({ stack: e.currentTarget.checked ? null : '0' }, true)}
              />
              Stacked
            </label>
          )}
        </>
      }
    >
      <Async state={st}>
        {(d) =>
          d.series.length === 0 ? (
            <Empty>No spans in this range.</Empty>
          ) : (
            <Chart
              testid="endpoints-chart"
              buckets={d.buckets}
              series={series}
              kind={isCount ? 'area' : 'line'}
              stacked={stacked}
              yFormat={isCount ? fmtCompact : fmtMs}
              onZoom={(from, to) => setParams({ range: null, from, to })}
            />
          )
        }
      </Async>
    </Panel>
  );
}

export function EndpointsPage() {
  const { loc, tick } = useApp();
  const scope = useScope();
  const service = loc.q.get('service') ?? '';
  const sort = SORTS.includes(loc.q.get('sort') ?? '') ? loc.q.get('sort')! : 'count';
  const order = loc.q.get('order') === 'asc' || loc.q.get('order') === 'desc'
    ? (loc.q.get('order') as 'asc' | 'desc')
    : sort === 'endpoint' ? 'asc' : 'desc';
  const offset = Math.max(0, Number(loc.q.get('offset')) || 0);
  const st = useApi<{ total: number; endpoints: EndpointRow[] }>(
    'endpoints',
    { ...scope, service, sort, order, limit: PAGE, offset },
    tick,
  );
  const onSort = (col: string, o: 'asc' | 'desc') => setParams({ sort: col, order: o, offset: null });
  const th = (label: string, col: string, numeric = true) => (
    <SortHeader label={label} col={col} sort={sort} order={order} onSort={onSort} numeric={numeric} defaultOrder={col === 'endpoint' ? 'asc' : 'desc'} />
  );
  return (
    <div class="page">
      <div class="page-head">
        <h1>Endpoints</h1>
        <div class="filters">
          <ServiceSelect value={service} onChange={(v) => setParams({ service: v || null, offset: null })} />
        </div>
      </div>
      <EndpointsChart service={service} />
      <Panel title="Endpoints" busy={st.loading}>
        <Async state={st}>
          {(d) =>
            d.endpoints.length === 0 ? (
              <Empty>{offset > 0 ? 'No more endpoints.' : 'No spans in this range.'}</Empty>
            ) : (
              <>
                <div class="table-wrap">
                  <table class="table" data-testid="endpoints-table">
                    <thead>
                      <tr>
                        <th>Service</th>
                        {th('Endpoint', 'endpoint', false)}
                        {th('Requests', 'count')}
                        <th class="num">Errors</th>
                        {th('Error rate', 'error_rate')}
                        {th('P50', 'p50')}
                        {th('P95', 'p95')}
                        {th('P99', 'p99')}
                      </tr>
                    </thead>
                    <tbody>
                      {d.endpoints.map((r) => {
                        const href = hrefTo('/traces', { service: r.service, endpoint: r.endpoint });
                        return (
                          <tr
                            key={`${r.service}\u0000${r.endpoint}`}
                            class="clickable"
                            data-testid="endpoint-row"
                            data-service={r.service}
                            data-endpoint={r.endpoint}
                            {...rowLink(href)}
                            title="Show traces of this endpoint"
                          >
                            <td class="muted">{r.service}</td>
                            <td class="mono">
                              <Link href={href}>{r.endpoint}</Link>
                            </td>
                            <td class="num" data-testid="endpoint-count">{fmtCount(r.count)}</td>
                            <td class="num">{fmtCount(r.errors)}</td>
                            <td class={`num ${r.error_rate > 0 ? 'bad' : ''}`} data-testid="endpoint-error-rate">
                              {fmtPct(r.error_rate)}
                            </td>
                            <td class="num">{fmtMs(r.p50_ms)}</td>
                            <td class="num">{fmtMs(r.p95_ms)}</td>
                            <td class="num">{fmtMs(r.p99_ms)}</td>
                          </tr>
                        );
                      })}
                    </tbody>
                  </table>
                </div>
                <div class="pager" data-testid="pager">
                  <span class="muted">
                    {fmtCount(offset + 1)}–{fmtCount(offset + d.endpoints.length)} of {fmtCount(d.total)}
                  </span>
                  <button
                    type="button"
                    data-testid="page-prev"
                    disabled={offset === 0}
                    onClick={() => setParams({ offset: Math.max(0, offset - PAGE) || null })}
                  >
                    ← Previous
                  </button>
                  <button
                    type="button"
                    data-testid="page-next"
                    disabled={offset + d.endpoints.length >= d.total}
                    onClick={() => setParams({ offset: offset + PAGE })}
                  >
                    Next →
                  </button>
                </div>
              </>
            )
          }
        </Async>
      </Panel>
    </div>
  );
}
