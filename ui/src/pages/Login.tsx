import { useState } from 'preact/hooks';
import { api } from '../lib/api';
import { navigate } from '../lib/router';

function safeNext(): string {
  const next = new URLSearchParams(window.location.search).get('next') ?? '/';
  // Only same-origin paths: never an open redirect.
  return next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/';
}

export function LoginPage({ onLoggedIn }: { onLoggedIn: (username: string) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <div class="login-wrap">
      <form
        class="login panel"
        data-testid="login-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            const me = await api<{ username: string }>('login', {}, {
              method: 'POST',
              body: JSON.stringify({ username, password }),
            });
            onLoggedIn(me?.username ?? username);
            navigate(safeNext(), true);
          } catch (err) {
            setError(err instanceof Error ? err.message : String(err));
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1>
          <span class="logo-mark" aria-hidden="true">◉</span> Sightline
        </h1>
        <p class="muted">Sign in to see your traces, logs and metrics.</p>
        <label class="field">
          <span>Username</span>
          <input
            data-testid="login-username"
            name="username"
            autocomplete="username"
            required
            autofocus
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </label>
        <label class="field">
          <span>Password</span>
          <input
            data-testid="login-password"
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        {error && (
          <div class="state error" role="alert" data-testid="login-error">
            {error}
          </div>
        )}
        <button type="submit" class="primary" data-testid="login-submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
}
