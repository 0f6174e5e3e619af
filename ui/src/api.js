// The gateway's JSON API as the UI calls it. The key lives in sessionStorage only (gone when the
// tab closes) and is sent as an `Authorization: Bearer` header — never in a URL, never a cookie.

const STORAGE = 'tollgate.key';

export const getKey = () => sessionStorage.getItem(STORAGE) ?? '';
export const setKey = (k) => sessionStorage.setItem(STORAGE, k);
export const clearKey = () => sessionStorage.removeItem(STORAGE);

/// An error answer of the API: `status`, `message`, and `param` (the field it names, if any).
export class ApiError extends Error {
  constructor(status, body, text) {
    const e = body?.error ?? {};
    const msg = typeof e === 'string' ? e : e.message ?? (text ? text.slice(0, 300) : `HTTP ${status}`);
    super(msg);
    this.status = status;
    this.param = typeof e === 'object' ? e.param ?? null : null;
    this.type = typeof e === 'object' ? e.type ?? null : null;
    this.code = typeof e === 'object' ? e.code ?? null : null;
    this.problems = body?.problems ?? null;
  }
}

/// Listeners told when the API answers 401 (the key was revoked or blocked meanwhile).
const unauthorized = new Set();
export const onUnauthorized = (fn) => { unauthorized.add(fn); return () => unauthorized.delete(fn); };

/// Calls `path` with the stored key; GET unless `body` is given (then POST with JSON).
/// Resolves with the parsed JSON; rejects with an ApiError on any non-2xx answer.
export async function api(path, { body, method, key, signal } = {}) {
  const headers = { authorization: `Bearer ${key ?? getKey()}` };
  const init = { method: method ?? (body === undefined ? 'GET' : 'POST'), headers, signal, credentials: 'omit',
    cache: 'no-store', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  if (!res.ok) {
    const err = new ApiError(res.status, json, text);
    if (res.status === 401 && key === undefined) for (const fn of unauthorized) fn(err);
    throw err;
  }
  return json;
}

/// A query string from an object, leaving out empty values.
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}

/// Who the key is: GET /tollgate/whoami → {role: 'master'|'key', token, key_alias, team_id,
/// user_id, models, blocked}.
export async function whoami(key) {
  return api('/tollgate/whoami', { key });
}
