import { useState } from 'preact/hooks';
import { fmtAttr, fmtDateTime, fmtTime, shortId } from '../lib/format';
import { severityName } from '../lib/otel';
import { hrefTo } from '../lib/router';
import type { LogRow } from '../lib/types';
import { Link, onActivateKey } from './ui';

export function logKey(l: LogRow): string {
  return `${l.time_ns}|${l.span_id ?? ''}|${typeof l.body === 'string' ? l.body : JSON.stringify(l.body)}`;
}

export function bodyText(b: unknown): string {
  return typeof b === 'string' ? b : b === null || b === undefined ? '' : JSON.stringify(b);
}

export function SeverityBadge({ n, text }: { n: number; text?: string | null }) {
  const name = severityName(n, text);
  return (
    <span class={`sev sev-${name.toLowerCase()}`} title={`${text || name} (${n})`}>
      {name}
    </span>
  );
}

function AttrTable({ attrs }: { attrs: Record<string, unknown> }) {
  const keys = Object.keys(attrs ?? {}).sort();
  if (keys.length === 0) return <div class="muted">No attributes</div>;
  return (
    <table class="kv">
      <tbody>
        {keys.map((k) => (
          <tr key={k}>
            <th>{k}</th>
            <td>{fmtAttr(attrs[k])}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Runs of consecutive lines with the same severity, service and body (times may differ). */
export function repeatRuns(logs: LogRow[]): LogRow[][] {
  const out: LogRow[][] = [];
  const same = (a: LogRow, b: LogRow) =>
    a.severity_number === b.severity_number &&
    (a.severity_text ?? '') === (b.severity_text ?? '') &&
    a.service === b.service &&
    bodyText(a.body) === bodyText(b.body);
  for (const l of logs) {
    const last = out[out.length - 1];
    if (last && same(last[0], l)) last.push(l);
    else out.push([l]);
  }
  return out;
}

/**
 * Log lines, newest first. A line's trace id links to the trace page;
 * onSpan (on the trace page) selects the line's span instead.
 */
export function LogList(props: {
  logs: LogRow[];
  onSpan?: (spanId: string) => void;
  /** The name of a span of the trace, to label the line's span link. */
  spanName?: (spanId: string) => string | undefined;
  showService?: boolean;
  /** No trace or span links (the lines of one span, shown in its details). */
  noLinks?: boolean;
  testid?: string;
  /** Show a run of identical consecutive lines as its first, with a "×N" badge that expands it. */
  collapseRepeats?: boolean;
}) {
  const [open, setOpen] = useState<string | null>(null);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const runs = props.collapseRepeats ? repeatRuns(props.logs) : props.logs.map((l) => [l]);
  const rows: { l: LogRow; run?: LogRow[]; repeat?: boolean }[] = [];
  for (const run of runs) {
    const k = logKey(run[0]);
    if (run.length === 1) rows.push({ l: run[0] });
    else if (!expanded.has(k)) rows.push({ l: run[0], run });
    else run.forEach((l, i) => rows.push(i === 0 ? { l, run } : { l, repeat: true }));
  }
  const toggleRun = (k: string) => {
    const next = new Set(expanded);
    if (next.has(k)) next.delete(k);
    else next.add(k);
    setExpanded(next);
  };
  return (
    <ol class="logs" data-testid={props.testid ?? 'logs-list'}>
      {rows.map(({ l, run, repeat }) => {
        const k = logKey(l);
        const isOpen = open === k;
        const runOpen = run ? expanded.has(k) : false;
        return (
          <li
            key={k}
            class={`log-row ${isOpen ? 'open' : ''} ${repeat ? 'repeat' : ''}`}
            data-testid="log-row"
            data-repeat={repeat ? '1' : undefined}
          >
            <div
              class="log-line"
              data-testid="log-line"
              tabIndex={0}
              onClick={(e) => {
                if ((e.target as HTMLElement).closest('a,button')) return;
                if (window.getSelection()?.toString()) return;
                setOpen(isOpen ? null : k);
              }}
              onKeyDown={(e) => {
                if (e.key === 'Escape' && isOpen) {
                  e.preventDefault();
                  setOpen(null);
                } else onActivateKey(() => setOpen(isOpen ? null : k))(e);
              }}
            >
              <time class="log-time mono" title={fmtDateTime(l.time_ms)}>
                {fmtTime(l.time_ms, true)}
              </time>
              <SeverityBadge n={l.severity_number} text={l.severity_text} />
              {props.showService !== false && <span class="log-service">{l.service}</span>}
              <span class="log-body mono" data-testid="log-body">
                {bodyText(l.body)}
              </span>
              {run && (
                <button
                  type="button"
                  class="repeat-badge"
                  data-testid="repeat-badge"
                  aria-expanded={runOpen}
                  title={`${run.length} identical consecutive lines (same severity, service and body), ${fmtTime(run[run.length - 1].time_ms, true)} to ${fmtTime(run[0].time_ms, true)}`}
                  onClick={() => toggleRun(k)}
                >
                  <span aria-hidden="true">×{run.length}</span>
                  <span class="sr-only">
                    {run.length} identical lines in a row; {runOpen ? 'collapse them' : 'show each'}
                  </span>
                </button>
              )}
              {l.trace_id &&
                !props.noLinks &&
                (props.onSpan && l.span_id ? (
                  <button
                    type="button"
                    class="link-button log-trace"
                    data-testid="log-span-link"
                    title={`Show span ${l.span_id}`}
                    onClick={() => props.onSpan!(l.span_id!)}
                  >
                    {props.spanName?.(l.span_id) ?? `span ${shortId(l.span_id)}`}
                  </button>
                ) : !props.onSpan ? (
                  <Link
                    class="mono log-trace"
                    data-testid="log-trace-link"
                    href={hrefTo(`/traces/${l.trace_id}`, l.span_id ? { span: l.span_id } : {})}
                    title={`Open trace ${l.trace_id}`}
                  >
                    trace {shortId(l.trace_id)}
                  </Link>
                ) : null)}
            </div>
            {isOpen && (
              <div class="log-details" data-testid="log-details">
                <div class="kv-inline">
                  <span>
                    <b>Time</b> {fmtDateTime(l.time_ms)} <span class="muted mono">({l.time_ns} ns)</span>
                  </span>
                  {l.trace_id && (
                    <span>
                      <b>Trace</b> <Link class="mono" href={hrefTo(`/traces/${l.trace_id}`, l.span_id ? { span: l.span_id } : {})}>{l.trace_id}</Link>
                    </span>
                  )}
                  {l.span_id && (
                    <span>
                      <b>Span</b> <span class="mono">{l.span_id}</span>
                    </span>
                  )}
                  {l.event_name && (
                    <span data-testid="log-event-name">
                      <b>Event</b> <span class="mono">{l.event_name}</span>
                    </span>
                  )}
                </div>
                <pre class="log-full">{bodyText(l.body)}</pre>
                <AttrTable attrs={l.attributes} />
              </div>
            )}
          </li>
        );
      })}
    </ol>
  );
}

export { AttrTable };
