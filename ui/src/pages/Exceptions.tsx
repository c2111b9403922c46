import { useEffect, useRef } from 'preact/hooks';
import { ServiceSelect } from '../components/ServiceSelect';
import { Async, Empty, Link, onActivateKey, Panel } from '../components/ui';
import { useApi } from '../lib/api';
import { useApp, useScope } from '../lib/ctx';
import { fmtAgo, fmtCount, fmtDateTime, fmtMs, fmtTime, shortId } from '../lib/format';
import { hrefTo, setParams } from '../lib/router';
import type { ExceptionGroup, ExceptionSpan } from '../lib/types';

function GroupSpans(props: { type: string; message: string; service: string }) {
  const { tick } = useApp();
  const scope = useScope();
  const st = useApi<{ spans: ExceptionSpan[] }>(
    'exceptions/spans',
    { ...scope, type: props.type, message: props.message, service: props.service, limit: 50 },
    tick,
  );
  return (
    <Panel
      title={
        <>
          Spans with <span class="mono">{props.type}</span>
        </>
      }
      busy={st.loading}
      testid="exception-spans"
      actions={
        <button type="button" class="icon" aria-label="Close" onClick={() => setParams({ ex_type: null, ex_msg: null, ex_svc: null }, true)}>
          ×
        </button>
      }
    >
      <p class="exc-message mono">{props.message}</p>
      <Async state={st}>
        {(d) =>
          d.spans.length === 0 ? (
            <Empty>No spans in this range.</Empty>
          ) : (
            <div class="table-wrap">
              <table class="table">
                <thead>
                  <tr>
                    <th>Time</th>
                    <th>Service</th>
                    <th>Span</th>
                    <th class="num">Duration</th>
                    <th>Trace</th>
                  </tr>
                </thead>
                <tbody>
                  {d.spans.map((s) => (
                    <tr key={`${s.source}|${s.trace_id}|${s.span_id}|${s.start_ms}`} data-testid="exception-span-row">
                      <td title={fmtDateTime(s.start_ms)}>{fmtTime(s.start_ms, true)}</td>
                      <td>{s.service}</td>
                      <td>{s.source === 'log' ? `log record${s.name ? ` ${s.name}` : ''}` : s.name}</td>
                      <td class="num">{s.source === 'log' ? '—' : fmtMs(s.duration_ms)}</td>
                      <td>
                        {s.trace_id ? (
                          <Link class="mono" data-testid="exception-trace-link" href={hrefTo(`/traces/${s.trace_id}`, { span: s.span_id })}>
                            {shortId(s.trace_id, 12)}
                          </Link>
                        ) : (
                          '—'
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Async>
    </Panel>
  );
}

export function ExceptionsPage() {
  const { loc, tick } = useApp();
  const scope = useScope();
  const service = loc.q.get('service') ?? '';
  const selType = loc.q.get('ex_type');
  const selMsg = loc.q.get('ex_msg') ?? '';
  const selSvc = loc.q.get('ex_svc') ?? '';
  const st = useApi<{ exceptions: ExceptionGroup[] }>('exceptions', { ...scope, service, limit: 50 }, tick);
  // Esc closes the open group's spans and puts the keyboard back on its row.
  // Registered once and reading the selection when the key comes, so an Esc
  // right after a group opens is not missed.
  const openRef = useRef(selType !== null);
  openRef.current = selType !== null;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || e.defaultPrevented || !openRef.current) return;
      e.preventDefault();
      document.querySelector<HTMLElement>('[data-testid="exception-row"].selected')?.focus();
      setParams({ ex_type: null, ex_msg: null, ex_svc: null }, true);
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="page">
      <div class="page-head">
        <h1>Exceptions</h1>
        <div class="filters">
          <ServiceSelect value={service} onChange={(v) => setParams({ service: v || null })} />
        </div>
      </div>
      <Panel title="Exception groups, most frequent first" busy={st.loading}>
        <Async state={st}>
          {(d) =>
            d.exceptions.length === 0 ? (
              <Empty>No exceptions in this range.</Empty>
            ) : (
              <div class="table-wrap">
                <table class="table" data-testid="exceptions-table">
                  <thead>
                    <tr>
                      <th>Type</th>
                      <th>Message</th>
                      <th>Service</th>
                      <th class="num">Count</th>
                      <th>Last seen</th>
                      <th>First seen</th>
                      <th>Sample</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.exceptions.map((x) => {
                      const sel = selType === x.type && selMsg === x.message && selSvc === x.service;
                      const toggle = () =>
                        setParams(
                          sel ? { ex_type: null, ex_msg: null, ex_svc: null } : { ex_type: x.type, ex_msg: x.message, ex_svc: x.service },
                        );
                      return (
                        <tr
                          key={`${x.service}|${x.type}|${x.message}`}
                          class={`clickable ${sel ? 'selected' : ''}`}
                          data-testid="exception-row"
                          data-type={x.type}
                          tabIndex={0}
                          onClick={(e) => {
                            if ((e.target as HTMLElement).closest('a')) return;
                            toggle();
                          }}
                          onKeyDown={onActivateKey(toggle)}
                        >
                          <td class="mono bad">{x.type || '(no type)'}</td>
                          <td class="exc-msg" title={x.message}>
                            {x.message}
                          </td>
                          <td>{x.service}</td>
                          <td class="num" data-testid="exception-count">{fmtCount(x.count)}</td>
                          <td title={fmtDateTime(x.last_seen_ms)}>{fmtAgo(x.last_seen_ms)}</td>
                          <td title={fmtDateTime(x.first_seen_ms)}>{fmtTime(x.first_seen_ms)}</td>
                          <td>
                            {x.sample_trace_id && (
                              <Link class="mono" href={hrefTo(`/traces/${x.sample_trace_id}`)} title="Open a sample trace">
                                {shortId(x.sample_trace_id)}
                              </Link>
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )
          }
        </Async>
      </Panel>
      {selType !== null && <GroupSpans type={selType} message={selMsg} service={selSvc} />}
    </div>
  );
}
