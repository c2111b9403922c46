// Time range: a preset ("range=1h", relative to now) or a custom from/to in
// ms since the epoch. Presets slide with "now" on every refresh.

export const PRESETS: { key: string; label: string; ms: number }[] = [
  { key: '15m', label: 'Last 15 minutes', ms: 15 * 60_000 },
  { key: '1h', label: 'Last 1 hour', ms: 3_600_000 },
  { key: '6h', label: 'Last 6 hours', ms: 6 * 3_600_000 },
  { key: '24h', label: 'Last 24 hours', ms: 24 * 3_600_000 },
  { key: '7d', label: 'Last 7 days', ms: 7 * 24 * 3_600_000 },
];
export const DEFAULT_PRESET = '1h';

export const REFRESH: { key: string; label: string; ms: number }[] = [
  { key: '', label: 'Off', ms: 0 },
  { key: '10s', label: '10s', ms: 10_000 },
  { key: '30s', label: '30s', ms: 30_000 },
  { key: '1m', label: '1m', ms: 60_000 },
];

export interface TimeRange {
  from: number;
  to: number;
  preset: string | null; // null when custom
}

export function resolveRange(q: URLSearchParams, now: number): TimeRange {
  const from = Number(q.get('from'));
  const to = Number(q.get('to'));
  if (q.get('from') && q.get('to') && Number.isFinite(from) && Number.isFinite(to) && from < to) {
    return { from, to, preset: null };
  }
  const p = PRESETS.find((x) => x.key === q.get('range')) ?? PRESETS.find((x) => x.key === DEFAULT_PRESET)!;
  return { from: now - p.ms, to: now, preset: p.key };
}

export function refreshMs(q: URLSearchParams): number {
  return REFRESH.find((r) => r.key === q.get('refresh'))?.ms ?? 0;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** ms -> the value of an <input type="datetime-local"> (local time). */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}`;
}

export function fromLocalInput(s: string): number {
  const t = new Date(s).getTime();
  return Number.isFinite(t) ? t : NaN;
}
