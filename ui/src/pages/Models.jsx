// Models: groups and deployments with their price (unpriced flagged), live circuit states with
// the time left before a probe, recent failures, and the fallback graph.
import { useEffect, useState } from 'preact/hooks';
import { Badge, ErrorBox, Loading, Table, useApi } from '../components.jsx';
import { FallbackGraph } from '../graph.jsx';
import { num, text } from '../format.js';

const perMillion = (v) => (v === null || v === undefined ? null : `$${(Number(v) * 1e6).toFixed(Number(v) * 1e6 < 1 ? 4 : 2)}`);

function Price({ d }) {
  if (!d.priced) return <Badge kind="bad" title="no known price: refused where a budget attaches" data-testid="unpriced">unpriced</Badge>;
  if (d.free) return <Badge kind="good">free</Badge>;
  return <span>{perMillion(d.input_cost_per_token)} in · {perMillion(d.output_cost_per_token)} out <span class="muted">/ 1M tokens</span></span>;
}

/// A circuit state badge; `left` ms before the next probe when open.
function Circuit({ c, left }) {
  if (!c) return <span class="muted">—</span>;
  const kind = c.state === 'closed' ? 'good' : c.state === 'open' ? 'bad' : 'warn';
  const label = c.state === 'half_open' ? 'half-open' : c.state;
  return (
    <span data-testid="circuit" data-state={c.state}>
      <Badge kind={kind}>{label}</Badge>
      {c.state === 'open' && <span class="muted" data-testid="circuit-left"> probe in {(Math.max(0, left) / 1000).toFixed(1)} s</span>}
      {c.reason ? <span class="muted"> · {text(c.reason)}</span> : null}
    </span>
  );
}

export function ModelsPage() {
  const routing = useApi('/tollgate/routing', { poll: 1000 });
  const circuits = useApi('/tollgate/circuits', { poll: 1000 });
  const [now, setNow] = useState(Date.now());
  const [fetchedAt, setFetchedAt] = useState(Date.now());
  useEffect(() => { setFetchedAt(Date.now()); }, [routing.data]);
  useEffect(() => { const t = setInterval(() => setNow(Date.now()), 200); return () => clearInterval(t); }, []);

  const r = routing.data;
  const health = Object.fromEntries((circuits.data?.deployments ?? []).map((c) => [c.id, c]));
  const groups = (r?.model_groups ?? []).map((g) => {
    const states = g.deployments.map((d) => d.circuit?.state ?? 'closed');
    const state = states.length && states.every((s) => s === 'open') ? 'open' : states.some((s) => s !== 'closed') ? 'degraded' : 'closed';
    return { model_name: g.model_name, state };
  });
  const providers = (circuits.data?.providers ?? []).filter((c) => c.state !== 'closed' || c.opened_total > 0);

  return (
    <section data-testid="page-models">
      <h1>Models</h1>
      <ErrorBox error={routing.error} what="Routing" />
      {!r ? (!routing.error && <Loading />) : (
        <>
          {r.model_groups.length === 0 && <div class="empty">No model groups configured.</div>}
          {r.model_groups.map((g) => (
            <div class="card" key={g.model_name} data-testid="model-group" data-name={g.model_name}>
              <h2>{g.model_name} <span class="muted">· {g.deployments.length} deployment{g.deployments.length === 1 ? '' : 's'}</span></h2>
              <Table columns={[
                { label: 'deployment', get: (d) => <code>{text(d.id)}</code> },
                { label: 'provider', get: (d) => text(d.provider) },
                { label: 'upstream model', get: (d) => text(d.model) },
                { label: 'api base', get: (d) => <span class="muted">{text(d.api_base ?? 'provider default')}</span> },
                { label: 'price', get: (d) => <Price d={d} /> },
                { label: 'circuit', get: (d) => <Circuit c={d.circuit} left={(d.circuit?.retry_in_ms ?? 0) - (now - fetchedAt)} /> },
                { label: 'recent', get: (d) => { const h = health[d.id]; return h ? `${num(h.window_failures)} / ${num(h.window_requests)} failed · ${num(h.opened_total)} opened` : '—'; } },
              ]} rows={g.deployments} rowKey={(d) => d.id} />
            </div>
          ))}
          {providers.length > 0 && (
            <div class="card"><h2>Provider circuits</h2>
              <Table columns={[{ label: 'provider', get: (c) => text(c.id) }, { label: 'state', get: (c) => <Circuit c={c} left={c.retry_in_ms} /> },
                { label: 'opened', class: 'num', get: (c) => num(c.opened_total) }]} rows={providers} rowKey={(c) => c.id} /></div>
          )}
          <div class="card">
            <h2>Fallback chains</h2>
            <p class="muted">Each arrow is one entry of a fallback list (its label: the list, the position, and the failure classes that send a request along it) or a degradation mode answering with another group (dashed orange: the mode and the classes that may end in it).</p>
            {r.fallbacks.length === 0 ? <div class="empty" data-testid="no-fallbacks">No fallbacks configured.</div>
              : <div class="graph-wrap"><FallbackGraph groups={groups} edges={r.fallbacks} /></div>}
          </div>
        </>
      )}
    </section>
  );
}
