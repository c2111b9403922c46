import { useEffect, useRef, useState } from 'preact/hooks';
import { DurationChart, type DurationBucket } from '../components/DurationChart';
import { Async, AttrInput, attrList, attrProblem, Empty, ErrorBox, FormErrors, Link, Panel, rowLink } from '../components/ui';
import { useApi, type Params } from '../lib/api';
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
  for (const a of f.attrs) {
    const p = attrProblem(resourceSplit(a).text);
    if (p) out.push(p);
  }
  const p = attrProblem(resourceSplit(attrText).text);
  if (p) out.push(p);
  return out;
}

/** A filter chip "resource.<condition>" is on the span's resource attributes (the API's resource_attr). */
const RESOURCE = 'resource.';
function resourceSplit(chip: string): { resource: boolean; text: string } {
  const t = chip.trim();
  return t.startsWith(RESOURCE) && t.length > RESOURCE.length
    ? { resource: true, text: t.slice(RESOURCE.length) }
    : { resource: false, text: t };
}

function splitAttrs(chips: string[]): { attr: string[]; resource_attr: string[] } {
  const attr: string[] = [];
  const resource_attr: string[] = [];
  for (const c of chips) {
    const { resource, text } = resourceSplit(c);
    (resource ? resource_attr : attr).push(text);
  }
  return { attr, resource_attr };
}

const SORTS = [
  { value: 'start', label: 'Newest first', sort: 'start', order: 'desc' },
  { value: 'duration-desc', label: 'Slowest first', sort: 'duration', order: 'desc' },
  { value: 'duration-asc', label: 'Fastest first', sort: 'duration', order: 'asc' },
];

interface Suggestion {
  key: string;
  count: number;
  values: { value: string; count: number }[];
}
interface SuggestionMap {
  keys: Suggestion[];
  keys_truncated: boolean;
}
interface AttrSuggestions {
  sampled: number;
  span: SuggestionMap;
  resource: SuggestionMap;
}

/**
 * Suggestions for the attribute input from the spans the filter matches:
 * keys of span attributes and of their resources ("resource." keys), with
 * their most frequent values; once a key and "=" or "!=" are typed, the most
 * frequent values of that key among the spans that have it.
 */
function AttrSuggestionList({ id, filter, text }: { id: string; filter: Params | null; text: string }) {
  const m = /^(resource\.)?([^=!<>]+?)(!=|=)/.exec(text.trim());
  const keyed = m ? { key: m[2], map: m[1] ? 'resource' : 'span', op: m[3], prefix: m[1] ?? '' } : null;
  const all = useApi<AttrSuggestions>(filter ? 'traces/attributes' : null, filter ?? {});
  const one = useApi<AttrSuggestions>(filter && keyed ? 'traces/attributes' : null, { ...filter, key: keyed?.key, map: keyed?.map });
  const options: string[] = [];
  if (keyed && one.data) {
    for (const k of keyed.map === 'resource' ? one.data.resource.keys : one.data.span.keys) {
      for (const v of k.values) options.push(`${keyed.prefix}${k.key}${keyed.op}${v.value}`);
    }
  } else if (all.data) {
    for (const [prefix, map] of [['', all.data.span], [RESOURCE, all.data.resource]] as const) {
      for (const k of map.keys) {
        options.push(`${prefix}${k.key}`);
        for (const v of k.values) options.push(`${prefix}${k.key}=${v.value}`);
      }
    }
  }
  return (
    <datalist id={id} data-testid="traces-attr-suggestions">
      {options.map((o) => (
        <option key={o} value={o} />
      ))}
    </datalist>
  );
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
    attrs: [...q.getAll('attr'), ...q.getAll('resource_attr').map((a) => RESOURCE + a)],
  };
  const sortKey = `${q.get('sort') === 'duration' ? 'duration' : 'start'}${q.get('sort') === 'duration' ? (q.get('order') === 'asc' ? '-asc' : '-desc') : ''}`;
  const sort = SORTS.find((x) => x.value === sortKey) ?? SORTS[0];
  const pageSize = Math.min(500, Math.max(1, Math.floor(Number(q.get('limit') ?? 50)) || 50));
  const offset = Math.max(0, Math.floor(Number(q.get('offset') ?? 0)) || 0);
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
  // Every filter but the durations: the distribution shows the whole spread,
  // with the selected durations highlighted.
  const spread: Params | null = urlProblems.length
    ? null
    : { ...scope, service: cur.service, endpoint: cur.endpoint, status: cur.status, ...splitAttrs(cur.attrs) };
  const st = useApi<{ traces: TraceRow[]; has_more: boolean; offset: number }>(
    spread ? 'traces' : null,
    {
      ...spread,
      min_duration_ms: cur.min,
      max_duration_ms: cur.max,
      sort: sort.sort === 'start' ? null : sort.sort,
      order: sort.sort === 'start' ? null : sort.order,
      offset: offset || null,
      limit: pageSize,
    },
    tick,
  );
  const dist = useApi<{ total: number; min_ms: number | null; max_ms: number | null; buckets: DurationBucket[] }>(
    spread ? 'traces/durations' : null,
    spread ?? {},
    tick,
  );
  // Marked as soon as typed; the message comes with Search.
  const durBad = form.min.trim() !== '' && form.max.trim() !== '' && Number(form.min) > Number(form.max);
  const set = (k: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  const num = (v: string) => (v.trim() === '' || !Number.isFinite(Number(v)) ? undefined : Number(v));
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
          const attrs = splitAttrs(attrList(form.attrs, attrText));
          setParams({
            service: form.service.trim() || null,
            endpoint: form.endpoint.trim() || null,
            status: form.status || null,
            min_duration_ms: form.min || null,
            max_duration_ms: form.max || null,
            attr: attrs.attr,
            resource_attr: attrs.resource_attr,
            offset: null,
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
            list="trace-attr-suggestions"
            placeholder="key=value, key!=v, key>5, key, resource.key=v"
          />
          <AttrSuggestionList id="trace-attr-suggestions" filter={spread} text={attrText} />
        </div>
        <FormErrors problems={formProblems} testid="traces-form-errors" />
        <div class="form-buttons">
          <button type="submit" class="primary" data-testid="traces-search">
            Search
          </button>
          <button
            type="button"
            onClick={() =>
              setParams({
                service: null,
                endpoint: null,
                status: null,
                min_duration_ms: null,
                max_duration_ms: null,
                attr: null,
                resource_attr: null,
                offset: null,
              })
            }
          >
            Clear
          </button>
        </div>
      </form>
      {spread && (
        <Panel title="Span durations" busy={dist.loading} testid="duration-panel">
          <Async state={dist}>
            {(d) => (
              <DurationChart
                buckets={d.buckets}
                total={d.total}
                minMs={d.min_ms}
                maxMs={d.max_ms}
                min={num(cur.min)}
                max={num(cur.max)}
                onSelect={(min, max) =>
                  setParams({ min_duration_ms: String(min) === '0' ? null : String(min), max_duration_ms: max === null ? null : String(max), offset: null })
                }
              />
            )}
          </Async>
        </Panel>
      )}
      <Panel
        title={`Traces, ${sort.label.toLowerCase()}`}
        busy={st.loading}
        actions={
          <label class="inline-field">
            <span>Sort</span>
            <select
              data-testid="traces-sort"
              value={sort.value}
              onChange={(e) => {
                const next = SORTS.find((x) => x.value === e.currentTarget.value) ?? SORTS[0];
                setParams({ sort: next.sort === 'start' ? null : next.sort, order: next.sort === 'start' ? null : next.order, offset: null });
              }}
            >
              {SORTS.map((x) => (
                <option key={x.value} value={x.value}>
                  {x.label}
                </option>
              ))}
            </select>
          </label>
        }
      >
        {urlProblems.length > 0 ? (
          <ErrorBox message={`Not searched, the filter in the address is invalid: ${urlProblems.join('; ')}`} />
        ) : (
        <Async state={st}>
          {(d) => {
            if (d.traces.length === 0 && offset === 0) return <Empty>No traces match in this range.</Empty>;
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
                <div class="pager" data-testid="traces-pager">
                  <span class="muted" data-testid="traces-page-range">
                    {d.traces.length ? `${fmtCount(offset + 1)}–${fmtCount(offset + d.traces.length)}` : `none past ${fmtCount(offset)}`}
                    {d.has_more ? ' (more follow)' : ''}
                  </span>
                  <button
                    type="button"
                    data-testid="traces-prev"
                    disabled={offset === 0}
                    onClick={() => setParams({ offset: Math.max(0, offset - pageSize) || null })}
                  >
                    ← Previous
                  </button>
                  <button type="button" data-testid="traces-next" disabled={!d.has_more} onClick={() => setParams({ offset: offset + pageSize })}>
                    Next →
                  </button>
                </div>
              </div>
            );
          }}
        </Async>
        )}
      </Panel>
    </div>
  );
}
