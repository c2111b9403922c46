import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Location } from './router';
import type { TimeRange } from './time';

export interface AppCtx {
  loc: Location;
  range: TimeRange;
  /** Bumped by auto-refresh and the refresh button. */
  tick: number;
  project: string;
  refresh: () => void;
}

export const Ctx = createContext<AppCtx | null>(null);

export function useApp(): AppCtx {
  const c = useContext(Ctx);
  if (!c) throw new Error('useApp outside the app');
  return c;
}

/** The params every query call takes: project and time range. */
export function useScope(): { project: string; from: number; to: number } {
  const { project, range } = useApp();
  return { project, from: Math.floor(range.from), to: Math.ceil(range.to) };
}
