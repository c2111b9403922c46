// Number and time formatting shared by every page.

const DASH = '—';

function trimZeros(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/** Up to 3 significant digits, no exponent, trailing zeros dropped. */
export function sig3(v: number): string {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 100) return Math.round(v).toLocaleString('en-US');
  if (a >= 10) return trimZeros(v.toFixed(1));
  if (a >= 1) return trimZeros(v.toFixed(2));
  // 0.xyz: three significant digits
  const decimals = Math.min(6, 2 - Math.floor(Math.log10(a)));
  return trimZeros(v.toFixed(decimals));
}

/**
 * A duration given in milliseconds, with 1-3 decimals depending on size:
 * "0.123 ms", "4.56 ms", "182.5 ms", "1.23 s", "2.5 min".
 */
export function fmtMs(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  const a = Math.abs(v);
  if (a === 0) return '0 ms';
  if (a < 1) return `${sig3(v)} ms`;
  if (a < 10) return `${trimZeros(v.toFixed(2))} ms`;
  if (a < 1000) return `${trimZeros(v.toFixed(1))} ms`;
  if (a < 60_000) return `${trimZeros((v / 1000).toFixed(2))} s`;
  if (a < 3_600_000) return `${trimZeros((v / 60_000).toFixed(1))} min`;
  return `${trimZeros((v / 3_600_000).toFixed(1))} h`;
}

/** A per-second rate: "12.3/s", "1.2k/s"; slow ones per minute or hour: "1.5/min", "3/h". */
export function fmtRate(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  if (v === 0) return '0/s';
  if (Math.abs(v) >= 0.1) return `${fmtCompact(v)}/s`;
  if (Math.abs(v * 60) >= 0.1) return `${sig3(v * 60)}/min`;
  return `${sig3(v * 3600)}/h`;
}

/** A fraction 0..1 as a percentage: "0%", "0.12%", "12.5%", "100%". */
export function fmtPct(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  const p = v * 100;
  if (p === 0) return '0%';
  if (p < 0.01) return '<0.01%';
  return `${sig3(p)}%`;
}

/** An integer count with thousands separators. */
export function fmtCount(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  return Math.round(v).toLocaleString('en-US');
}

/** Compact: 950, 1.2k, 3.4M, 0.05. */
export function fmtCompact(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  const a = Math.abs(v);
  if (a >= 1e9) return `${sig3(v / 1e9)}G`;
  if (a >= 1e6) return `${sig3(v / 1e6)}M`;
  if (a >= 1e4) return `${sig3(v / 1e3)}k`;
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  return sig3(v);
}

/** A value with a metric's unit (OTel UCUM-ish units). */
export function fmtUnit(v: number | null | undefined, unit: string | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  switch (unit) {
    case 'ms':
      return fmtMs(v);
    case 's':
      return fmtMs(v * 1000);
    case 'us':
      return fmtMs(v / 1000);
    case 'ns':
      return fmtMs(v / 1e6);
    case 'By':
      return fmtBytes(v);
    case '1':
    case '':
    case undefined:
      return fmtCompact(v);
    default:
      if (unit.startsWith('{')) return fmtCompact(v);
      return `${fmtCompact(v)} ${unit}`;
  }
}

export function fmtBytes(v: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = v;
  while (Math.abs(x) >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${sig3(x)} ${units[i]}`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Local time: "14:03:07" today, "Nov 28 14:03:07" otherwise; withMs adds ".123". */
export function fmtTime(ms: number | null | undefined, withMs = false): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return DASH;
  const d = new Date(ms);
  const now = new Date();
  let s = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (withMs) s += `.${pad(d.getMilliseconds(), 3)}`;
  const sameDay =
    d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  if (!sameDay) s = `${MONTHS[d.getMonth()]} ${d.getDate()} ${s}`;
  return s;
}

/** Full local date and time, for tooltips: "2024-11-28 14:03:07.123". */
export function fmtDateTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** "5s ago", "3 min ago", "2 h ago", "4 d ago". */
export function fmtAgo(ms: number, now = Date.now()): string {
  const s = Math.max(0, (now - ms) / 1000);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** Nanoseconds as a decimal string (the API's *_ns fields) to milliseconds. */
export function nsToMs(ns: string | number | null | undefined): number {
  if (ns === null || ns === undefined || ns === '') return NaN;
  if (typeof ns === 'number') return ns / 1e6;
  try {
    const b = BigInt(ns);
    return Number(b / 1000n) / 1000;
  } catch {
    return Number(ns) / 1e6;
  }
}

/** The difference a - b of two *_ns values, in milliseconds, without losing precision. */
export function nsDiffMs(a: string | number, b: string | number): number {
  try {
    return Number(BigInt(a) - BigInt(b)) / 1e6;
  } catch {
    return (Number(a) - Number(b)) / 1e6;
  }
}

export function shortId(id: string | null | undefined, n = 8): string {
  return id ? id.slice(0, n) : '';
}

/** Attribute values may be any JSON: strings as-is, the rest as JSON. */
export function fmtAttr(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  return JSON.stringify(v);
}

/** A retention in seconds as words: "forever" (null), "30 days", "12 hours", "90 minutes". */
export function fmtRetention(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return 'forever';
  const unit = (n: number, word: string) => `${fmtCount(n)} ${word}${n === 1 ? '' : 's'}`;
  if (seconds % 86_400 === 0) return unit(seconds / 86_400, 'day');
  if (seconds % 3_600 === 0) return unit(seconds / 3_600, 'hour');
  if (seconds % 60 === 0) return unit(seconds / 60, 'minute');
  return unit(seconds, 'second');
}
