// Small shared pieces: links that use the router, loading/empty/error states,
// panels, sortable headers, key=value filter chips.
import type { AnchorHTMLAttributes, ComponentChildren } from 'preact';
import { navigate } from '../lib/router';

export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; 'data-testid'?: string }) {
  const { href, onClick, ...rest } = props;
  return (
    <a
      href={href}
      onClick={(e) => {
        if (onClick) (onClick as (e: MouseEvent) => void)(e);
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
      {...rest}
    />
  );
}

/** Clicking a table row navigates, unless the click was on a real link inside it or text was selected. */
export function rowNav(href: string) {
  return (e: MouseEvent) => {
    const t = e.target as HTMLElement;
    if (t.closest('a,button,input,select')) return;
    if (window.getSelection()?.toString()) return;
    if (e.metaKey || e.ctrlKey) {
      window.open(href, '_blank');
      return;
    }
    navigate(href);
  };
}

/**
 * Keyboard activation for an element that is not a real button or link (a
 * table row, a waterfall row, a log line): Enter, and Space, run `fn` when
 * the key is pressed on the element itself, not on a control inside it.
 */
export function onActivateKey(fn: () => void) {
  return (e: KeyboardEvent) => {
    if (e.target !== e.currentTarget) return;
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      fn();
    }
  };
}

/** Props for a table row that opens `href`: clickable, focusable, opened with Enter or Space. */
export function rowLink(href: string) {
  return {
    tabIndex: 0,
    onClick: rowNav(href),
    onKeyDown: onActivateKey(() => navigate(href)),
  };
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div class="state loading" data-testid="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return (
    <div class="state empty" data-testid="empty">
      {children}
    </div>
  );
}

export function ErrorBox({ message }: { message: string }) {
  return (
    <div class="state error" data-testid="error" role="alert">
      <strong>Error:</strong> {message}
    </div>
  );
}

/** Renders the three states of an API call, or the children when data is there. */
export function Async<T>(props: {
  state: { data: T | undefined; error: string | undefined; loading: boolean };
  children: (data: T) => ComponentChildren;
  label?: string;
}) {
  const { data, error, loading } = props.state;
  if (error && data === undefined) return <ErrorBox message={error} />;
  if (data === undefined) return loading ? <Loading label={props.label} /> : null;
  return (
    <>
      {error && <ErrorBox message={error} />}
      {props.children(data)}
    </>
  );
}

/** A box with a title. `busy`: a request is in flight; what is shown stays, under a thin progress bar. */
export function Panel(props: {
  title?: ComponentChildren;
  actions?: ComponentChildren;
  children: ComponentChildren;
  busy?: boolean;
  testid?: string;
  class?: string;
}) {
  return (
    <section
      class={`panel ${props.busy ? 'busy' : ''} ${props.class ?? ''}`}
      data-testid={props.testid}
      aria-busy={props.busy ? 'true' : undefined}
    >
      {(props.title || props.actions) && (
        <header class="panel-head">
          <h2>{props.title}</h2>
          <div class="panel-actions">{props.actions}</div>
        </header>
      )}
      <div class="panel-body">{props.children}</div>
    </section>
  );
}

export function SortHeader(props: {
  label: string;
  col: string;
  sort: string;
  order: 'asc' | 'desc';
  onSort: (col: string, order: 'asc' | 'desc') => void;
  numeric?: boolean;
  defaultOrder?: 'asc' | 'desc';
}) {
  const active = props.sort === props.col;
  const next = active ? (props.order === 'asc' ? 'desc' : 'asc') : props.defaultOrder ?? 'desc';
  return (
    <th
      class={props.numeric ? 'num' : ''}
      aria-sort={active ? (props.order === 'asc' ? 'ascending' : 'descending') : 'none'}
    >
      <button
        type="button"
        class={`sort ${active ? 'active' : ''}`}
        data-testid={`sort-${props.col}`}
        onClick={() => props.onSort(props.col, next)}
      >
        {props.label}
        <span class="sort-mark" aria-hidden="true">
          {active ? (props.order === 'asc' ? '▲' : '▼') : ''}
        </span>
      </button>
    </th>
  );
}

export type AttrOp = '=' | '!=' | '>' | '<' | 'exists';

export interface AttrCondition {
  key: string;
  op: AttrOp;
  value: string;
}

/** A finite decimal as the server reads one (std::from_chars): -1.5, 2e3, .5; no sign "+", no hex. */
const NUMBER_RE = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/**
 * An attribute condition as the API parses it (docs/API.md): the operator is
 * the first `=`, `!=`, `>` or `<`; a bare key means "exists"; `>` and `<`
 * need a number. null when the text is not one.
 */
export function parseAttr(text: string): AttrCondition | null {
  const t = text.trim();
  const m = /=|!=|>|</.exec(t);
  const cond: AttrCondition = m
    ? { key: t.slice(0, m.index), op: m[0] as AttrOp, value: t.slice(m.index + m[0].length) }
    : { key: t, op: 'exists', value: '' };
  if (cond.key === '' || /^\s/.test(cond.key)) return null;
  if ((cond.op === '>' || cond.op === '<') && !(NUMBER_RE.test(cond.value) && Number.isFinite(Number(cond.value)))) return null;
  return cond;
}

export const ATTR_HELP = 'key=value, key!=value, key>number, key<number, or a key alone (has the key)';

/** Editable list of attribute filters: chips for the set ones plus an input for one more. */
export function AttrInput(props: {
  chips: string[];
  setChips: (v: string[]) => void;
  text: string;
  setText: (v: string) => void;
  placeholder?: string;
  testid?: string;
  /** The id of a <datalist> of suggestions for the input. */
  list?: string;
}) {
  const bad = props.text.trim() !== '' && parseAttr(props.text) === null;
  return (
    <div class="attr-input">
      {props.chips.map((c) => (
        <span class="chip" key={c}>
          {c}
          <button
            type="button"
            aria-label={`Remove ${c}`}
            onClick={() => props.setChips(props.chips.filter((x) => x !== c))}
          >
            ×
          </button>
        </span>
      ))}
      <input
        type="text"
        data-testid={props.testid}
        class={bad ? 'invalid' : ''}
        placeholder={props.placeholder ?? 'key=value, key!=v, key>5, key'}
        value={props.text}
        list={props.list}
        autocomplete="off"
        title={`An attribute filter: ${ATTR_HELP}`}
        aria-label={`Attribute filter (${ATTR_HELP})`}
        aria-invalid={bad ? 'true' : undefined}
        onInput={(e) => props.setText(e.currentTarget.value)}
      />
    </div>
  );
}

/** Why the pending attribute text is not a filter, or null when it is empty or valid. */
export function attrProblem(text: string): string | null {
  const t = text.trim();
  if (!t || parseAttr(t)) return null;
  return `Attribute filter "${t}" is not ${ATTR_HELP}`;
}

/** The reasons a search form cannot be applied, shown above its buttons; nothing when there are none. */
export function FormErrors({ problems, testid }: { problems: string[]; testid?: string }) {
  if (problems.length === 0) return null;
  return (
    <div class="form-errors" role="alert" data-testid={testid ?? 'form-errors'}>
      {problems.map((p) => (
        <div key={p}>{p}</div>
      ))}
    </div>
  );
}

/** Chips plus the pending text, when it is a valid filter. */
export function attrList(chips: string[], text: string): string[] {
  const t = text.trim();
  const out = [...chips];
  if (t && parseAttr(t) && !out.includes(t)) out.push(t);
  return out;
}

export function ServiceDot({ color }: { color: string }) {
  return <span class="dot" style={{ background: color }} aria-hidden="true" />;
}
