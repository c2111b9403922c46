import { useMemo } from 'preact/hooks';
import { Chart } from '../components/Chart';
import { Async, Empty, Link, Panel, rowLink } from '../components/ui';
import { useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtCount, fmtMs, fmtPct, fmtRate, fmtRetention } from '../lib/format';
import { hrefTo, setParams } from '../lib/router';
import type { Project, ServiceRow, SignalName } from '../lib/types';

const SIGNALS: SignalName[] = ['spans', 'logs', 'metrics'];

/** How long this project's data is kept, per signal (server flags, or the project's own). */
function RetentionNote() {
  const { project } = useApp();
  const st = useApi<{ projects: Project[] }>('projects', {});
  const retention = st.data?.projects.find((p) => p.name === project)?.retention;
  if (!retention) return null;
  return (
    <p class="muted retention-note" data-testid="retention">
      Data kept:{' '}
      {SIGNALS.map((s, i) => (
        <span key={s} data-testid={`retention-${s}`} title={retention[s].source === 'project' ? 'set for this project' : 'server default'}>
          {i > 0 ? ' · ' : ''}
          {s} {fmtRetention(retention[s].seconds)}
          {retention[s].source === 'project' ? ' (this project)' : ''}
        </span>
      ))}
    </p>
  );
}

/** services/series: per service and bucket, entry-span counts and P95. */
export interface ServiceSeriesAnswer {
  step_ms: number;
  buckets: number[];
  services_total: number;
  truncated: boolean;
  series: { service: string; requests: number[]; errors: number[]; p95_ms: (number | null)[] }[];
}

const TOP_SERVICES = 10;

/**
 * Request rate, error rate and P95 per service over time. Lines, never
 * stacked: a service's rate is read against the others', and percentiles and
 * ratios do not add up. A bucket without requests is a gap in the error rate
 * and P95 (there is nothing to divide or rank), a true 0 in the rate.
 */
function ServiceCharts() {
  const { tick } = useApp();
  const scope = useScope();
  const st = useApi<ServiceSeriesAnswer>('services/series', { ...scope, top: TOP_SERVICES }, tick);
  const charts = useMemo(() => {
    const d = st.data;
    if (!d) return null;
    const stepS = d.step_ms / 1000;
    return {
      rate: d.series.map((s) => ({ label: s.service, values: s.requests.map((n) => n / stepS) })),
      errors: d.series.map((s) => ({ label: s.service, values: s.requests.map((n, i) => (n > 0 ? s.errors[i] / n : null)) })),
      p95: d.series.map((s) => ({ label: s.service, values: s.p95_ms })),
    };
  }, [st.data]);
  const zoom = (from: number, to: number) => setParams({ range: null, from, to });
  return (
    <Panel
      title="Services over time"
      busy={st.loading}
      testid="overview-charts"
      actions={
        st.data?.truncated ? (
          <span class="muted" data-testid="overview-charts-truncated">
            top {st.data.series.length} of {fmtCount(st.data.services_total)} services by requests
          </span>
        ) : undefined
      }
    >
      <Async state={st}>
        {(d) =>
          d.series.length === 0 || !charts ? (
            <Empty>No requests in this range.</Empty>
          ) : (
            <div class="chart-grid">
              <figure class="chart-cell">
                <figcaption>Request rate (per second)</figcaption>
                <Chart testid="overview-rate-chart" buckets={d.buckets} series={charts.rate} kind="line" yFormat={fmtRate} height={180} onZoom={zoom} />
              </figure>
              <figure class="chart-cell">
                <figcaption>Error rate</figcaption>
                <Chart testid="overview-errors-chart" buckets={d.buckets} series={charts.errors} kind="line" yFormat={fmtPct} height={180} onZoom={zoom} />
              </figure>
              <figure class="chart-cell">
                <figcaption>P95 latency</figcaption>
                <Chart testid="overview-p95-chart" buckets={d.buckets} series={charts.p95} kind="line" yFormat={fmtMs} height={180} onZoom={zoom} />
              </figure>
            </div>
          )
        }
      </Async>
    </Panel>
  );
}

export function OverviewPage() {
  const { tick } = useApp();
  const scope = useScope();
  const st = useApi<{ services: ServiceRow[] }>('services', scope, tick);
  return (
    <div class="page">
      <h1>Overview</h1>
      <Async state={st}>
        {(d) => {
          const total = d.services.reduce((a, s) => a + s.requests, 0);
          const errors = d.services.reduce((a, s) => a + s.errors, 0);
          const rate = d.services.reduce((a, s) => a + (s.rate_per_s ?? 0), 0);
          return (
            <>
              <div class="stats" data-testid="overview-stats">
                <div class="stat">
                  <span class="stat-label">Services</span>
                  <span class="stat-value">{fmtCount(d.services.length)}</span>
                </div>
                <div class="stat">
                  <span class="stat-label">Requests</span>
                  <span class="stat-value">{fmtCount(total)}</span>
                </div>
                <div class="stat">
                  <span class="stat-label">Throughput</span>
                  <span class="stat-value">{fmtRate(rate)}</span>
                </div>
                <div class={`stat ${errors > 0 ? 'bad' : ''}`}>
                  <span class="stat-label">Error rate</span>
                  <span class="stat-value">{fmtPct(total ? errors / total : 0)}</span>
                </div>
              </div>
              <ServiceCharts />
              <Panel title="Services" busy={st.loading}>
                {d.services.length === 0 ? (
                  <Empty>No requests in this range. Entry spans (server or root spans) appear here once ingested.</Empty>
                ) : (
                  <div class="table-wrap">
                    <table class="table" data-testid="services-table">
                      <thead>
                        <tr>
                          <th>Service</th>
                          <th class="num">Requests</th>
                          <th class="num">Rate</th>
                          <th class="num">Errors</th>
                          <th class="num">Error rate</th>
                          <th class="num">P50</th>
                          <th class="num">P95</th>
                          <th class="num">P99</th>
                        </tr>
                      </thead>
                      <tbody>
                        {d.services.map((s) => {
                          const href = hrefTo('/endpoints', { service: s.service });
                          return (
                            <tr
                              key={s.service}
                              class="clickable"
                              data-testid="service-row"
                              data-service={s.service}
                              {...rowLink(href)}
                            >
                              <td>
                                <Link href={href}>{s.service}</Link>
                              </td>
                              <td class="num">{fmtCount(s.requests)}</td>
                              <td class="num">{fmtRate(s.rate_per_s)}</td>
                              <td class="num">{fmtCount(s.errors)}</td>
                              <td class={`num ${s.error_rate > 0 ? 'bad' : ''}`}>{fmtPct(s.error_rate)}</td>
                              <td class="num">{fmtMs(s.p50_ms)}</td>
                              <td class="num">{fmtMs(s.p95_ms)}</td>
                              <td class="num">{fmtMs(s.p99_ms)}</td>
                            </tr>
                          );
                        })}
                      </tbody>
                    </table>
                  </div>
                )}
              </Panel>
            </>
          );
        }}
      </Async>
      <RetentionNote />
    </div>
  );
}
