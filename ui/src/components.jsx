// Shared pieces of the pages. Every value is rendered as a text node by Preact: no HTML string
// is ever set anywhere in the UI (tests/browser checks the sources for it).
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { money, pct } from './format.js';

/// Loads `path` (null = nothing) and reloads it every `poll` ms when set.
/// Returns {data, error, loading, reload}.
export function useApi(path, { poll } = {}) {
  const [state, setState] = useState({ data: null, error: null, loading: !!path });
  const seq = useRef(0);
  const load = useCallback(async () => {
    if (!path) return;
    const mine = ++seq.current;
    try {
      const data = await api(path);
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === seq.current) setState((s) => ({ data: s.data, error, loading: false }));
    }
  }, [path]);
  useEffect(() => {
    setState((s) => ({ ...s, loading: true }));
    load();
    if (!poll) return undefined;
    const t = setInterval(load, poll);
    return () => clearInterval(t);
  }, [load, poll]);
  return { ...state, reload: load };
}

export function ErrorBox({ error, what }) {
  if (!error) return null;
  return (
    <div class="error" role="alert" data-testid="error">
      {what ? `${what}: ` : ''}{error.message}{error.status ? ` (HTTP ${error.status})` : ''}
    </div>
  );
}

export const Loading = () => <div class="muted">Loading…</div>;

/// A table: `columns` = [{label, get(row) → text or node, class?}].
export function Table({ columns, rows, empty = 'Nothing here yet.', rowKey, onRow, testid }) {
  if (!rows?.length) return <div class="empty" data-testid={testid ? `${testid}-empty` : undefined}>{empty}</div>;
  return (
    <div class="table-wrap">
      <table data-testid={testid}>
        <thead><tr>{columns.map((c) => <th key={c.label} class={c.class}>{c.label}</th>)}</tr></thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={rowKey ? rowKey(r) : i} class={onRow ? 'clickable' : undefined} onClick={onRow ? () => onRow(r) : undefined}>
              {columns.map((c) => <td key={c.label} class={c.class}>{c.get(r)}</td>)}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/// Spend against a cap: spent (solid) and reserved (hatched) apart, in an SVG (no inline styles).
export function BudgetBar({ spend = 0, reserved = 0, max, label }) {
  const cap = Number(max);
  const s = Number(spend) || 0;
  const r = Number(reserved) || 0;
  if (!(cap > 0)) {
    return <span class="muted" data-testid="budget-bar" data-spend={s}>{money(s)} spent · no cap</span>;
  }
  const w = 200;
  const sw = Math.min(w, (s / cap) * w);
  const rw = Math.min(w - sw, (r / cap) * w);
  const ratio = (s + r) / cap;
  const level = ratio >= 1 ? 'over' : ratio >= 0.8 ? 'high' : 'ok';
  return (
    <span class="budget" data-testid="budget-bar" data-spend={s} data-reserved={r} data-max={cap} data-ratio={ratio}>
      <svg width={w} height="12" viewBox={`0 0 ${w} 12`} role="img" aria-label={label ?? `budget ${pct(ratio)} used`}>
        <rect class="bar-bg" x="0" y="0" width={w} height="12" rx="3" />
        <rect class={`bar-spend ${level}`} x="0" y="0" width={sw} height="12" rx="3" />
        {rw > 0 && <rect class="bar-reserved" x={sw} y="0" width={Math.max(rw, 1)} height="12" />}
      </svg>
      <span class="budget-text">
        {money(s)} of {money(cap)}{r > 0 ? ` · ${money(r)} reserved` : ''} · {pct(ratio)}
      </span>
    </span>
  );
}

export function Badge({ kind = 'plain', children, ...rest }) {
  return <span class={`badge ${kind}`} {...rest}>{children}</span>;
}

/// A secret shown once with a copy button.
export function SecretOnce({ secret, onDone }) {
  const [copied, setCopied] = useState(false);
  const ref = useRef(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(true);
    } catch {
      ref.current?.select();
      setCopied(document.execCommand?.('copy') ?? false);
    }
  };
  return (
    <div class="secret" data-testid="new-secret">
      <p><strong>Copy this key now.</strong> It is shown once: the gateway keeps only its hash.</p>
      <div class="row">
        <input ref={ref} readOnly value={secret} data-testid="new-secret-value" size={Math.min(60, secret.length + 2)} />
        <button type="button" onClick={copy} data-testid="copy-secret">{copied ? 'Copied' : 'Copy'}</button>
        <button type="button" class="secondary" onClick={onDone}>Done</button>
      </div>
    </div>
  );
}

/// A modal dialog (a <dialog>-like overlay).
export function Modal({ title, onClose, children }) {
  // A layout effect: the key listener is in place when the dialog is shown, so an Escape
  // pressed at once closes it (a deferred effect missed a key pressed within a frame).
  useLayoutEffect(() => {
    const onKey = (e) => { if (e.key === 'Escape') onClose(); };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  return (
    <div class="overlay" onClick={(e) => { if (e.target === e.currentTarget) onClose(); }}>
      <div class="modal" role="dialog" aria-label={title}>
        <div class="modal-head"><h2>{title}</h2><button type="button" class="link" onClick={onClose} aria-label="close">×</button></div>
        {children}
      </div>
    </div>
  );
}

export function Stat({ label, value, testid, sub }) {
  return (
    <div class="stat">
      <div class="stat-label">{label}</div>
      <div class="stat-value" data-testid={testid}>{value}</div>
      {sub && <div class="stat-sub muted">{sub}</div>}
    </div>
  );
}
