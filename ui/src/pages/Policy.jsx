// Policy: run `simulate` on a scenario against the live config (POST /tollgate/simulate) and
// show each request's decision path and cost; or run it on two configs and diff the decisions.
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Badge, ErrorBox, Table, useApi } from '../components.jsx';
import { Timeline, decisionOf } from '../timeline.jsx';
import { money, ms, num, text } from '../format.js';

function sampleScenario(group) {
  return `name: capacity incident
requests:
  - name: primary rate-limited twice
    model: ${group}
    max_tokens: 100
    upstream: {${group}: [rate_limit_exceeded, rate_limit_exceeded, ok]}
  - name: healthy
    model: ${group}
    max_tokens: 100
`;
}

/// One line per request: what was tried, in order (group/deployment:status).
export function pathOf(req) {
  const d = decisionOf(req.decision);
  const steps = d?.steps ?? [];
  return steps.map((s) => (s.step === 'attempt' ? `${s.deployment ?? s.group}:${s.status || 'none'}` : `${s.step}${s.group ? ` ${s.group}` : ''}`)).join(' → ') || '—';
}

function Problems({ error }) {
  if (!error) return null;
  return (
    <div class="error" role="alert" data-testid="sim-error">
      {error.message}
      {error.problems?.length > 0 && <ul>{error.problems.map((p, i) => <li key={i}>{text(p.source)} {text(p.path)}{p.line ? ` (line ${p.line})` : ''}: {text(p.message)}</li>)}</ul>}
    </div>
  );
}

function Report({ report }) {
  const [open, setOpen] = useState(0);
  const s = report.summary ?? {};
  return (
    <div data-testid="sim-report">
      <div class="stats">
        {[['requests', num(s.requests)], ['served', num(s.served)], ['degraded', num(s.degraded)], ['failed', num(s.failed)],
          ['attempts', num(s.attempts)], ['virtual time', ms(s.virtual_ms)], ['reserved', money(s.reserved)], ['charged', money(s.charged)]]
          .map(([k, v]) => <div class="stat" key={k}><div class="stat-label">{k}</div><div class="stat-value" data-testid={`sim-${k.replace(' ', '-')}`}>{v}</div></div>)}
      </div>
      <Table testid="sim-requests" rowKey={(q) => q.id} onRow={(q) => setOpen(report.requests.indexOf(q))} columns={[
        { label: 'request', get: (q) => <code>{text(q.id)}</code> },
        { label: 'name', get: (q) => text(q.name) },
        { label: 'model', get: (q) => text(q.model) },
        { label: 'status', get: (q) => <Badge kind={q.status < 300 ? 'good' : 'bad'}>{text(q.status)}</Badge> },
        { label: 'outcome', get: (q) => text(q.outcome) },
        { label: 'path', get: (q) => <span class="path" data-testid="sim-path">{pathOf(q)}</span> },
        { label: 'charged', class: 'num', get: (q) => money(q.charged) },
      ]} rows={report.requests} />
      {report.requests[open] && (
        <div class="card"><h2>Decision path of {text(report.requests[open].id)} {report.requests[open].name ? `(${report.requests[open].name})` : ''}</h2>
          <Timeline decision={report.requests[open].decision} /></div>
      )}
    </div>
  );
}

function Diff({ a, b }) {
  const n = Math.max(a.requests.length, b.requests.length);
  const rows = [];
  for (let i = 0; i < n; i++) {
    const x = a.requests[i];
    const y = b.requests[i];
    const pa = x ? pathOf(x) : '—';
    const pb = y ? pathOf(y) : '—';
    const same = x && y && pa === pb && x.status === y.status && x.charged === y.charged && x.outcome === y.outcome;
    rows.push({ i, x, y, pa, pb, same });
  }
  const changed = rows.filter((r) => !r.same).length;
  return (
    <div data-testid="sim-diff">
      <p><strong data-testid="diff-count">{changed}</strong> of {n} request{n === 1 ? '' : 's'} decided differently.</p>
      <Table rowKey={(r) => r.i} columns={[
        { label: 'request', get: (r) => text(r.x?.id ?? r.y?.id) },
        { label: 'A: status · path · charged', get: (r) => (r.x ? <span class={r.same ? '' : 'diff-a'}>{text(r.x.status)} · {r.pa} · {money(r.x.charged)}</span> : '—') },
        { label: 'B: status · path · charged', get: (r) => (r.y ? <span class={r.same ? '' : 'diff-b'}>{text(r.y.status)} · {r.pb} · {money(r.y.charged)}</span> : '—') },
        { label: '', get: (r) => (r.same ? <span class="muted">same</span> : <Badge kind="warn" data-testid="diff-changed">changed</Badge>) },
      ]} rows={rows} />
    </div>
  );
}

export function PolicyPage() {
  const routing = useApi('/tollgate/routing');
  const group = routing.data?.model_groups?.[0]?.model_name ?? 'gpt-4o';
  const [scenario, setScenario] = useState(null);
  const [configA, setConfigA] = useState('');
  const [configB, setConfigB] = useState('');
  const [mode, setMode] = useState('live');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [report, setReport] = useState(null);
  const [diff, setDiff] = useState(null);
  const sc = scenario ?? sampleScenario(group);

  const simulate = (config) => api('/tollgate/simulate', { body: config ? { scenario: sc, config } : { scenario: sc } });
  const run = async () => {
    setBusy(true); setError(null); setReport(null); setDiff(null);
    try {
      if (mode === 'live') setReport(await simulate());
      else {
        const [a, b] = await Promise.all([simulate(configA.trim() || undefined), simulate(configB)]);
        setDiff({ a, b });
      }
    } catch (e) { setError(e); } finally { setBusy(false); }
  };

  return (
    <section data-testid="page-policy">
      <h1>Policy</h1>
      <p class="muted">Replays scripted upstream outcomes through the real attempt loop with virtual time: nothing is sent, stored or charged (docs/simulate.md).</p>
      <div class="segmented" role="group" aria-label="mode">
        <button type="button" class={mode === 'live' ? 'on' : ''} onClick={() => setMode('live')} data-testid="mode-live">Simulate on the live config</button>
        <button type="button" class={mode === 'diff' ? 'on' : ''} onClick={() => setMode('diff')} data-testid="mode-diff">Diff two configs</button>
      </div>
      <div class={mode === 'diff' ? 'grid3' : ''}>
        <div class="field"><label for="scenario">scenario (YAML)</label>
          <textarea id="scenario" rows={12} value={sc} onInput={(e) => setScenario(e.currentTarget.value)} spellcheck={false} data-testid="scenario" /></div>
        {mode === 'diff' && <>
          <div class="field"><label for="config-a">config A (YAML; empty = the live config)</label>
            <textarea id="config-a" rows={12} value={configA} onInput={(e) => setConfigA(e.currentTarget.value)} spellcheck={false} data-testid="config-a" /></div>
          <div class="field"><label for="config-b">config B (YAML)</label>
            <textarea id="config-b" rows={12} value={configB} onInput={(e) => setConfigB(e.currentTarget.value)} spellcheck={false} data-testid="config-b" /></div>
        </>}
      </div>
      <div class="row"><button type="button" onClick={run} disabled={busy || (mode === 'diff' && !configB.trim())} data-testid="run-simulation">{busy ? 'Running…' : 'Run'}</button></div>
      <ErrorBox error={routing.error} />
      <Problems error={error} />
      {report && <Report report={report} />}
      {diff && <Diff a={diff.a} b={diff.b} />}
    </section>
  );
}
