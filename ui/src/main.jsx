// The admin UI's shell: sign-in, navigation and routes (docs/ui.md).
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { clearKey, getKey, onUnauthorized, setKey, whoami } from './api.js';
import { Link, navigate, useRoute } from './router.jsx';
import { LoginPage } from './pages/Login.jsx';
import { OverviewPage } from './pages/Overview.jsx';
import { EntitiesPage, MyKeyPage } from './pages/Entities.jsx';
import { ModelsPage } from './pages/Models.jsx';
import { LogDetailPage, LogsPage } from './pages/Logs.jsx';
import { PolicyPage } from './pages/Policy.jsx';
import { ENTITIES } from './entities.js';
import { text } from './format.js';
import './style.css';

const MASTER_NAV = [['/', 'Overview'], ...Object.entries(ENTITIES).map(([k, d]) => [`/${k}`, d.title]),
  ['/models', 'Models'], ['/logs', 'Logs'], ['/policy', 'Policy']];
const KEY_NAV = [['/', 'Overview'], ['/my-key', 'My key'], ['/logs', 'Logs']];

function Page({ who, route }) {
  const { path, query } = route;
  const seg = path.split('/').filter(Boolean);
  const master = who.role === 'master';
  if (seg.length === 0) return <OverviewPage who={who} />;
  if (seg[0] === 'logs' && seg[1]) return <LogDetailPage id={decodeURIComponent(seg.slice(1).join('/'))} />;
  if (seg[0] === 'logs') return <LogsPage who={who} query={query} />;
  if (seg[0] === 'my-key' && !master) return <MyKeyPage who={who} />;
  if (master && ENTITIES[seg[0]]) return <EntitiesPage kind={seg[0]} />;
  if (master && seg[0] === 'models') return <ModelsPage />;
  if (master && seg[0] === 'policy') return <PolicyPage />;
  return (
    <section><h1>Not here</h1>
      <p>{master ? 'No such page.' : 'This page needs the master key: a virtual key sees its own key, spend and logs.'}</p>
      <Link to="/">Overview</Link></section>
  );
}

function App() {
  const route = useRoute();
  const [who, setWho] = useState(null);
  const [checking, setChecking] = useState(!!getKey());
  const [notice, setNotice] = useState(null);

  useEffect(() => {
    if (!getKey()) return;
    whoami().then((w) => { if (w.blocked) throw new Error('blocked'); setWho(w); })
      .catch(() => { clearKey(); setNotice('Your session ended: sign in again.'); })
      .finally(() => setChecking(false));
  }, []);
  useEffect(() => onUnauthorized((err) => {
    clearKey();
    setWho(null);
    setNotice(`Signed out: the gateway refused the key (${err.message}).`);
  }), []);

  if (checking) return <div class="muted pad">Loading…</div>;
  if (!who) {
    return <LoginPage notice={notice} onLogin={(k, w) => { setKey(k); setWho(w); setNotice(null); if (route.path === '/login') navigate('/'); }} />;
  }
  const nav = who.role === 'master' ? MASTER_NAV : KEY_NAV;
  const active = (p) => (p === '/' ? route.path === '/' : route.path === p || route.path.startsWith(`${p}/`));
  const logout = () => { clearKey(); setWho(null); setNotice('Signed out.'); };
  return (
    <div class="shell">
      <nav class="side" aria-label="main">
        <div class="brand">Tollgate</div>
        {nav.map(([p, label]) => <Link key={p} to={p} class={active(p) ? 'active' : ''}>{label}</Link>)}
        <div class="whoami" data-testid="whoami">
          {who.role === 'master' ? 'master key' : <>key <span class="name">{text(who.key_alias ?? 'unnamed')}</span> (read-only)</>}
          <button type="button" class="link" onClick={logout} data-testid="logout">Sign out</button>
        </div>
      </nav>
      <main class="content"><Page who={who} route={route} /></main>
    </div>
  );
}

render(<App />, document.getElementById('app'));
