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
  /**
   * Set when the URL's range cannot be used (from/to not numbers, only one
   * of them, from >= to, an unknown preset): what is wrong. Pages are not
   * queried then; the app shows this instead of guessing another range.
   */
  invalid?: string;
}

export function resolveRange(q: URLSearchParams, now: number): TimeRange {
  const fromS = q.get('from');
  const toS = q.get('to');
  if (fromS !== null || toS !== null) {
    const from = Number(fromS);
    const to = Number(toS);
    const fallback = { from: now - 3_600_000, to: now, preset: null };
    if (fromS === null || toS === null || fromS === '' || toS === '') {
      return { ...fallback, invalid: 'The time range in the address needs both "from" and "to".' };
    }
    if (!Number.isFinite(from) || !Number.isFinite(to)) {
      return { ...fallback, invalid: `The time range in the address is not two times in milliseconds (from=${fromS}, to=${toS}).` };
    }
    if (from >= to) {
      return {
        from,
        to,
        preset: null,
        invalid: `The time range in the address is ${from === to ? 'empty' : 'inverted'}: from (${new Date(from).toISOString()}) is ${
          from === to ? 'the same as' : 'after'
        } to (${new Date(to).toISOString()}).`,
      };
    }
    return { from, to, preset: null };
  }
  const r = q.get('range');
  const p = PRESETS.find((x) => x.key === (r || DEFAULT_PRESET));
  if (!p) {
    const d = PRESETS.find((x) => x.key === DEFAULT_PRESET)!;
    return { from: now - d.ms, to: now, preset: null, invalid: `Unknown time range "${r}" in the address.` };
  }
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
