// A tiny history router: the gateway answers every /ui/... route with index.html.
import { useEffect, useState } from 'preact/hooks';

const BASE = '/ui';
const listeners = new Set();

export const currentPath = () => {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return p === '' ? '/' : p;
};

export function navigate(to, { replace = false } = {}) {
  const url = BASE + (to.startsWith('/') ? to : `/${to}`);
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const fn of listeners) fn();
}

window.addEventListener('popstate', () => { for (const fn of listeners) fn(); });

/// The current route (path below /ui and the query parameters); re-renders on navigation.
export function useRoute() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const fn = () => setTick((t) => t + 1);
    listeners.add(fn);
    return () => listeners.delete(fn);
  }, []);
  return { path: currentPath(), query: new URLSearchParams(location.search) };
}

/// An in-app link (a real href, so it opens in a new tab too).
export function Link({ to, children, ...rest }) {
  const onClick = (e) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={BASE + to} onClick={onClick} {...rest}>{children}</a>;
}
