// Overview: spend today / in the window / this month with a chart, requests and error rate by
// model group, top keys, teams and models, budgets closest to their caps, alerts.
import { useState } from 'preact/hooks';
import { qs } from '../api.js';
import { BudgetBar, ErrorBox, Loading, Stat, Table, useApi } from '../components.jsx';
import { SpendChart } from '../chart.jsx';
import { money, num, pct, short, text, when } from '../format.js';

const RANGES = {
  '24h': { hours: 24, bucket: 'hour', label: 'last 24 hours' },
  '7d': { hours: 24 * 7, bucket: 'hour', label: 'last 7 days' },
  '30d': { hours: 24 * 30, bucket: 'day', label: 'last 30 days' },
};

export function OverviewPage({ who }) {
  const [range, setRange] = useState('24h');
  const r = RANGES[range];
  // The start is rounded to the bucket so that the path (and the poll) stays the same meanwhile.
  const step = r.bucket === 'hour' ? 3600e3 : 86400e3;
  const start = new Date(Math.floor((Date.now() - r.hours * 3600e3) / step) * step).toISOString();
  const ov = useApi(`/tollgate/overview${qs({ start_date: start, bucket: r.bucket })}`, { poll: 5000 });
  const budgets = useApi('/tollgate/budgets?limit=10', { poll: 5000 });
  const o = ov.data;
  return (
    <section data-testid="page-overview">
      <div class="page-head">
        <h1>Overview</h1>
        <div class="segmented" role="group" aria-label="range">
          {Object.entries(RANGES).map(([k, v]) => (
            <button type="button" key={k} class={k === range ? 'on' : ''} onClick={() => setRange(k)} data-testid={`range-${k}`}>{v.label}</button>
          ))}
        </div>
      </div>
      {who.role === 'key' && <p class="muted">Figures of your own key only.</p>}
      <ErrorBox error={ov.error} what="Overview" />
      {!o ? (!ov.error && <Loading />) : (
        <>
          <div class="stats">
            <Stat label="spend today (UTC)" value={money(o.spend?.today)} testid="spend-today" />
            <Stat label={`spend, ${r.label}`} value={money(o.spend?.range)} testid="spend-range" />
            <Stat label="spend this month" value={money(o.spend?.month)} testid="spend-month" />
            <Stat label="requests" value={num(o.series?.reduce((a, p) => a + (p.requests ?? 0), 0))} testid="requests-range"
              sub={`${num(o.series?.reduce((a, p) => a + (p.errors ?? 0), 0))} errors`} />
          </div>
          <div class="card">
            <h2>Spend over time</h2>
            {o.series?.length ? <SpendChart series={o.series} /> : <div class="empty">No data in this range.</div>}
          </div>
          <div class="grid2">
            <div class="card">
              <h2>By model group</h2>
              <Table testid="by-group" columns={[
                { label: 'model group', get: (g) => text(g.model_group) },
                { label: 'requests', class: 'num', get: (g) => num(g.requests) },
                { label: 'errors', class: 'num', get: (g) => num(g.errors) },
                { label: 'error rate', class: 'num', get: (g) => pct(g.error_rate) },
                { label: 'spend', class: 'num', get: (g) => money(g.spend) },
              ]} rows={o.by_model_group} empty="No requests in this range." />
            </div>
            <div class="card">
              <h2>Budgets closest to their caps</h2>
              <ErrorBox error={budgets.error} />
              <Table testid="top-budgets" columns={[
                { label: 'scope', get: (b) => text(b.scope) },
                { label: 'name', get: (b) => <span class="name">{text(b.name)}</span> },
                { label: 'used', get: (b) => <BudgetBar spend={b.spend} reserved={b.reserved} max={b.max_budget} /> },
                { label: 'resets', get: (b) => when(b.budget_reset_at) },
              ]} rows={budgets.data?.budgets} rowKey={(b) => `${b.scope}:${b.id}`} empty="No budget with a cap." />
            </div>
          </div>
          <div class="grid3">
            <div class="card"><h2>Top keys</h2>
              <Table testid="top-keys" columns={[{ label: 'key', get: (k) => <span class="name">{text(k.key_alias ?? short(k.token))}</span> },
                { label: 'spend', class: 'num', get: (k) => money(k.spend) }]} rows={o.top_keys} empty="No spend." /></div>
            <div class="card"><h2>Top teams</h2>
              <Table testid="top-teams" columns={[{ label: 'team', get: (t) => <span class="name">{t.team_id === '' ? 'no team' : text(t.team_alias ?? t.team_id)}</span> },
                { label: 'spend', class: 'num', get: (t) => money(t.spend) }]} rows={o.top_teams} empty="No spend." /></div>
            <div class="card"><h2>Top models</h2>
              <Table testid="top-models" columns={[{ label: 'model', get: (m) => text(m.model) },
                { label: 'spend', class: 'num', get: (m) => money(m.spend) }]} rows={o.top_models} empty="No spend." /></div>
          </div>
          {who.role === 'master' && (
            <div class="card">
              <h2>Alerts</h2>
              <Table testid="alerts" columns={[
                { label: 'when', get: (a) => when(a.at_ms) }, { label: 'kind', get: (a) => text(a.kind) },
                { label: 'subject', get: (a) => text(a.subject) }, { label: 'message', get: (a) => text(a.message) },
                { label: 'repeats', class: 'num', get: (a) => num(a.repeats) },
              ]} rows={o.alerts} empty="No alerts raised." />
            </div>
          )}
        </>
      )}
    </section>
  );
}
