import { useApi } from '../lib/api';
import { useScope } from '../lib/ctx';
import type { ServiceRow } from '../lib/types';

/** A select of the services seen in the range (plus the current value, if not among them). */
export function ServiceSelect(props: { value: string; onChange: (v: string) => void; testid?: string; label?: string }) {
  const scope = useScope();
  const st = useApi<{ services: ServiceRow[] }>('services', scope);
  const names = (st.data?.services ?? []).map((s) => s.service).sort((a, b) => a.localeCompare(b));
  if (props.value && !names.includes(props.value)) names.unshift(props.value);
  return (
    <label class="field">
      <span>{props.label ?? 'Service'}</span>
      <select data-testid={props.testid ?? 'service-select'} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">All services</option>
        {names.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </label>
  );
}
