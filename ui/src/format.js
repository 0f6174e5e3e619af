// Display helpers. Every value ends up as a text node (never HTML).

/// Dollars: at least 2 decimals, up to 6 for small amounts ("$0.000123").
export function money(v) {
  if (v === null || v === undefined || v === '') return '—';
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  const abs = Math.abs(n);
  const digits = abs === 0 ? 2 : abs < 0.01 ? 6 : abs < 1 ? 4 : 2;
  return `$${n.toFixed(digits)}`;
}

export const num = (v) => (v === null || v === undefined ? '—' : Number(v).toLocaleString('en-US'));
export const pct = (v) => (v === null || v === undefined ? '—' : `${(Number(v) * 100).toFixed(1)}%`);

export function when(v) {
  if (!v) return '—';
  const d = typeof v === 'number' ? new Date(v) : new Date(v);
  if (Number.isNaN(d.getTime())) return String(v);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function ms(v) {
  if (v === null || v === undefined) return '—';
  const n = Number(v);
  return n >= 10000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`;
}

/// A short form of a long identifier (hashes): first 8 and last 4 characters.
export const short = (s) => (typeof s === 'string' && s.length > 16 ? `${s.slice(0, 8)}…${s.slice(-4)}` : s ?? '—');

/// A short form of a request id (a UUIDv7 starts with its time, alike for requests made close
/// together): the last 12 characters, its random part.
export const shortId = (s) => (typeof s === 'string' && s.length > 16 ? `…${s.slice(-12)}` : s ?? '—');

/// Any value as one line of text (objects as JSON).
export function text(v) {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ') : '—';
  if (typeof v === 'object') return Object.keys(v).length ? JSON.stringify(v) : '—';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return String(v);
}
