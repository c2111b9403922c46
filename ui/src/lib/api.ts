// Fetch wrapper for the query API: JSON in and out, {"error"} messages
// surfaced as ApiError, any 401 sends the user to the login page.
import { useContext, useEffect, useState } from 'preact/hooks';
import { Ctx } from './ctx';
import { navigate } from './router';

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

export type Params = Record<string, string | number | null | undefined | string[]>;

export function apiUrl(path: string, params: Params = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue;
    if (Array.isArray(v)) for (const item of v) q.append(k, item);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return `/api/v1/${path}${s ? `?${s}` : ''}`;
}

export function goToLogin() {
  if (window.location.pathname === '/login') return;
  const next = window.location.pathname + window.location.search;
  navigate(`/login?next=${encodeURIComponent(next)}`, true);
}

export async function api<T>(path: string, params: Params = {}, init: RequestInit = {}): Promise<T> {
  const res = await fetch(apiUrl(path, params), {
    credentials: 'same-origin',
    headers: { Accept: 'application/json', ...(init.body ? { 'Content-Type': 'application/json' } : {}) },
    ...init,
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const msg =
      body && typeof body === 'object' && 'error' in body && typeof (body as { error: unknown }).error === 'string'
        ? (body as { error: string }).error
        : `HTTP ${res.status} ${res.statusText}`.trim();
    if (res.status === 401 && path !== 'login') goToLogin();
    throw new ApiError(res.status, msg);
  }
  if (body === null && text) throw new ApiError(res.status, 'The server sent a response that is not JSON');
  return body as T;
}

// How many useApi loads are in flight, for the progress bar under the header
// (a panel's own bar may be scrolled out of view).
let inFlight = 0;
const busyListeners = new Set<(n: number) => void>();
function track(delta: number) {
  inFlight += delta;
  for (const l of busyListeners) l(inFlight);
}

/** True while any useApi load is in flight. */
export function useBusy(): boolean {
  const [n, setN] = useState(inFlight);
  useEffect(() => {
    busyListeners.add(setN);
    setN(inFlight);
    return () => {
      busyListeners.delete(setN);
    };
  }, []);
  return n > 0;
}

export interface ApiState<T> {
  data: T | undefined;
  error: string | undefined;
  /** A request is in flight; `data`, when set, is the previous answer, still on screen. */
  loading: boolean;
}

/**
 * Loads `path` with `params`; reloads when they change or when `tick`
 * changes. A refresh keeps the answer on screen (`loading` true) until the
 * new one arrives: so does a preset range ("last hour") sliding with "now",
 * which moves `from`/`to` but shows the same view. Any other change drops the
 * old answer at once, so an old answer is never shown for another question.
 * `path` null means "nothing to load yet".
 */
export function useApi<T>(path: string | null, params: Params, tick = 0): ApiState<T> {
  const preset = useContext(Ctx)?.range.preset;
  const key = path === null ? '' : apiUrl(path, params);
  const view = path !== null && preset && 'from' in params ? apiUrl(path, { ...params, from: preset, to: null }) : key;
  const [state, setState] = useState<ApiState<T> & { view: string }>({
    data: undefined,
    error: undefined,
    loading: path !== null,
    view,
  });
  useEffect(() => {
    if (path === null) {
      setState({ data: undefined, error: undefined, loading: false, view });
      return;
    }
    const ctl = new AbortController();
    setState((s) => (s.view !== view ? { data: undefined, error: undefined, loading: true, view } : { ...s, loading: true }));
    track(1);
    api<T>(path, params, { signal: ctl.signal })
      .finally(() => track(-1))
      .then((data) => {
        if (!ctl.signal.aborted) setState({ data, error: undefined, loading: false, view });
      })
      .catch((err: unknown) => {
        if (ctl.signal.aborted) return;
        const message = err instanceof Error ? err.message : String(err);
        setState((s) => ({ data: s.view === view ? s.data : undefined, error: message, loading: false, view }));
      });
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, tick]);
  // While another view is loading, never show the answer of the old one.
  if (state.view !== view) return { data: undefined, error: undefined, loading: path !== null };
  return state;
}
