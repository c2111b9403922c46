// Tiny router: the URL is the single source of UI state. The path names the
// page (and a trace id), the query string holds everything else, so deep
// links, reload and back/forward all work.
import { useEffect, useState } from 'preact/hooks';

export type ParamValue = string | number | boolean | null | undefined | string[];
export type ParamPatch = Record<string, ParamValue>;

// Parameters that follow the user from page to page.
export const GLOBAL_PARAMS = ['project', 'range', 'from', 'to', 'refresh'];

const listeners = new Set<() => void>();
function notify() {
  for (const l of listeners) l();
}
window.addEventListener('popstate', notify);

export interface Location {
  path: string;
  q: URLSearchParams;
  href: string;
}

function current(): Location {
  return {
    path: window.location.pathname,
    q: new URLSearchParams(window.location.search),
    href: window.location.pathname + window.location.search,
  };
}

export function navigate(url: string, replace = false) {
  if (url === window.location.pathname + window.location.search) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  window.scrollTo(0, 0);
  notify();
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const l = () => setLoc(current());
    listeners.add(l);
    l();
    return () => {
      listeners.delete(l);
    };
  }, []);
  return loc;
}

function applyPatch(q: URLSearchParams, patch: ParamPatch) {
  for (const [k, v] of Object.entries(patch)) {
    q.delete(k);
    if (v === null || v === undefined || v === '' || v === false) continue;
    if (Array.isArray(v)) {
      for (const item of v) if (item !== '') q.append(k, item);
    } else {
      q.set(k, v === true ? '1' : String(v));
    }
  }
}

function build(path: string, q: URLSearchParams): string {
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A URL to `path` that keeps the global params (project, time range) and adds `patch`. */
export function hrefTo(path: string, patch: ParamPatch = {}): string {
  const cur = new URLSearchParams(window.location.search);
  const q = new URLSearchParams();
  for (const k of GLOBAL_PARAMS) for (const v of cur.getAll(k)) q.append(k, v);
  applyPatch(q, patch);
  return build(path, q);
}

/** The current URL with `patch` applied to its query string. */
export function hrefWith(patch: ParamPatch): string {
  const q = new URLSearchParams(window.location.search);
  applyPatch(q, patch);
  return build(window.location.pathname, q);
}

export function setParams(patch: ParamPatch, replace = false) {
  navigate(hrefWith(patch), replace);
}
