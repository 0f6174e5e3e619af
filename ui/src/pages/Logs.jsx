// Spend logs with filters, and one request's decision trace as a timeline. Request and
// response bodies are not stored by the gateway; nothing here shows prompt text.
import { useState } from 'preact/hooks';
import { qs } from '../api.js';
import { Badge, BudgetBar, ErrorBox, Loading, Table, useApi } from '../components.jsx';
import { navigate } from '../router.jsx';
import { Timeline, decisionOf } from '../timeline.jsx';
import { money, ms, num, short, shortId, text, when } from '../format.js';

const PAGE = 50;
const FILTERS = ['api_key', 'team_id', 'model', 'status', 'degradation', 'start_date', 'end_date'];

export function LogsPage({ who, query }) {
  const initial = Object.fromEntries(FILTERS.map((f) => [f, query.get(f) ?? '']));
  const [form, setForm] = useState(initial);
  const [filters, setFilters] = useState(initial);
  const [page, setPage] = useState(1);
  // datetime-local inputs are local time without a zone: sent as UTC ISO instants.
  const iso = (v) => (v ? new Date(v).toISOString() : '');
  const path = `/spend/logs${qs({ ...filters, start_date: iso(filters.start_date), end_date: iso(filters.end_date),
    limit: PAGE, offset: (page - 1) * PAGE })}`;
  const logs = useApi(path, { poll: 5000 });
  const set = (k) => (e) => setForm((f) => ({ ...f, [k]: e.currentTarget.value }));
  const apply = (e) => {
    e.preventDefault();
    setFilters(form);
    setPage(1);
    navigate(`/logs${qs(form)}`, { replace: true });
  };
  return (
    <section data-testid="page-logs">
      <h1>Logs</h1>
      <form class="filters" onSubmit={apply} data-testid="log-filters">
        {who.role === 'master' && <label>key <input value={form.api_key} onInput={set('api_key')} placeholder="sk-… or hash" name="api_key" /></label>}
        {who.role === 'master' && <label>team <input value={form.team_id} onInput={set('team_id')} name="team_id" /></label>}
        <label>model <input value={form.model} onInput={set('model')} name="model" placeholder="group or model" /></label>
        <label>status <select value={form.status} onChange={set('status')} name="status">
          <option value="">any</option><option value="success">success</option><option value="failure">failure</option></select></label>
        <label>degradation <select value={form.degradation} onChange={set('degradation')} name="degradation">
          <option value="">any or none</option><option value="none">none</option><option value="any">degraded</option>
          {['equivalent', 'reduced', 'stale_cache', 'deferred', 'fail_fast'].map((m) => <option value={m} key={m}>{m}</option>)}</select></label>
        <label>from <input type="datetime-local" value={form.start_date} onInput={set('start_date')} name="start_date" /></label>
        <label>to <input type="datetime-local" value={form.end_date} onInput={set('end_date')} name="end_date" /></label>
        <button type="submit" data-testid="apply-filters">Apply</button>
      </form>
      <ErrorBox error={logs.error} what="Spend logs" />
      {!logs.data ? (!logs.error && <Loading />) : (
        <>
          <Table testid="logs-table" rowKey={(r) => r.request_id} onRow={(r) => navigate(`/logs/${encodeURIComponent(r.request_id)}`)}
            columns={[
              { label: 'time', get: (r) => when(r.startTime) },
              { label: 'request', get: (r) => <code data-testid="log-request-id">{shortId(r.request_id)}</code> },
              { label: 'key', get: (r) => <span class="name">{text(r.key_alias ?? short(r.api_key))}</span> },
              { label: 'model group', get: (r) => text(r.model_group) },
              { label: 'status', get: (r) => <Badge kind={r.status === 'success' ? 'good' : 'bad'}>{text(r.status)}{r.error_status ? ` ${r.error_status}` : ''}</Badge> },
              { label: 'attempts', class: 'num', get: (r) => num(decisionOf(r.decision)?.steps?.filter((s) => s.step === 'attempt').length ?? null) },
              { label: 'skipped', get: (r) => (hasSkips(r) ? <Badge kind="warn">skipped fallback</Badge> : '') },
              { label: 'degradation', get: (r) => (r.degradation ? <Badge kind="warn">{text(r.degradation)}</Badge> : '') },
              { label: 'tokens', class: 'num', get: (r) => num(r.total_tokens) },
              { label: 'duration', class: 'num', get: (r) => ms(r.request_duration_ms) },
              { label: 'spend', class: 'num', get: (r) => money(r.spend) },
            ]} rows={logs.data} empty="No request matches these filters." />
          <div class="pager">
            <button type="button" class="secondary" disabled={page === 1} onClick={() => setPage(page - 1)}>Newer</button>
            <span class="muted">page {page}</span>
            <button type="button" class="secondary" disabled={logs.data.length < PAGE} onClick={() => setPage(page + 1)}>Older</button>
          </div>
        </>
      )}
    </section>
  );
}

function hasSkips(r) {
  const s = r.skipped_fallbacks;
  if (Array.isArray(s)) return s.length > 0;
  if (typeof s === 'string') return s !== '' && s !== '[]';
  return !!decisionOf(r.decision)?.steps?.some((x) => x.step === 'skip');
}

export function LogDetailPage({ id }) {
  const logs = useApi(`/spend/logs${qs({ request_id: id })}`);
  const r = logs.data?.[0];
  return (
    <section data-testid="page-log-detail">
      <div class="page-head"><h1>Request <code>{text(id)}</code></h1>
        <button type="button" class="secondary" onClick={() => history.length > 1 ? history.back() : navigate('/logs')}>Back</button></div>
      <ErrorBox error={logs.error} />
      {!logs.data ? (!logs.error && <Loading />) : !r ? <div class="empty">No spend-log row for this request id.</div> : (
        <>
          <dl class="facts">
            <dt>time</dt><dd>{when(r.startTime)} → {when(r.endTime)} ({ms(r.request_duration_ms)})</dd>
            <dt>key</dt><dd><span class="name">{text(r.key_alias)}</span> <span class="muted">{short(r.api_key)}</span></dd>
            <dt>team</dt><dd>{text(r.team_id)}</dd>
            <dt>end user</dt><dd>{text(r.end_user || null)}</dd>
            <dt>model</dt><dd>{text(r.requested_model)} → group {text(r.model_group)} → {text(r.model)} <span class="muted">({text(r.model_id)})</span></dd>
            <dt>status</dt><dd><Badge kind={r.status === 'success' ? 'good' : 'bad'}>{text(r.status)}</Badge> {r.error_status ? text(r.error_status) : ''}</dd>
            <dt>spend</dt><dd data-testid="detail-spend">{money(r.spend)}{r.unknown_outcome ? ' (includes an unknown outcome charged at its reservation)' : ''}{r.priced === false ? ' · unpriced' : ''}</dd>
            <dt>tokens</dt><dd>{num(r.prompt_tokens)} in · {num(r.completion_tokens)} out{r.cached_tokens ? ` · ${num(r.cached_tokens)} cached` : ''}</dd>
            <dt>tags</dt><dd>{text(r.request_tags)}</dd>
            <dt>cache</dt><dd>{text(r.cache_hit)}</dd>
          </dl>
          <h2>Decision trace</h2>
          <Timeline decision={r.decision} />
          <CallerBudgets row={r} />
        </>
      )}
    </section>
  );
}

/// Whether budget `b` (GET /tollgate/budgets) is one admission checks for the caller of `row`.
function appliesTo(b, row) {
  const key = row.api_key;
  switch (b.scope) {
    case 'key': return b.id === key;
    case 'key_window': case 'key_model': return !!key && b.id.startsWith(`${key}/`);
    case 'team': return !!row.team_id && b.id === row.team_id;
    case 'team_member': return !!row.team_id && b.id.startsWith(`${row.team_id}/`);
    case 'organization': return !!row.organization_id && b.id === row.organization_id;
    case 'user': return !!row.metadata?.user_api_key_user_id && b.id === row.metadata.user_api_key_user_id;
    case 'end_user': {
      // Kept per tenant (the key's team, else organization, else key) unless configured global.
      const u = row.end_user;
      return !!u && [u, `team:${row.team_id}/${u}`, `organization:${row.organization_id}/${u}`, `key:${key}/${u}`].includes(b.id);
    }
    case 'tag': return (row.request_tags ?? []).includes(b.id);
    case 'global': return true;
    default: return false;
  }
}

/// The money budgets admission checks for this request's caller, as they stand now.
function CallerBudgets({ row }) {
  const { data, error } = useApi('/tollgate/budgets?limit=10000');
  const mine = (data?.budgets ?? []).filter((b) => appliesTo(b, row));
  return (
    <div class="card">
      <h2>Budgets checked for this caller (now)</h2>
      <p class="muted">Every attempt reserves its worst case at each of these scopes before it is sent; a skip above names the one that could not pay.</p>
      <ErrorBox error={error} />
      {!data ? (!error && <Loading />) : <Table testid="caller-budgets" rowKey={(b) => `${b.scope}:${b.id}`} columns={[
        { label: 'scope', get: (b) => text(b.scope) },
        { label: 'name', get: (b) => <span class="name">{text(b.name)}</span> },
        { label: 'used', get: (b) => <BudgetBar spend={b.spend} reserved={b.reserved} max={b.max_budget} /> },
        { label: 'window', get: (b) => text(b.budget_duration ?? 'lifetime') },
      ]} rows={mine} empty="No money budget applies to this caller." />}
    </div>
  );
}
