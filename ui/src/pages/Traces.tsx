import { useEffect, useRef, useState } from 'preact/hooks';
import { Async, AttrInput, attrList, attrProblem, ATTR_RE, Empty, ErrorBox, FormErrors, Link, Panel, rowLink } from '../components/ui';
import { useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtCount, fmtDateTime, fmtMs, fmtTime, shortId } from '../lib/format';
import { hrefTo, navigate, setParams } from '../lib/router';
import type { ServiceRow, TraceRow } from '../lib/types';

const STATUSES = [
  { value: '', label: 'Any status' },
  { value: 'error', label: 'Error' },
  { value: 'ok', label: 'OK' },
  { value: 'unset', label: 'Unset' },
];

export function ServiceDatalist({ id }: { id: string }) {
  const scope = useScope();
  const st = useApi<{ services: ServiceRow[] }>('services', scope);
  return (
    <datalist id={id}>
      {(st.data?.services ?? []).map((s) => (
        <option key={s.service} value={s.service} />
      ))}
    </datalist>
  );
}

function TraceIdBox() {
  const [id, setId] = useState('');
  const clean = id.trim().toLowerCase();
  const ok = /^([0-9a-f]{16}){1,2}$/.test(clean);
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (ok) navigate(hrefTo(`/traces/${clean}`));
      }}
    >
      <input
        type="text"
        class="mono"
        size={34}
        data-testid="trace-id-input"
        placeholder="Trace ID (32 or 16 hex digits)"
        aria-label="Open a trace by ID"
        value={id}
        onInput={(e) => setId(e.currentTarget.value)}
      />
      <button type="submit" disabled={!ok}>
        Open
      </button>
    </form>
  );
}

/** What is wrong with a traces filter (from the form or the URL); empty when it can be applied. */
export function tracesFilterProblems(f: { min: string; max: string; attrs: string[] }, attrText = ''): string[] {
  const out: string[] = [];
  const num = (label: string, v: string) => {
    if (v.trim() === '') return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) {
      out.push(`${label} duration "${v}" is not a number of milliseconds >= 0`);
      return undefined;
    }
    return n;
  };
  const min = num('Min', f.min);
  const max = num('Max', f.max);
  if (min !== undefined && max !== undefined && min > max) out.push(`Min duration (${min} ms) is above max duration (${max} ms)`);
  for (const a of f.attrs) if (!ATTR_RE.test(a.trim())) out.push(`Attribute filter "${a}" is not key=value`);
  const p = attrProblem(attrText);
  if (p) out.push(p);
  return out;
}

export function TracesPage() {
  const { loc, tick } = useApp();
  const scope = useScope();
  const q = loc.q;
  const cur = {
    service: q.get('service') ?? '',
    endpoint: q.get('endpoint') ?? '',
    status: q.get('status') ?? '',
    min: q.get('min_duration_ms') ?? '',
    max: q.get('max_duration_ms') ?? '',
    attrs: q.getAll('attr'),
  };
  const [form, setForm] = useState(cur);
  const [attrText, setAttrText] = useState('');
  const key = JSON.stringify(cur);
  // The form follows the URL when it changes, not on mount (as on Logs).
  const formFor = useRef(key);
  useEffect(() => {
    if (formFor.current === key) return;
    formFor.current = key;
    setForm(cur);
    setAttrText('');
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  // A URL with an invalid filter (typed, pasted or bookmarked) is not queried
  // without that filter: it says what is wrong instead.
  const urlProblems = tracesFilterProblems(cur);
  const [formProblems, setFormProblems] = useState<string[]>([]);
  useEffect(() => setFormProblems([]), [key]);
  const st = useApi<{ traces: TraceRow[] }>(
    urlProblems.length ? null : 'traces',
    {
      ...scope,
      service: cur.service,
      endpoint: cur.endpoint,
      status: cur.status,
      min_duration_ms: cur.min,
      max_duration_ms: cur.max,
      attr: cur.attrs,
      limit: 50,
    },
    tick,
  );
  // Marked as soon as typed; the message comes with Search.
  const durBad = form.min.trim() !== '' && form.max.trim() !== '' && Number(form.min) > Number(form.max);
  const set = (k: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  return (
    <div class="page">
      <div class="page-head">
        <h1>Traces</h1>
        <TraceIdBox />
      </div>
      <form
        class="panel search-form"
        data-testid="traces-form"
        onSubmit={(e) => {
          e.preventDefault();
          const problems = tracesFilterProblems(form, attrText);
          setFormProblems(problems);
          if (problems.length) return;
          setParams({
            service: form.service.trim() || null,
            endpoint: form.endpoint.trim() || null,
            status: form.status || null,
            min_duration_ms: form.min || null,
            max_duration_ms: form.max || null,
            attr: attrList(form.attrs, attrText),
          });
        }}
      >
        <label class="field">
          <span>Service</span>
          <input list="trace-services" data-testid="traces-service" value={form.service} onInput={set('service')} placeholder="any" />
          <ServiceDatalist id="trace-services" />
        </label>
        <label class="field grow">
          <span>Endpoint</span>
          <input data-testid="traces-endpoint" value={form.endpoint} onInput={set('endpoint')} placeholder="route or span name" />
        </label>
        <label class="field">
          <span>Status</span>
          <select data-testid="traces-status" value={form.status} onChange={set('status')}>
            {STATUSES.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
        <label class="field narrow">
          <span>Min ms</span>
          <input type="number" min="0" step="any" data-testid="traces-min" value={form.min} aria-invalid={durBad ? 'true' : undefined} onInput={set('min')} />
        </label>
        <label class="field narrow">
          <span>Max ms</span>
          <input type="number" min="0" step="any" data-testid="traces-max" value={form.max} aria-invalid={durBad ? 'true' : undefined} onInput={set('max')} />
        </label>
        <div class="field grow">
          <span>Attributes</span>
          <AttrInput
            chips={form.attrs}
            setChips={(attrs) => setForm({ ...form, attrs })}
            text={attrText}
            setText={setAttrText}
            testid="traces-attr"
          />
        </div>
        <FormErrors problems={formProblems} testid="traces-form-errors" />
        <div class="form-buttons">
          <button type="submit" class="primary" data-testid="traces-search">
            Search
          </button>
          <button
            type="button"
            onClick={() =>
              setParams({ service: null, endpoint: null, status: null, min_duration_ms: null, max_duration_ms: null, attr: null })
            }
          >
            Clear
          </button>
        </div>
      </form>
      <Panel title="Traces, newest first" busy={st.loading}>
        {urlProblems.length > 0 ? (
          <ErrorBox message={`Not searched, the filter in the address is invalid: ${urlProblems.join('; ')}`} />
        ) : (
        <Async state={st}>
          {(d) => {
            if (d.traces.length === 0) return <Empty>No traces match in this range.</Empty>;
            const longest = Math.max(...d.traces.map((t) => t.duration_ms), 0.001);
            return (
              <div class="table-wrap">
                <table class="table" data-testid="traces-table">
                  <thead>
                    <tr>
                      <th>Start</th>
                      <th>Root</th>
                      <th class="num">Spans</th>
                      <th>Duration</th>
                      <th>Trace ID</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.traces.map((t) => {
                      const href = hrefTo(`/traces/${t.trace_id}`);
                      return (
                        <tr key={t.trace_id} class="clickable" data-testid="trace-row" data-trace-id={t.trace_id} {...rowLink(href)}>
                          <td title={fmtDateTime(t.start_ms)}>{fmtTime(t.start_ms, true)}</td>
                          <td>
                            {t.error && (
                              <span class="badge bad" title="Has error spans">
                                error
                              </span>
                            )}{' '}
                            <span class="muted">{t.service}</span> <Link href={href}>{t.name}</Link>
                          </td>
                          <td class="num">{fmtCount(t.span_count)}</td>
                          <td class="dur-cell">
                            <span class="dur-bar" style={{ width: `${Math.max(1, (t.duration_ms / longest) * 100)}%` }} />
                            <span class="dur-text">{fmtMs(t.duration_ms)}</span>
                          </td>
                          <td class="mono muted" title={t.trace_id}>
                            {shortId(t.trace_id, 12)}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            );
          }}
        </Async>
        )}
      </Panel>
    </div>
  );
}
