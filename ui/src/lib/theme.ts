// Light/dark theme: follows prefers-color-scheme until the user picks one
// with the toggle; the choice is kept in localStorage.
import { useEffect, useState } from 'preact/hooks';

export type Theme = 'light' | 'dark';
const KEY = 'sightline.theme';
const media = window.matchMedia('(prefers-color-scheme: dark)');
const listeners = new Set<() => void>();

function stored(): Theme | null {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : null;
  } catch {
    return null;
  }
}

export function currentTheme(): Theme {
  return stored() ?? (media.matches ? 'dark' : 'light');
}

export function applyTheme() {
  document.documentElement.dataset.theme = currentTheme();
  for (const l of listeners) l();
}

export function toggleTheme() {
  const next: Theme = currentTheme() === 'dark' ? 'light' : 'dark';
  try {
    localStorage.setItem(KEY, next);
  } catch {
    /* private mode: the toggle still works for this page */
  }
  applyTheme();
}

media.addEventListener('change', () => applyTheme());

export function useTheme(): Theme {
  const [t, setT] = useState(currentTheme);
  useEffect(() => {
    const l = () => setT(currentTheme());
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return t;
}

/** A CSS custom property of the root element (theme colors for canvas drawing). */
export function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#59a14f',
  '#e15759',
  '#76b7b2',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#8cd17d',
  '#bab0ac',
  '#86bcb6',
];

export function paletteColor(i: number): string {
  return PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length];
}

export const SEVERITY_COLORS: Record<string, string> = {
  TRACE: '#9aa4b2',
  DEBUG: '#76b7b2',
  INFO: '#4e79a7',
  WARN: '#f2b02b',
  ERROR: '#e15759',
  FATAL: '#a3303b',
};
