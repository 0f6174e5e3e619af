// Login: paste the master key or a virtual key. It is checked with GET /tollgate/whoami and
// kept in sessionStorage (this tab only), sent as a header — never in a URL or a cookie.
import { useState } from 'preact/hooks';
import { whoami } from '../api.js';

export function LoginPage({ onLogin, notice }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    const k = key.trim();
    if (!k) { setError('Paste a key first.'); return; }
    setBusy(true); setError(null);
    try {
      const who = await whoami(k);
      if (who.blocked) setError('This key is blocked: it cannot sign in (unblock it with the master key).');
      else onLogin(k, who);
    } catch (err) {
      setError(err.status === 401 ? `The gateway refused this key: ${err.message}` : `Could not sign in: ${err.message}`);
    } finally { setBusy(false); }
  };
  return (
    <main class="login">
      <form onSubmit={submit} data-testid="login-form">
        <h1>Tollgate</h1>
        <p class="muted">Sign in with the master key (everything) or a virtual key (its own data, read-only).</p>
        {notice && <div class="notice" role="status">{notice}</div>}
        <label for="key">API key</label>
        <input id="key" name="key" type="password" autoComplete="off" value={key} onInput={(e) => setKey(e.currentTarget.value)}
          placeholder="sk-…" data-testid="login-key" />
        {error && <div class="error" role="alert" data-testid="login-error">{error}</div>}
        <button type="submit" disabled={busy} data-testid="login-submit">{busy ? 'Checking…' : 'Sign in'}</button>
        <p class="muted small">The key stays in this tab's session storage and is sent only in the Authorization header.</p>
      </form>
    </main>
  );
}
