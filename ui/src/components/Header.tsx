import { useEffect, useRef, useState } from 'preact/hooks';
import { api, useApi, useBusy } from '../lib/api';
import { useApp } from '../lib/ctx';
import { hrefTo, navigate, setParams } from '../lib/router';
import { fromLocalInput, PRESETS, REFRESH, toLocalInput } from '../lib/time';
import { toggleTheme, useTheme } from '../lib/theme';
import type { Project } from '../lib/types';
import { Link } from './ui';

export const PAGES: { path: string; label: string; id: string }[] = [
  { path: '/', label: 'Overview', id: 'overview' },
  { path: '/endpoints', label: 'Endpoints', id: 'endpoints' },
  { path: '/traces', label: 'Traces', id: 'traces' },
  { path: '/map', label: 'Service map', id: 'map' },
  { path: '/exceptions', label: 'Exceptions', id: 'exceptions' },
  { path: '/logs', label: 'Logs', id: 'logs' },
  { path: '/metrics', label: 'Metrics', id: 'metrics' },
];

export function pageOf(path: string): string {
  if (path === '/' || path === '') return 'overview';
  const first = path.split('/')[1];
  return PAGES.find((p) => p.path === `/${first}`)?.id ?? '';
}

function ProjectSwitcher() {
  const { project } = useApp();
  const st = useApi<{ projects: Project[] }>('projects', {});
  const projects = st.data?.projects ?? [];
  const names = projects.map((p) => p.name);
  if (!names.includes(project)) names.unshift(project);
  return (
    <label class="field compact" title={st.error ? `Projects: ${st.error}` : 'Project'}>
      <span class="sr-only">Project</span>
      <select
        data-testid="project-select"
        value={project}
        onChange={(e) => {
          const v = e.currentTarget.value;
          // A new project: keep page and time range, drop page filters.
          navigate(hrefTo(window.location.pathname.startsWith('/traces/') ? '/traces' : window.location.pathname, {
            project: v === 'default' ? null : v,
          }));
        }}
      >
        {names.map((n) => (
          <option value={n} key={n}>
            {n}
          </option>
        ))}
      </select>
    </label>
  );
}

function TimePicker() {
  const { range } = useApp();
  const [custom, setCustom] = useState(range.preset === null);
  // The form of a custom range applied from the URL can be closed (Esc) and
  // opened again (the "Edit" button): the select keeps saying "Custom…".
  const [formOpen, setFormOpen] = useState(true);
  const selectRef = useRef<HTMLSelectElement>(null);
  const [from, setFrom] = useState(toLocalInput(range.from));
  const [to, setTo] = useState(toLocalInput(range.to));
  useEffect(() => {
    setCustom(range.preset === null);
    setFormOpen(true);
    if (range.preset === null) {
      setFrom(toLocalInput(range.from));
      setTo(toLocalInput(range.to));
    }
  }, [range.preset, range.from, range.to]);
  const f = fromLocalInput(from);
  const t = fromLocalInput(to);
  const problem = !Number.isFinite(f) || !Number.isFinite(t) ? 'Enter both times' : f >= t ? 'From must be before To' : null;
  const bad = problem !== null;
  return (
    <div class="time-picker">
      <select
        ref={selectRef}
        data-testid="range-select"
        aria-label="Time range"
        value={custom ? 'custom' : range.preset ?? '1h'}
        onChange={(e) => {
          const v = e.currentTarget.value;
          if (v === 'custom') {
            setFrom(toLocalInput(range.from));
            setTo(toLocalInput(range.to));
            setCustom(true);
            setFormOpen(true);
          } else {
            setCustom(false);
            setParams({ range: v === '1h' ? null : v, from: null, to: null });
          }
        }}
      >
        {PRESETS.map((p) => (
          <option value={p.key} key={p.key}>
            {p.label}
          </option>
        ))}
        <option value="custom">Custom…</option>
      </select>
      {custom && !formOpen && (
        <button type="button" data-testid="range-edit" aria-label="Edit the custom range" onClick={() => setFormOpen(true)}>
          Edit
        </button>
      )}
      {custom && formOpen && (
        <form
          class="custom-range"
          data-testid="range-form"
          onKeyDown={(e) => {
            if (e.key !== 'Escape') return;
            // Esc closes the form: back to the preset in use, or, for a
            // custom range in use, to it as applied (the edits dropped).
            e.preventDefault();
            e.stopPropagation();
            if (range.preset !== null) setCustom(false);
            else {
              setFrom(toLocalInput(range.from));
              setTo(toLocalInput(range.to));
              setFormOpen(false);
            }
            selectRef.current?.focus();
          }}
          onSubmit={(e) => {
            e.preventDefault();
            if (bad) return;
            setParams({ range: null, from: fromLocalInput(from), to: fromLocalInput(to) + 59_999 });
          }}
        >
          <input
            type="datetime-local"
            aria-label="From"
            data-testid="range-from"
            value={from}
            aria-invalid={bad ? 'true' : undefined}
            onInput={(e) => setFrom(e.currentTarget.value)}
          />
          <span aria-hidden="true">→</span>
          <input
            type="datetime-local"
            aria-label="To"
            data-testid="range-to"
            value={to}
            aria-invalid={bad ? 'true' : undefined}
            onInput={(e) => setTo(e.currentTarget.value)}
          />
          <button type="submit" data-testid="range-apply" disabled={bad}>
            Apply
          </button>
          {problem && (
            <span class="range-problem" role="alert" data-testid="range-problem">
              {problem}
            </span>
          )}
        </form>
      )}
    </div>
  );
}

function RefreshPicker() {
  const { loc, refresh } = useApp();
  return (
    <div class="refresh">
      <button type="button" class="icon" title="Refresh now" aria-label="Refresh now" data-testid="refresh-now" onClick={refresh}>
        ↻
      </button>
      <select
        data-testid="refresh-select"
        aria-label="Auto-refresh"
        title="Auto-refresh"
        value={loc.q.get('refresh') ?? ''}
        onChange={(e) => setParams({ refresh: e.currentTarget.value || null }, true)}
      >
        {REFRESH.map((r) => (
          <option value={r.key} key={r.key}>
            {r.key ? `Every ${r.label}` : 'Auto-refresh off'}
          </option>
        ))}
      </select>
    </div>
  );
}

function ThemeToggle() {
  const theme = useTheme();
  return (
    <button
      type="button"
      class="icon"
      data-testid="theme-toggle"
      title={theme === 'dark' ? 'Switch to light theme' : 'Switch to dark theme'}
      aria-label={theme === 'dark' ? 'Switch to light theme' : 'Switch to dark theme'}
      onClick={toggleTheme}
    >
      {theme === 'dark' ? '☀' : '☾'}
    </button>
  );
}

function UserMenu({ username }: { username: string }) {
  return (
    <div class="user">
      <span class="muted" data-testid="username">
        {username}
      </span>
      <button
        type="button"
        class="link-button"
        data-testid="logout"
        onClick={async () => {
          try {
            await api('logout', {}, { method: 'POST' });
          } catch {
            /* logged out either way */
          }
          navigate('/login', true);
        }}
      >
        Log out
      </button>
    </div>
  );
}

export function Header({ username }: { username: string }) {
  const { loc } = useApp();
  const current = pageOf(loc.path);
  const busy = useBusy();
  return (
    <header class="topbar">
      {busy && <div class="progress" data-testid="progress" aria-hidden="true" />}
      <div class="brand">
        <Link href={hrefTo('/')} class="logo" aria-label="Sightline home">
          <span class="logo-mark" aria-hidden="true">◉</span> Sightline
        </Link>
      </div>
      <nav class="nav" aria-label="Pages">
        {PAGES.map((p) => (
          <Link
            key={p.id}
            href={hrefTo(p.path)}
            data-testid={`nav-${p.id}`}
            class={current === p.id ? 'active' : ''}
            aria-current={current === p.id ? 'page' : undefined}
          >
            {p.label}
          </Link>
        ))}
      </nav>
      <div class="controls">
        <ProjectSwitcher />
        <TimePicker />
        <RefreshPicker />
        <ThemeToggle />
        <UserMenu username={username} />
      </div>
    </header>
  );
}
