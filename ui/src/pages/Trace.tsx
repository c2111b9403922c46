import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { AttrTable, LogList } from '../components/LogList';
import { Async, Empty, Link, onActivateKey, Panel, ServiceDot } from '../components/ui';
import { useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtAttr, fmtCount, fmtDateTime, fmtMs, nsDiffMs, nsToMs } from '../lib/format';
import { isErrorStatus, spanKind, statusName } from '../lib/otel';
import { hrefTo, setParams } from '../lib/router';
import { paletteColor } from '../lib/theme';
import type { Span, TraceDetail } from '../lib/types';

interface Row {
  span: Span;
  depth: number;
  offsetMs: number;
  durMs: number;
  childCount: number;
  orphan: boolean;
}

interface Model {
  rows: Row[];
  totalMs: number;
  startNs: string;
  colors: Map<string, string>;
  errors: number;
  root: Span | undefined;
}

function isRootParent(p: string | null | undefined): boolean {
  return !p || /^0*$/.test(p);
}

function buildModel(spans: Span[]): Model {
  const byId = new Map(spans.map((s) => [s.span_id, s]));
  let startNs = spans[0]?.start_time_ns ?? '0';
  let endNs = spans[0]?.end_time_ns ?? '0';
  for (const s of spans) {
    if (nsDiffMs(s.start_time_ns, startNs) < 0) startNs = s.start_time_ns;
    if (nsDiffMs(s.end_time_ns, endNs) > 0) endNs = s.end_time_ns;
  }
  const children = new Map<string, Span[]>();
  const roots: Span[] = [];
  for (const s of spans) {
    if (isRootParent(s.parent_span_id) || !byId.has(s.parent_span_id!) || s.parent_span_id === s.span_id) roots.push(s);
    else {
      const list = children.get(s.parent_span_id!) ?? [];
      list.push(s);
      children.set(s.parent_span_id!, list);
    }
  }
  const byStart = (a: Span, b: Span) => nsDiffMs(a.start_time_ns, b.start_time_ns);
  roots.sort(byStart);
  const colors = new Map<string, string>();
  const rows: Row[] = [];
  const seen = new Set<string>();
  const visit = (s: Span, depth: number) => {
    if (seen.has(s.span_id)) return; // defensive: cycles in bad data
    seen.add(s.span_id);
    if (!colors.has(s.service)) colors.set(s.service, paletteColor(colors.size));
    const kids = (children.get(s.span_id) ?? []).sort(byStart);
    const dur = Number.isFinite(s.duration_ms) ? s.duration_ms : nsDiffMs(s.end_time_ns, s.start_time_ns);
    rows.push({
      span: s,
      depth,
      offsetMs: nsDiffMs(s.start_time_ns, startNs),
      durMs: dur,
      childCount: kids.length,
      orphan: !isRootParent(s.parent_span_id) && !byId.has(s.parent_span_id!),
    });
    for (const k of kids) visit(k, depth + 1);
  };
  for (const r of roots) visit(r, 0);
  return {
    rows,
    totalMs: Math.max(nsDiffMs(endNs, startNs), 0.001),
    startNs,
    colors,
    errors: spans.filter((s) => isErrorStatus(s.status_code)).length,
    root: roots.find((r) => isRootParent(r.parent_span_id)) ?? roots[0],
  };
}

/**
 * Arrow keys between waterfall rows: Up/Down to the previous/next visible
 * row, Home/End to the first/last. True when the key was one of them.
 */
function moveFocus(e: KeyboardEvent): boolean {
  if (e.target !== e.currentTarget || e.altKey || e.ctrlKey || e.metaKey) return false;
  if (!['ArrowUp', 'ArrowDown', 'Home', 'End'].includes(e.key)) return false;
  const row = e.currentTarget as HTMLElement;
  const rows = Array.from(row.closest('.waterfall')?.querySelectorAll<HTMLElement>('[data-testid="span-row"]') ?? []);
  const i = rows.indexOf(row);
  const j = e.key === 'Home' ? 0 : e.key === 'End' ? rows.length - 1 : e.key === 'ArrowUp' ? i - 1 : i + 1;
  e.preventDefault();
  if (j >= 0 && j < rows.length) {
    rows[j].focus();
    rows[j].scrollIntoView({ block: 'nearest' });
  }
  return true;
}

function Waterfall(props: { model: Model; selected: string | null; onSelect: (id: string | null) => void }) {
  const { model } = props;
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const hidden = new Set<string>();
  const visible: Row[] = [];
  // Rows are in DFS order: hide the subtrees under collapsed spans.
  const hiddenDepth: number[] = [];
  for (const r of model.rows) {
    while (hiddenDepth.length && r.depth <= hiddenDepth[hiddenDepth.length - 1]) hiddenDepth.pop();
    if (hiddenDepth.length) {
      hidden.add(r.span.span_id);
      continue;
    }
    visible.push(r);
    if (collapsed.has(r.span.span_id)) hiddenDepth.push(r.depth);
  }
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  return (
    <div class="waterfall" data-testid="waterfall" role="tree">
      <div class="wf-row wf-head">
        <div class="wf-name">Service · operation</div>
        <div class="wf-track">
          {ticks.map((t) => (
            <span key={t} class="wf-tick" style={{ left: `${t * 100}%` }}>
              {fmtMs(model.totalMs * t)}
            </span>
          ))}
        </div>
      </div>
      {visible.map((r) => {
        const s = r.span;
        const err = isErrorStatus(s.status_code);
        const color = model.colors.get(s.service)!;
        const left = (r.offsetMs / model.totalMs) * 100;
        const width = Math.max((r.durMs / model.totalMs) * 100, 0.15);
        const sel = props.selected === s.span_id;
        const isCollapsed = collapsed.has(s.span_id);
        return (
          <div
            key={s.span_id}
            role="treeitem"
            aria-level={r.depth + 1}
            aria-selected={sel}
            aria-expanded={r.childCount ? !isCollapsed : undefined}
            class={`wf-row span ${sel ? 'selected' : ''} ${err ? 'error' : ''}`}
            data-testid="span-row"
            data-span-id={s.span_id}
            data-span-name={s.name}
            data-error={err ? '1' : undefined}
            tabIndex={0}
            onClick={() => props.onSelect(sel ? null : s.span_id)}
            onKeyDown={(e) => {
              if (moveFocus(e)) return;
              onActivateKey(() => props.onSelect(sel ? null : s.span_id))(e);
            }}
          >
            <div class="wf-name" style={{ paddingLeft: `${r.depth * 16 + 4}px` }} title={`${s.service} · ${s.name}`}>
              {r.childCount > 0 ? (
                <button
                  type="button"
                  class="wf-toggle"
                  aria-label={isCollapsed ? 'Expand' : 'Collapse'}
                  onClick={(e) => {
                    e.stopPropagation();
                    const next = new Set(collapsed);
                    if (isCollapsed) next.delete(s.span_id);
                    else next.add(s.span_id);
                    setCollapsed(next);
                  }}
                >
                  {isCollapsed ? '▸' : '▾'}
                </button>
              ) : (
                <span class="wf-toggle" />
              )}
              <ServiceDot color={color} />
              <span class="wf-svc">{s.service}</span>
              <span class="wf-op" data-testid="span-name">
                {s.name}
              </span>
              {err && (
                <span class="badge bad" data-testid="span-error" title={s.status_message || 'Error status'}>
                  error
                </span>
              )}
              {isCollapsed && <span class="muted small">+{r.childCount}</span>}
            </div>
            <div class="wf-track">
              <div
                class={`wf-bar ${err ? 'error' : ''}`}
                style={{ left: `${left}%`, width: `${width}%`, background: color }}
              />
              {(s.events ?? []).map((ev, i) => {
                const tns = ev.time_ns ?? ev.time_unix_nano;
                const t = tns ? nsDiffMs(tns, model.startNs) : ev.time_ms !== undefined ? ev.time_ms - nsToMs(model.startNs) : NaN;
                if (!Number.isFinite(t)) return null;
                return (
                  <span
                    key={i}
                    class={`wf-event ${ev.name === 'exception' ? 'exc' : ''}`}
                    style={{ left: `${(t / model.totalMs) * 100}%` }}
                    title={ev.name}
                  />
                );
              })}
              <span
                class={`wf-dur ${left + width > 85 && left < 15 ? 'inside' : ''}`}
                style={
                  left + width <= 85
                    ? { left: `${left + width + 0.5}%` }
                    : left >= 15
                      ? { right: `${100 - left + 0.5}%` }
                      : { right: `${Math.max(0, 100 - left - width) + 0.5}%` }
                }
              >
                {fmtMs(r.durMs)}
              </span>
            </div>
          </div>
        );
      })}
    </div>
  );
}

function Section(props: { title: string; count?: number; children: ComponentChildren }) {
  return (
    <details class="section" open>
      <summary>
        {props.title}
        {props.count !== undefined && <span class="muted"> ({props.count})</span>}
      </summary>
      {props.children}
    </details>
  );
}

function SpanDetails(props: { span: Span; model: Model; detail: TraceDetail; onClose: () => void; onSelect: (id: string) => void }) {
  const s = props.span;
  const err = isErrorStatus(s.status_code);
  const logs = props.detail.logs.filter((l) => l.span_id === s.span_id);
  const parent = props.detail.spans.find((p) => p.span_id === s.parent_span_id);
  return (
    <aside class="panel span-details" data-testid="span-details">
      <header class="panel-head">
        <h2>
          <ServiceDot color={props.model.colors.get(s.service)!} /> {s.name}
        </h2>
        <div class="panel-actions">
          <button type="button" class="icon" aria-label="Close details" data-testid="span-details-close" onClick={props.onClose}>
            ×
          </button>
        </div>
      </header>
      <div class="panel-body">
        <table class="kv">
          <tbody>
            <tr>
              <th>Service</th>
              <td>{s.service}</td>
            </tr>
            <tr>
              <th>Duration</th>
              <td>{fmtMs(s.duration_ms)}</td>
            </tr>
            <tr>
              <th>Start</th>
              <td>
                {fmtDateTime(nsToMs(s.start_time_ns))}{' '}
                <span class="muted">(+{fmtMs(nsDiffMs(s.start_time_ns, props.model.startNs))})</span>
              </td>
            </tr>
            <tr>
              <th>Kind</th>
              <td>{spanKind(s.kind)}</td>
            </tr>
            <tr>
              <th>Status</th>
              <td class={err ? 'bad' : ''} data-testid="span-status">
                {statusName(s.status_code)}
                {s.status_message ? `: ${s.status_message}` : ''}
              </td>
            </tr>
            <tr>
              <th>Span ID</th>
              <td class="mono">{s.span_id}</td>
            </tr>
            <tr>
              <th>Parent</th>
              <td class="mono">
                {parent ? (
                  <button type="button" class="link-button mono" onClick={() => props.onSelect(parent.span_id)}>
                    {parent.name} ({parent.span_id})
                  </button>
                ) : (
                  s.parent_span_id || <span class="muted">none (root)</span>
                )}
              </td>
            </tr>
            {s.scope_name && (
              <tr>
                <th>Scope</th>
                <td>{s.scope_name}</td>
              </tr>
            )}
          </tbody>
        </table>
        <Section title="Attributes" count={Object.keys(s.attributes ?? {}).length}>
          <div data-testid="span-attributes">
            <AttrTable attrs={s.attributes ?? {}} />
          </div>
        </Section>
        <Section title="Resource attributes" count={Object.keys(s.resource_attributes ?? {}).length}>
          <div data-testid="span-resource">
            <AttrTable attrs={s.resource_attributes ?? {}} />
          </div>
        </Section>
        <Section title="Events" count={(s.events ?? []).length}>
          {(s.events ?? []).length === 0 ? (
            <div class="muted">No events</div>
          ) : (
            <ul class="events" data-testid="span-events">
              {s.events.map((ev, i) => {
                const tns = ev.time_ns ?? ev.time_unix_nano;
                return (
                  <li key={i} class={ev.name === 'exception' ? 'exc' : ''}>
                    <div class="event-head">
                      <b>{ev.name || '(unnamed)'}</b>
                      {tns && <span class="muted"> +{fmtMs(nsDiffMs(tns, s.start_time_ns))}</span>}
                    </div>
                    {ev.attributes && Object.keys(ev.attributes).length > 0 && (
                      <table class="kv">
                        <tbody>
                          {Object.entries(ev.attributes).map(([k, v]) => (
                            <tr key={k}>
                              <th>{k}</th>
                              <td>{k === 'exception.stacktrace' ? <pre>{fmtAttr(v)}</pre> : fmtAttr(v)}</td>
                            </tr>
                          ))}
                        </tbody>
                      </table>
                    )}
                  </li>
                );
              })}
            </ul>
          )}
        </Section>
        <Section title="Links" count={(s.links ?? []).length}>
          {(s.links ?? []).length === 0 ? (
            <div class="muted">No links</div>
          ) : (
            <ul class="events" data-testid="span-links">
              {s.links.map((l, i) => (
                <li key={i}>
                  <Link class="mono" href={hrefTo(`/traces/${l.trace_id}`, { span: l.span_id })}>
                    {l.trace_id} / {l.span_id}
                  </Link>
                  {l.attributes && Object.keys(l.attributes).length > 0 && <AttrTable attrs={l.attributes} />}
                </li>
              ))}
            </ul>
          )}
        </Section>
        <Section title="Logs of this span" count={logs.length}>
          {logs.length === 0 ? <div class="muted">No logs</div> : <LogList logs={[...logs].sort((a, b) => nsDiffMs(a.time_ns, b.time_ns))} showService={false} testid="span-logs" noLinks />}
        </Section>
      </div>
    </aside>
  );
}

export function TracePage({ traceId }: { traceId: string }) {
  const { loc, tick } = useApp();
  const scope = useScope();
  const st = useApi<TraceDetail>(`traces/${encodeURIComponent(traceId)}`, scope, tick);
  const selected = loc.q.get('span');
  const model = useMemo(() => (st.data ? buildModel(st.data.spans ?? []) : null), [st.data]);
  const select = (id: string | null) => setParams({ span: id }, true);
  // Esc closes the span details and puts the keyboard back on the span's row.
  // The listener stays for the page's life and reads the selection when the
  // key comes, so an Esc right after a span opens is not missed.
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const cur = selectedRef.current;
      if (e.key !== 'Escape' || e.defaultPrevented || !cur) return;
      e.preventDefault();
      setParams({ span: null }, true);
      const row = document.querySelector<HTMLElement>(`[data-testid="span-row"][data-span-id="${CSS.escape(cur)}"]`);
      row?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="page">
      <div class="crumbs">
        <Link href={hrefTo('/traces')}>Traces</Link> <span aria-hidden="true">›</span>{' '}
        <span class="mono" data-testid="trace-id">{traceId}</span>
      </div>
      <Async state={st} label="Loading trace…">
        {(d) => {
          if (!model || d.spans.length === 0) return <Empty>No spans in this trace.</Empty>;
          const sel = d.spans.find((s) => s.span_id === selected);
          const services = model.colors.size;
          return (
            <>
              <div class="trace-head">
                <h1 data-testid="trace-title">
                  {model.root?.service} <span class="muted">·</span> {model.root?.name}
                </h1>
                <div class="stats small">
                  <div class="stat">
                    <span class="stat-label">Start</span>
                    <span class="stat-value">{fmtDateTime(nsToMs(model.startNs))}</span>
                  </div>
                  <div class="stat">
                    <span class="stat-label">Duration</span>
                    <span class="stat-value" data-testid="trace-duration">{fmtMs(model.totalMs)}</span>
                  </div>
                  <div class="stat">
                    <span class="stat-label">Spans</span>
                    <span class="stat-value" data-testid="trace-span-count">{fmtCount(d.spans.length)}</span>
                  </div>
                  <div class="stat">
                    <span class="stat-label">Services</span>
                    <span class="stat-value">{services}</span>
                  </div>
                  <div class={`stat ${model.errors ? 'bad' : ''}`}>
                    <span class="stat-label">Errors</span>
                    <span class="stat-value">{model.errors}</span>
                  </div>
                </div>
                {(d.spans_truncated || d.logs_truncated) && (
                  <p class="muted" data-testid="trace-truncated">
                    This trace is larger than the server shows at once (--max-trace-spans): only its earliest{' '}
                    {d.spans_truncated ? 'spans' : 'log records'}
                    {d.spans_truncated && d.logs_truncated ? ' and log records' : ''} are here.
                  </p>
                )}
                <div class="legend">
                  {[...model.colors].map(([svc, c]) => (
                    <span key={svc} class="legend-item">
                      <ServiceDot color={c} /> {svc}
                    </span>
                  ))}
                </div>
              </div>
              <div class={`trace-body ${sel ? 'with-details' : ''}`}>
                <Panel title="Waterfall" busy={st.loading} class="wf-panel">
                  <Waterfall model={model} selected={sel ? sel.span_id : null} onSelect={select} />
                </Panel>
                {sel && <SpanDetails span={sel} model={model} detail={d} onClose={() => select(null)} onSelect={select} />}
              </div>
              <Panel title={`Logs of this trace (${d.logs?.length ?? 0})`} testid="trace-logs">
                {(d.logs ?? []).length === 0 ? (
                  <Empty>No logs linked to this trace.</Empty>
                ) : (
                  <LogList
                    logs={[...d.logs].sort((a, b) => nsDiffMs(a.time_ns, b.time_ns))}
                    onSpan={(id) => select(id)}
                    spanName={(id) => d.spans.find((s) => s.span_id === id)?.name}
                    testid="trace-logs-list"
                  />
                )}
              </Panel>
            </>
          );
        }}
      </Async>
    </div>
  );
}
