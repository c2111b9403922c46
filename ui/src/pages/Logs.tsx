import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Chart } from '../components/Chart';
import { LogList, logKey } from '../components/LogList';
import { Async, AttrInput, attrList, attrProblem, Empty, ErrorBox, FormErrors, Loading, Panel } from '../components/ui';
import { api, useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtCompact, fmtCount } from '../lib/format';
import { SEVERITY_MIN_OPTIONS } from '../lib/otel';
import { setParams } from '../lib/router';
import { SEVERITY_COLORS } from '../lib/theme';
import type { LogRow, SeriesAnswer } from '../lib/types';
import { ServiceDatalist } from './Traces';

const PAGE = 100;
const TAIL_MS = 2000;
const MAX_ROWS = 5000;
const SEV_ORDER = ['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE'];

type LogsAnswer = { logs: LogRow[]; next_cursor: string | null };

function Volume({ filters }: { filters: Record<string, string | string[]> }) {
  const { tick } = useApp();
  const scope = useScope();
  const st = useApi<SeriesAnswer<{ severity: string; values: (number | null)[] }>>('logs/volume', { ...scope, ...filters }, tick);
  const series = useMemo(() => {
    const s = [...(st.data?.series ?? [])];
    s.sort((a, b) => SEV_ORDER.indexOf(a.severity) - SEV_ORDER.indexOf(b.severity));
    return s.map((x) => ({ label: x.severity, values: x.values, color: SEVERITY_COLORS[x.severity] }));
  }, [st.data]);
  return (
    <Panel title="Volume by severity" busy={st.loading} testid="logs-volume">
      <Async state={st}>
        {(d) =>
          d.series.length === 0 || d.series.every((s) => s.values.every((v) => !v)) ? (
            <Empty>No logs in this range.</Empty>
          ) : (
            <Chart
              testid="logs-volume-chart"
              buckets={d.buckets}
              series={series}
              kind="bars"
              stacked
              height={160}
              yFormat={fmtCompact}
              onZoom={(from, to) => setParams({ range: null, from, to })}
            />
          )
        }
      </Async>
    </Panel>
  );
}

/** logs/facets (docs/API.md "Log facets"). */
export interface FacetsAnswer {
  total: number;
  levels: { severity: string; severity_min: number; count: number }[];
  services: { value: string; count: number }[];
  services_truncated: boolean;
  services_other: number;
  attributes: {
    sample: number;
    sampled: number;
    exact: boolean;
    keys_truncated: boolean;
    keys: { key: string; count: number; values: { value: string; count: number }[]; values_truncated: boolean }[];
  };
}

type Filters = { severity_min: string; service: string; q: string; trace_id: string; attr: string[] };

/** One facet value: a toggle button that adds it to the filter (the URL), or drops it when it is in. */
function FacetButton(props: { label: string; count: number; active: boolean; onClick?: () => void; testid: string; what: string }) {
  return (
    <li>
      <button
        type="button"
        class={props.active ? 'active' : ''}
        data-testid={props.testid}
        data-value={props.label}
        disabled={!props.onClick}
        aria-pressed={props.active}
        title={`${props.what} ${props.label}: ${props.count} records${props.onClick ? (props.active ? '; click to drop this filter' : '; click to filter by it') : ''}`}
        onClick={props.onClick}
      >
        <span class="facet-value">{props.label === '' ? '(empty)' : props.label}</span>
        <span class="facet-count">{fmtCount(props.count)}</span>
      </button>
    </li>
  );
}

/**
 * Counts of the records the filter matches, by severity, service and the
 * most frequent attribute values. Choosing a value narrows the filter to it; choosing it again drops it.
 */
function Facets({ filters, st }: { filters: Filters; st: ReturnType<typeof useApi<FacetsAnswer>> }) {
  return (
    <Panel title="Facets" busy={st.loading} testid="logs-facets">
      <Async state={st}>
        {(d) => (
          <>
            <p class="muted small" data-testid="logs-facets-total">
              {fmtCount(d.total)} matching records
            </p>
            {d.levels.length > 0 && (
              <div class="facet-group" data-testid="facet-severity">
                <h3>Severity (at least)</h3>
                <ul class="facet-list" aria-label="Severity: choose one to show it and above">
                  {d.levels.map((l) => (
                    <FacetButton
                      key={l.severity}
                      what="Severity"
                      label={l.severity}
                      count={l.count}
                      testid="facet-severity-value"
                      active={filters.severity_min === String(l.severity_min)}
                      onClick={
                        l.severity_min > 0
                          ? () => setParams({ severity_min: filters.severity_min === String(l.severity_min) ? null : String(l.severity_min) })
                          : undefined
                      }
                    />
                  ))}
                </ul>
              </div>
            )}
            {d.services.length > 0 && (
              <div class="facet-group" data-testid="facet-service">
                <h3>Service</h3>
                <ul class="facet-list" aria-label="Service: choose one to filter by it">
                  {d.services.map((v) => (
                    <FacetButton
                      key={v.value}
                      what="Service"
                      label={v.value}
                      count={v.count}
                      testid="facet-service-value"
                      active={filters.service === v.value}
                      onClick={() => setParams({ service: filters.service === v.value ? null : v.value })}
                    />
                  ))}
                </ul>
                {d.services_truncated && (
                  <p class="muted small">and {fmtCount(d.services_other)} records of other services</p>
                )}
              </div>
            )}
            {d.attributes.keys.map((k) => (
              <div class="facet-group" key={k.key} data-testid="facet-attr" data-key={k.key}>
                <h3 title={`${k.count} of the sampled records have ${k.key}`}>{k.key}</h3>
                <ul class="facet-list" aria-label={`${k.key}: choose a value to filter by it`}>
                  {k.values.map((v) => {
                    const f = `${k.key}=${v.value}`;
                    const active = filters.attr.includes(f);
                    return (
                      <FacetButton
                        key={v.value}
                        what={k.key}
                        label={v.value}
                        count={v.count}
                        testid="facet-attr-value"
                        active={active}
                        onClick={() => setParams({ attr: active ? filters.attr.filter((a) => a !== f) : [...filters.attr, f] })}
                      />
                    );
                  })}
                </ul>
              </div>
            ))}
            {d.attributes.keys.length > 0 && (
              <p class="muted small" data-testid="logs-facets-sample">
                {d.attributes.exact
                  ? `Attributes: all ${fmtCount(d.attributes.sampled)} records.`
                  : `Attributes: counted over the newest ${fmtCount(d.attributes.sampled)} of ${fmtCount(d.total)} records.`}
              </p>
            )}
          </>
        )}
      </Async>
    </Panel>
  );
}

/** What is wrong with a logs filter (from the form or the URL); empty when it can be applied. */
export function logsFilterProblems(f: { trace_id: string; attr: string[] }, attrText = ''): string[] {
  const out: string[] = [];
  const t = f.trace_id.trim().toLowerCase();
  if (t && !/^([0-9a-f]{16}){1,2}$/.test(t)) out.push(`Trace ID "${f.trace_id}" is not 32 or 16 hex digits`);
  for (const a of f.attr) {
    const p = attrProblem(a);
    if (p) out.push(p);
  }
  const p = attrProblem(attrText);
  if (p) out.push(p);
  return out;
}

export function LogsPage() {
  const { loc, tick, project } = useApp();
  const scope = useScope();
  const q = loc.q;
  const cur = {
    severity_min: q.get('severity_min') ?? '',
    service: q.get('service') ?? '',
    q: q.get('q') ?? '',
    trace_id: q.get('trace_id') ?? '',
    attr: q.getAll('attr'),
  };
  const key = JSON.stringify(cur);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const filters = useMemo(() => cur, [key]);
  const tail = q.get('tail') === '1';
  const [form, setForm] = useState(cur);
  const [attrText, setAttrText] = useState('');
  // The form follows the URL when it changes, not on mount: the state starts
  // from it, and what is typed before the first effect runs is kept.
  const formFor = useRef(filters);
  useEffect(() => {
    if (formFor.current === filters) return;
    formFor.current = filters;
    setForm(filters);
    setAttrText('');
  }, [filters]);

  // A URL with an invalid filter is not queried without it: the page says what is wrong.
  const urlProblems = logsFilterProblems(filters);
  const [formProblems, setFormProblems] = useState<string[]>([]);
  useEffect(() => setFormProblems([]), [filters]);
  const facets = useApi<FacetsAnswer>(urlProblems.length ? null : 'logs/facets', { ...scope, ...filters }, tick);
  const first = useApi<LogsAnswer>(urlProblems.length ? null : 'logs', { ...scope, ...filters, limit: PAGE }, tick);
  const [older, setOlder] = useState<{ logs: LogRow[]; cursor: string | null | undefined; loading: boolean; error?: string }>({
    logs: [],
    cursor: undefined,
    loading: false,
  });
  const [newer, setNewer] = useState<LogRow[]>([]);
  const [tailError, setTailError] = useState<string | null>(null);
  // A refresh of the same view keeps the lines already shown (loaded pages
  // and tailed lines) below the new first page, and where "Load more" goes
  // on, when that page reaches down to them: the list neither shrinks nor
  // loses its scroll position. Otherwise (another view, or more new lines
  // than a page) it starts over, rather than show a gap.
  const shownRef = useRef<LogRow[]>([]);
  const firstRef = useRef<LogsAnswer | undefined>(undefined);
  useEffect(() => {
    const prev = firstRef.current;
    const d = first.data;
    firstRef.current = d;
    const shown = shownRef.current;
    const top = shown.length ? logKey(shown[0]) : '';
    if (prev && d && top && shown.length <= MAX_ROWS && d.logs.some((l) => logKey(l) === top)) {
      setOlder((o) => ({ logs: shown, cursor: o.cursor !== undefined ? o.cursor : prev.next_cursor ?? null, loading: false }));
    } else {
      setOlder({ logs: [], cursor: undefined, loading: false });
    }
    setNewer([]);
  }, [first.data]);

  const all = useMemo(() => {
    const rows = [...newer, ...(first.data?.logs ?? []), ...older.logs];
    const seen = new Set<string>();
    return rows.filter((r) => {
      const k = logKey(r);
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
  }, [newer, first.data, older.logs]);
  useEffect(() => {
    shownRef.current = all;
  }, [all]);
  const cursor = older.cursor !== undefined ? older.cursor : first.data?.next_cursor ?? null;

  // Live tail: every 2 s, fetch what arrived after the newest line shown.
  const newestRef = useRef<number>(scope.from);
  newestRef.current = all.length ? all[0].time_ms : Math.max(newestRef.current, scope.from);
  const keysRef = useRef<Set<string>>(new Set());
  keysRef.current = new Set(all.slice(0, 500).map(logKey));
  useEffect(() => {
    if (!tail || !first.data) return;
    let stop = false;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      try {
        const to = Date.now() + 1000;
        // time_ms has sub-millisecond digits; the API takes whole milliseconds.
        const from = Math.floor(Math.min(newestRef.current, to - 1));
        const res = await api<LogsAnswer>('logs', { project, from, to, ...filters, limit: 500 });
        if (stop) return;
        const fresh = res.logs.filter((l) => !keysRef.current.has(logKey(l)));
        if (fresh.length) setNewer((n) => [...fresh, ...n].slice(0, MAX_ROWS));
        setTailError(null);
      } catch (e) {
        if (!stop) setTailError(e instanceof Error ? e.message : String(e));
      }
      if (!stop) timer = setTimeout(poll, TAIL_MS);
    };
    timer = setTimeout(poll, TAIL_MS);
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [tail, filters, project, first.data]);

  const loadMore = async () => {
    if (!cursor) return;
    setOlder((o) => ({ ...o, loading: true, error: undefined }));
    try {
      const res = await api<LogsAnswer>('logs', { ...scope, ...filters, limit: PAGE, cursor });
      setOlder((o) => ({ logs: [...o.logs, ...res.logs], cursor: res.next_cursor ?? null, loading: false }));
    } catch (e) {
      setOlder((o) => ({ ...o, loading: false, error: e instanceof Error ? e.message : String(e) }));
    }
  };

  const set = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <div class="page">
      <div class="page-head">
        <h1>Logs</h1>
        <label class={`toggle ${tail ? 'on' : ''}`} title="Poll for new lines every 2 seconds" data-testid="live-tail-toggle">
          <input
            type="checkbox"
            data-testid="live-tail"
            checked={tail}
            onChange={(e) => setParams({ tail: e.currentTarget.checked ? '1' : null }, true)}
          />
          <span class="toggle-dot" aria-hidden="true" />
          Live tail
        </label>
      </div>
      <form
        class="panel search-form"
        data-testid="logs-form"
        onSubmit={(e) => {
          e.preventDefault();
          const problems = logsFilterProblems(form, attrText);
          setFormProblems(problems);
          if (problems.length) return;
          setParams({
            severity_min: form.severity_min || null,
            service: form.service.trim() || null,
            q: form.q || null,
            trace_id: form.trace_id.trim().toLowerCase() || null,
            attr: attrList(form.attr, attrText),
          });
        }}
      >
        <label class="field">
          <span>Severity</span>
          <select
            data-testid="logs-severity"
            value={form.severity_min}
            onChange={(e) => setParams({ severity_min: e.currentTarget.value || null })}
          >
            {SEVERITY_MIN_OPTIONS.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        </label>
        <label class="field">
          <span>Service</span>
          <input list="log-services" data-testid="logs-service" value={form.service} onInput={set('service')} placeholder="any" />
          <ServiceDatalist id="log-services" />
        </label>
        <label class="field grow">
          <span>Text</span>
          <input type="search" data-testid="logs-q" value={form.q} onInput={set('q')} placeholder="body contains…" />
        </label>
        <label class="field">
          <span>Trace ID</span>
          <input class="mono" data-testid="logs-trace-id" size={20} value={form.trace_id} onInput={set('trace_id')} />
        </label>
        <div class="field grow">
          <span>Attributes</span>
          <AttrInput chips={form.attr} setChips={(attr) => setForm({ ...form, attr })} text={attrText} setText={setAttrText} testid="logs-attr" />
        </div>
        <FormErrors problems={formProblems} testid="logs-form-errors" />
        <div class="form-buttons">
          <button type="submit" class="primary" data-testid="logs-search">
            Search
          </button>
          <button
            type="button"
            onClick={() => setParams({ severity_min: null, service: null, q: null, trace_id: null, attr: null })}
          >
            Clear
          </button>
        </div>
      </form>
      {urlProblems.length === 0 && <Volume filters={filters} />}
      <div class="logs-layout">
        {urlProblems.length === 0 ? <Facets filters={filters} st={facets} /> : <div />}
        <Panel
          title={tail ? 'Live tail, newest first' : 'Newest first'}
          busy={first.loading}
          actions={
            <>
              {tail && (
                <span class="live" data-testid="tail-status">
                  <span class="live-dot" aria-hidden="true" /> live
                </span>
              )}
              {first.data && (
                <span class="muted" data-testid="logs-count">
                  {fmtCount(all.length)} lines shown
                  {facets.data && (
                    <>
                      {' '}
                      of <span data-testid="logs-total">{fmtCount(facets.data.total)}</span> matching
                    </>
                  )}
                </span>
              )}
            </>
          }
        >
          {tailError && <ErrorBox message={`Live tail: ${tailError}`} />}
          {urlProblems.length > 0 && (
            <ErrorBox message={`Not searched, the filter in the address is invalid: ${urlProblems.join('; ')}`} />
          )}
          <Async state={first}>
            {() =>
              all.length === 0 ? (
                <Empty>No logs in this range.</Empty>
              ) : (
                <>
                  <LogList logs={all} collapseRepeats />
                  {older.error && <ErrorBox message={older.error} />}
                  <div class="pager">
                    {cursor ? (
                      older.loading ? (
                        <Loading />
                      ) : (
                        <button type="button" data-testid="load-more" onClick={loadMore}>
                          Load more
                        </button>
                      )
                    ) : (
                      <span class="muted" data-testid="logs-end">
                        End of results
                      </span>
                    )}
                  </div>
                </>
              )
            }
          </Async>
        </Panel>
      </div>
    </div>
  );
}
