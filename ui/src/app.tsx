import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { Header, pageOf } from './components/Header';
import { ErrorBox, Link, Loading } from './components/ui';
import { api, ApiError, goToLogin } from './lib/api';
import { Ctx, type AppCtx } from './lib/ctx';
import { hrefTo, hrefWith, useLocation } from './lib/router';
import { refreshMs, resolveRange } from './lib/time';
import { EndpointsPage } from './pages/Endpoints';
import { ExceptionsPage } from './pages/Exceptions';
import { LoginPage } from './pages/Login';
import { LogsPage } from './pages/Logs';
import { MetricsPage } from './pages/Metrics';
import { OverviewPage } from './pages/Overview';
import { ServiceMapPage } from './pages/ServiceMap';
import { TracePage } from './pages/Trace';
import { TracesPage } from './pages/Traces';

const TITLES: Record<string, string> = {
  overview: 'Overview',
  endpoints: 'Endpoints',
  traces: 'Traces',
  map: 'Service map',
  exceptions: 'Exceptions',
  logs: 'Logs',
  metrics: 'Metrics',
};

function Page({ path }: { path: string }) {
  const traceMatch = /^\/traces\/([^/]+)\/?$/.exec(path);
  if (traceMatch) return <TracePage traceId={decodeURIComponent(traceMatch[1])} />;
  switch (pageOf(path)) {
    case 'overview':
      return <OverviewPage />;
    case 'endpoints':
      return <EndpointsPage />;
    case 'traces':
      return <TracesPage />;
    case 'map':
      return <ServiceMapPage />;
    case 'exceptions':
      return <ExceptionsPage />;
    case 'logs':
      return <LogsPage />;
    case 'metrics':
      return <MetricsPage />;
    default:
      return (
        <div class="page">
          <h1>Page not found</h1>
          <p>
            Nothing lives at <code>{path}</code>. <Link href={hrefTo('/')}>Go to the overview</Link>.
          </p>
        </div>
      );
  }
}

export function App() {
  const loc = useLocation();
  const [user, setUser] = useState<string | null>(null);
  const [bootError, setBootError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  const onLogin = loc.path === '/login';

  // Who is logged in; a 401 sends us to the login page (api.ts).
  useEffect(() => {
    if (onLogin || user) return;
    let live = true;
    setBootError(null);
    api<{ username: string }>('me')
      .then((me) => live && setUser(me.username))
      .catch((e: unknown) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 401) goToLogin();
        else setBootError(e instanceof Error ? e.message : String(e));
      });
    return () => {
      live = false;
    };
  }, [onLogin, user]);

  // Auto-refresh.
  const every = refreshMs(loc.q);
  useEffect(() => {
    if (!every || onLogin) return;
    const id = setInterval(() => {
      if (document.visibilityState !== 'hidden') setTick((t) => t + 1);
    }, every);
    return () => clearInterval(id);
  }, [every, onLogin]);

  // "Now" for relative ranges moves on each navigation and refresh tick.
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const now = useMemo(() => Date.now(), [loc.href, tick]);
  const range = useMemo(() => resolveRange(loc.q, now), [loc.q.get('range'), loc.q.get('from'), loc.q.get('to'), now]);
  const project = loc.q.get('project') || 'default';
  const ctx: AppCtx = useMemo(() => ({ loc, range, tick, project, refresh }), [loc, range, tick, project, refresh]);

  const page = pageOf(loc.path);
  useEffect(() => {
    const t = loc.path.startsWith('/traces/') ? 'Trace' : onLogin ? 'Log in' : TITLES[page] ?? 'Not found';
    document.title = `${t} · Sightline`;
  }, [loc.path, page, onLogin]);

  if (onLogin) {
    return (
      <LoginPage
        onLoggedIn={(u) => {
          setUser(u);
        }}
      />
    );
  }
  if (!user) {
    return (
      <div class="boot">
        {bootError ? (
          <div class="state error" role="alert" data-testid="error">
            <strong>Error:</strong> {bootError}{' '}
            <button type="button" onClick={() => window.location.reload()}>
              Retry
            </button>
          </div>
        ) : (
          <Loading />
        )}
      </div>
    );
  }
  return (
    <Ctx.Provider value={ctx}>
      <a
        href="#main"
        class="skip-link"
        data-testid="skip-link"
        onClick={(e) => {
          // Focus the content without touching the URL (the router owns it).
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <Header username={user} />
      <main
        id="main"
        tabIndex={-1}
        class="main"
        data-testid={`page-${loc.path.startsWith('/traces/') ? 'trace' : page || 'notfound'}`}
      >
        {range.invalid ? (
          <div class="page" data-testid="range-invalid">
            <ErrorBox message={`${range.invalid} Nothing is shown until the range is fixed.`} />
            <p>
              Pick a range above, or{' '}
              <Link href={hrefWith({ from: null, to: null, range: null })} data-testid="range-invalid-reset">
                show the last hour
              </Link>
              .
            </p>
          </div>
        ) : (
          <Page path={loc.path} />
        )}
      </main>
    </Ctx.Provider>
  );
}
