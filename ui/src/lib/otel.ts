// OpenTelemetry enums as the API may send them (numbers or names).

export function severityName(n: number | null | undefined, text?: string | null): string {
  if (n && n >= 1) {
    if (n <= 4) return 'TRACE';
    if (n <= 8) return 'DEBUG';
    if (n <= 12) return 'INFO';
    if (n <= 16) return 'WARN';
    if (n <= 20) return 'ERROR';
    return 'FATAL';
  }
  const t = (text ?? '').toUpperCase();
  if (t.startsWith('WARN')) return 'WARN';
  if (t.startsWith('ERR')) return 'ERROR';
  if (['TRACE', 'DEBUG', 'INFO', 'FATAL'].includes(t)) return t;
  return 'UNSET';
}

export const SEVERITY_MIN_OPTIONS = [
  { value: '', label: 'Any severity' },
  { value: '5', label: 'DEBUG and above' },
  { value: '9', label: 'INFO and above' },
  { value: '13', label: 'WARN and above' },
  { value: '17', label: 'ERROR and above' },
  { value: '21', label: 'FATAL' },
];

const KINDS = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];

export function spanKind(k: number | string | null | undefined): string {
  if (typeof k === 'number') return KINDS[k] ?? String(k);
  if (!k) return 'UNSPECIFIED';
  return String(k).replace(/^SPAN_KIND_/, '').toUpperCase();
}

export function isErrorStatus(code: number | string | null | undefined): boolean {
  if (typeof code === 'number') return code === 2;
  if (!code) return false;
  const c = String(code).toUpperCase();
  return c === '2' || c === 'ERROR' || c === 'STATUS_CODE_ERROR';
}

export function statusName(code: number | string | null | undefined): string {
  if (typeof code === 'number') return ['UNSET', 'OK', 'ERROR'][code] ?? String(code);
  if (code === null || code === undefined || code === '') return 'UNSET';
  const c = String(code).toUpperCase().replace(/^STATUS_CODE_/, '');
  return c === '0' ? 'UNSET' : c === '1' ? 'OK' : c === '2' ? 'ERROR' : c;
}
