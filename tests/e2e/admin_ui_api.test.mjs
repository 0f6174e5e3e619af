// The admin UI's server side (issue 15; docs/admin_api.md "Admin UI endpoints"): whoami,
// read-only access of virtual keys to their own data, the spend log filters, the overview, the
// budgets, the routing view and the simulator behind POST /tollgate/simulate — against a real
// gateway and the simulator upstream, with the edge cases (bad params, a key reading another key
// or writing, broken YAML, huge ranges, pasted configs that name files or secrets).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, openaiDeployment, waitFor, MASTER_KEY } from './harness.mjs';
import { hi, chat, paidDeployment } from './budget_helpers.mjs';

const state = useMock();
const TOLLGATE_BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');

function config(mock, extra = {}) {
  return gatewayConfig({
    model_list: [
      paidDeployment(mock, 'paid', 'paid-up', { id: 'paid-1' }),
      openaiDeployment(mock, 'flaky', 'flaky-up', {
        id: 'flaky-1', input_cost_per_token: '0.000001', output_cost_per_token: '0.000002',
      }),
      openaiDeployment(mock, 'unpriced', 'some-unpriced-model-xyz', { id: 'unpriced-1' }),
      // Never called: its api_base carries credentials that /tollgate/routing must not show.
      openaiDeployment(mock, 'secretive', 'x', { id: 'secretive-1', api_base: 'http://u:USERSECRET@127.0.0.1:9/v1?api-key=QUERYSECRET#frag' }),
    ],
    litellm_settings: { fallbacks: [{ flaky: ['paid'] }], context_window_fallbacks: [{ paid: ['flaky'] }] },
    router_settings: { allowed_fails: 2, cooldown_time: 60 },
    general_settings: { block_unpriced_models: false },
    ...extra,
  });
}

const get = (gw, p, auth = true) => gw.fetch(p, { method: 'GET', auth });
/// Polls the spend log until `n` rows are there (rows are written off the request path).
const rowsOf = (gw, n, query = '') =>
  waitFor(async () => {
    const r = await get(gw, `/spend/logs${query}`);
    return r.status === 200 && r.json.length >= n ? r.json : null;
  }, { what: `${n} spend log rows` });

e2e('whoami: master key, a virtual key, a blocked key; 401 without a key or with an unknown one', async (ctx) => {
  const gw = await ctx.gateway(config(state.mock));
  const m = await get(gw, '/tollgate/whoami');
  assert.equal(m.status, 200, m.text);
  assert.deepEqual(m.json, { role: 'master', token: null, key_alias: null, team_id: null, user_id: null, models: [], blocked: false });
  await gw.admin('/team/new', { team_id: 'team-ui' });
  const k = await gw.generateKey({ key_alias: 'ui-key', team_id: 'team-ui', models: ['paid'] });
  const w = await get(gw, '/tollgate/whoami', k.key);
  assert.equal(w.status, 200, w.text);
  assert.deepEqual(w.json, { role: 'key', token: k.token, key_alias: 'ui-key', team_id: 'team-ui', user_id: null, models: ['paid'], blocked: false });
  await gw.admin('/key/block', { key: k.key });
  const b = await get(gw, '/tollgate/whoami', k.key);
  assert.equal(b.status, 200, b.text);
  assert.equal(b.json.blocked, true);
  assert.equal((await get(gw, '/key/info', k.key)).status, 401, 'a blocked key reads nothing else');
  const none = await get(gw, '/tollgate/whoami', false);
  assert.equal(none.status, 401);
  assert.match(none.json.error.message, /No api key passed in/);
  assert.equal((await get(gw, '/tollgate/whoami', 'sk-not-a-known-key-at-all')).status, 401);
  assert.equal((await gw.fetch('/tollgate/whoami', { body: {} })).status, 405);
});

e2e('a virtual key reads its own key and spend logs; another key, a write or any other admin path is 403', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const a = await gw.generateKey({ key_alias: 'reader-a' });
  const b = await gw.generateKey({ key_alias: 'reader-b' });
  assert.equal((await chat(gw, a.key, hi('paid'))).status, 200);
  assert.equal((await chat(gw, b.key, hi('paid'))).status, 200);
  await rowsOf(gw, 2);

  const own = await get(gw, '/key/info', a.key);
  assert.equal(own.status, 200, own.text);
  assert.equal(own.json.info.key_alias, 'reader-a');
  assert.equal((await get(gw, `/key/info?key=${a.token}`, a.key)).status, 200);
  const other = await get(gw, `/key/info?key=${encodeURIComponent(b.key)}`, a.key);
  assert.equal(other.status, 403, other.text);
  assert.equal(other.json.error.param, 'key');
  assert.equal((await get(gw, `/key/info?key=${b.token}`, a.key)).status, 403);

  // Forced to its own rows, whatever it asks.
  for (const q of ['', `?api_key=${b.token}`, `?api_key=${encodeURIComponent(b.key)}`]) {
    const logs = await get(gw, `/spend/logs${q}`, a.key);
    assert.equal(logs.status, 200, logs.text);
    assert.equal(logs.json.length, 1, q);
    assert.equal(logs.json[0].api_key, a.token, q);
  }
  // The master key still sees everything, LiteLLM's way.
  assert.equal((await get(gw, '/spend/logs')).json.length, 2);

  for (const p of ['/key/list', '/spend/keys', '/global/spend', '/team/list', '/tollgate/routing', '/tollgate/circuits',
                   '/tollgate/alerts', '/global/spend/report?start_date=2020-01-01&end_date=2020-01-02']) {
    const r = await get(gw, p, a.key);
    assert.equal(r.status, 403, `${p}: ${r.text}`);
    assert.equal(r.json.error.message, 'the master key is required', p);
    assert.equal((await get(gw, p, false)).status, 401, p);
  }
  for (const [p, body] of [['/key/generate', { key_alias: 'mine' }], ['/key/block', { key: b.key }],
                           ['/key/update', { key: a.key, max_budget: 100 }], ['/key/delete', { keys: [b.key] }],
                           ['/tollgate/simulate', { scenario: 'requests: []' }]]) {
    const r = await gw.fetch(p, { auth: a.key, body });
    assert.equal(r.status, 403, `${p}: ${r.text}`);
  }
  assert.equal((await gw.keyInfo(b.key)).blocked, false, 'nothing was written');
});

e2e('spend logs: model, status, degradation and offset filters in the query; bad values are 400 naming them', async (ctx) => {
  const { mock } = state;
  // unpriced degrades to paid (mode equivalent) when its upstream fails.
  const gw = await ctx.gateway(config(mock, {
    fallback_policy: { model_groups: { unpriced: { degradation: { mode: 'equivalent', model: 'paid' } } } },
  }));
  await mock.script('paid-up', [{}]);
  for (let i = 0; i < 3; i++) assert.equal((await chat(gw, undefined, hi('paid'))).status, 200);
  await mock.script('flaky-up', [{ error: 'invalid_request' }]);  // a caller error: no fallback
  const bad = await chat(gw, undefined, hi('flaky'));
  assert.equal(bad.status, 400, bad.text);
  await mock.script('some-unpriced-model-xyz', [{ error: 'server_error' }]);
  const degraded = await chat(gw, undefined, hi('unpriced'));
  assert.equal(degraded.status, 200, degraded.text);
  const all = await rowsOf(gw, 5);
  assert.equal(all.length, 5);

  const q = async (s) => {
    const r = await get(gw, `/spend/logs?${s}`);
    assert.equal(r.status, 200, `${s}: ${r.text}`);
    return r.json;
  };
  // model matches model_group, requested_model or the served model: the degraded call asked for
  // unpriced and was answered by the paid group.
  const asked = await q('model=unpriced');
  assert.equal(asked.length, 1);
  assert.equal(asked[0].requested_model, 'unpriced');
  assert.equal((await q('model=paid')).length, asked[0].model_group === 'paid' ? 4 : 3, JSON.stringify(asked[0]));
  assert.equal((await q('model=flaky')).length, 1);
  const failed = await q('status=failure');
  assert.equal(failed.length, 1);
  assert.equal(failed[0].model_group, 'flaky');
  assert.equal((await q('status=success')).length, 4);
  assert.equal((await q('degradation=none')).length, 4);
  const anyDegraded = await q('degradation=any');
  assert.equal(anyDegraded.length, 1);
  assert.equal(anyDegraded[0].degradation, 'equivalent');
  assert.equal((await q('degradation=equivalent')).length, 1);
  assert.equal((await q('degradation=reduced')).length, 0);
  assert.equal((await q('model=unpriced&degradation=none')).length, 0);
  // The served model matches too: paid-up served the three paid calls and the degraded one.
  assert.equal((await q('model=paid-up')).length, 4);
  // Pages through the newest-first order without overlap.
  const p1 = await q('limit=2&offset=0'), p2 = await q('limit=2&offset=2'), p3 = await q('limit=2&offset=4');
  assert.deepEqual([...p1, ...p2, ...p3].map((r) => r.request_id), all.map((r) => r.request_id));
  assert.equal(p3.length, 1);
  assert.equal((await q('limit=2&offset=6')).length, 0);
  assert.equal((await q('model=paid&status=success&limit=1&offset=2')).length, 1);

  for (const [s, param] of [['status=ok', 'status'], ['degradation=partial', 'degradation'], ['offset=-1', 'offset'],
                            ['offset=abc', 'offset'], ['limit=0', 'limit'], ['start_date=yesterday', 'start_date'],
                            ['start_date=2026-01-02&end_date=2026-01-01T00:00:00Z', 'end_date']]) {
    const r = await get(gw, `/spend/logs?${s}`);
    assert.equal(r.status, 400, `${s}: ${r.text}`);
    assert.equal(r.json.error.param, param, s);
  }
});

e2e('overview: spend, a continuous series, per group, top lists; a virtual key sees only its rows; bounds', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await gw.admin('/team/new', { team_id: 'team-o', team_alias: 'Overview <b>team</b>' });
  const a = await gw.generateKey({ key_alias: 'ov-a', team_id: 'team-o' });
  const b = await gw.generateKey({ key_alias: 'ov-b' });
  for (let i = 0; i < 2; i++) assert.equal((await chat(gw, a.key, hi('paid'))).status, 200);
  assert.equal((await chat(gw, b.key, hi('paid'))).status, 200);
  await mock.script('flaky-up', [{ error: 'invalid_request' }]);
  assert.equal((await chat(gw, b.key, hi('flaky'))).status, 400);
  await rowsOf(gw, 4);

  const r = await get(gw, '/tollgate/overview');
  assert.equal(r.status, 200, r.text);
  const o = r.json;
  assert.equal(o.bucket, 'hour');
  assert.ok(o.series.length === 24 || o.series.length === 25, `24 h of hours: ${o.series.length}`);
  for (let i = 1; i < o.series.length; i++) {
    assert.equal(Date.parse(o.series[i].t) - Date.parse(o.series[i - 1].t), 3600e3, 'continuous axis');
  }
  const requests = o.series.reduce((n, s) => n + s.requests, 0);
  const errors = o.series.reduce((n, s) => n + s.errors, 0);
  assert.equal(requests, 4);
  assert.equal(errors, 1);
  assert.ok(o.spend.range > 0 && o.spend.today > 0 && o.spend.month >= o.spend.today, JSON.stringify(o.spend));
  const rangeNanos = Math.round(o.spend.range * 1e9);
  const seriesNanos = o.series.reduce((n, s) => n + Math.round(s.spend * 1e9), 0);
  assert.equal(seriesNanos, rangeNanos, 'the series adds up to the range');
  const flaky = o.by_model_group.find((g) => g.model_group === 'flaky');
  assert.deepEqual({ requests: flaky.requests, errors: flaky.errors, error_rate: flaky.error_rate }, { requests: 1, errors: 1, error_rate: 1 });
  assert.equal(o.by_model_group[0].model_group, 'paid', 'most requests first');
  assert.equal(o.top_keys[0].key_alias, 'ov-a');
  assert.equal(o.top_keys[0].token, a.token);
  assert.ok(o.top_teams.some((t) => t.team_id === 'team-o' && t.team_alias === 'Overview <b>team</b>'));
  assert.equal(o.top_models[0].model, 'paid-up');
  assert.ok(Array.isArray(o.alerts));

  const mine = (await get(gw, '/tollgate/overview?bucket=day', b.key)).json;
  assert.equal(mine.series.reduce((n, s) => n + s.requests, 0), 2, 'its own rows only');
  assert.deepEqual(mine.top_keys.map((k) => k.token), [b.token]);
  assert.deepEqual(mine.alerts, []);
  assert.ok(mine.series.length >= 1 && mine.series.length <= 2);

  for (const [s, param] of [['bucket=week', 'bucket'], ['start_date=2000-01-01&end_date=2026-01-01', 'bucket'],
                            ['start_date=1970-01-01T00:00:00Z&bucket=hour', 'bucket'], ['end_date=soon', 'end_date'],
                            ['start_date=2026-02-01&end_date=2026-01-01', 'end_date']]) {
    const bad = await get(gw, `/tollgate/overview?${s}`);
    assert.equal(bad.status, 400, `${s}: ${bad.text}`);
    assert.equal(bad.json.error.param, param, s);
  }
  const days = await get(gw, '/tollgate/overview?start_date=2026-01-01&end_date=2026-01-31&bucket=day');
  assert.equal(days.status, 200, days.text);
  assert.equal(days.json.series.length, 31);
  assert.equal(days.json.series[0].t, '2026-01-01T00:00:00.000Z');
});

e2e('budgets: every enforced budget with spend and reservations from the ledger, most used first; a key sees its own', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock, { litellm_settings: { max_budget: 1000, budget_duration: '30d' } }));
  await gw.admin('/team/new', { team_id: 'team-b', team_alias: 'Budget team', max_budget: 50 });
  const tight = await gw.generateKey({ key_alias: 'tight', max_budget: 0.001, team_id: 'team-b', budget_duration: '1d' });
  const loose = await gw.generateKey({ key_alias: 'loose', max_budget: 100, model_max_budget: { paid: { max_budget: 5 } } });
  await gw.generateKey({ key_alias: 'untracked' });
  assert.equal((await chat(gw, tight.key, hi('paid'))).status, 200);

  const r = await waitFor(async () => {
    const x = await get(gw, '/tollgate/budgets');
    const k = x.json?.budgets?.find((b) => b.scope === 'key' && b.id === tight.token);
    return k && k.spend > 0 ? x : null;
  }, { what: 'the tight key charged' });
  const list = r.json.budgets;
  const key = list.find((b) => b.scope === 'key' && b.id === tight.token);
  assert.equal(key.name, 'tight');
  assert.equal(key.max_budget, 0.001);
  assert.equal(key.reserved, 0);
  assert.equal(key.budget_duration, '1d');
  assert.match(key.budget_reset_at, /^\d{4}-\d\d-\d\dT00:00:00\.000Z$/);
  assert.ok(Math.abs(key.used_ratio - key.spend / key.max_budget) < 1e-9);
  assert.equal(list[0].id, tight.token, 'the most used first');
  for (let i = 1; i < list.length; i++) assert.ok(list[i - 1].used_ratio >= list[i].used_ratio);
  assert.ok(list.some((b) => b.scope === 'team' && b.id === 'team-b' && b.name === 'Budget team' && b.spend === key.spend));
  assert.ok(list.some((b) => b.scope === 'global' && b.id === 'global' && b.budget_duration === '1mo'), JSON.stringify(list));  // 30d is a calendar month (LiteLLM)
  assert.ok(list.some((b) => b.scope === 'key_model' && b.id === `${loose.token}/paid` && b.max_budget === 5));
  assert.ok(!list.some((b) => b.name === 'untracked'), 'a key without a budget has none to list');
  for (const b of list) {
    assert.deepEqual(Object.keys(b).sort(),
      ['budget_duration', 'budget_reset_at', 'id', 'max_budget', 'name', 'reserved', 'scope', 'spend', 'used_ratio']);
  }
  assert.equal((await get(gw, '/tollgate/budgets?limit=2')).json.budgets.length, 2);
  assert.equal((await get(gw, '/tollgate/budgets?limit=0')).json.error.param, 'limit');
  assert.equal((await get(gw, '/tollgate/budgets?limit=10001')).status, 400);

  // Money held by a request in flight shows as reserved, apart from spend, and leaves on settlement.
  await mock.script('paid-up', [{ latency_ms: 1500 }]);
  const inFlight = chat(gw, loose.key, hi('paid'));
  const held = await waitFor(async () => {
    const x = await get(gw, '/tollgate/budgets');
    const k = x.json.budgets.find((b) => b.scope === 'key' && b.id === loose.token);
    return k.reserved > 0 ? k : null;
  }, { what: 'a reservation in flight', intervalMs: 50 });
  assert.equal(held.spend, 0);
  assert.ok(Math.abs(held.used_ratio - held.reserved / held.max_budget) < 1e-9);
  assert.equal((await inFlight).status, 200);
  const settled = await waitFor(async () => {
    const x = await get(gw, '/tollgate/budgets');
    const k = x.json.budgets.find((b) => b.scope === 'key' && b.id === loose.token);
    return k.reserved === 0 && k.spend > 0 ? k : null;
  }, { what: 'the settlement' });
  assert.ok(settled.spend < held.reserved, 'charged the actual cost, below the worst case');

  const mine = await get(gw, '/tollgate/budgets', tight.key);
  assert.equal(mine.status, 200, mine.text);
  assert.deepEqual(mine.json.budgets.map((b) => b.scope).sort(), ['global', 'key', 'team']);
  const theirs = await get(gw, '/tollgate/budgets', loose.key);
  assert.deepEqual(theirs.json.budgets.map((b) => b.scope).sort(), ['global', 'key', 'key_model']);
});

e2e('routing: groups, deployments with price and live circuit, fallback edges with classes; no secret', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('flaky-up', [{ error: 'server_error' }]);
  // Each request fails on flaky and is served by its fallback, until flaky's circuit opens.
  const r = await waitFor(async () => {
    assert.equal((await chat(gw, undefined, hi('flaky'))).status, 200);
    const x = await get(gw, '/tollgate/routing');
    const d = x.json?.model_groups?.find((g) => g.model_name === 'flaky')?.deployments[0];
    return d?.circuit.state === 'open' ? x : null;
  }, { what: 'flaky open', intervalMs: 50 });
  assert.equal(r.status, 200);
  for (const secret of ['QUERYSECRET', 'USERSECRET', 'sk-mock-upstream-key', 'frag']) assert.ok(!r.text.includes(secret), secret);
  // The gateway logs its own circuit transitions (a simulation's must not appear: below).
  await waitFor(() => gw.proc.stderr.includes('circuit deployment flaky-1: closed -> open'), { what: 'the transition logged' });
  const groups = Object.fromEntries(r.json.model_groups.map((g) => [g.model_name, g.deployments]));
  assert.deepEqual(Object.keys(groups), ['paid', 'flaky', 'unpriced', 'secretive']);
  assert.equal(groups.secretive[0].api_base, 'http://127.0.0.1:9/v1');
  const [flaky] = groups.flaky;
  assert.equal(flaky.api_base, `${mock.url}/v1`);
  assert.equal(flaky.circuit.state, 'open');
  assert.ok(flaky.circuit.retry_in_ms > 0 && flaky.circuit.reason.length > 0, JSON.stringify(flaky.circuit));
  assert.deepEqual({ id: groups.paid[0].id, provider: groups.paid[0].provider, model: groups.paid[0].model, priced: groups.paid[0].priced, free: groups.paid[0].free },
    { id: 'paid-1', provider: 'openai', model: 'paid-up', priced: true, free: false });
  assert.equal(groups.paid[0].input_cost_per_token, 0.000001);
  assert.equal(groups.paid[0].output_cost_per_token, 0.000002);
  assert.equal(groups.paid[0].circuit.state, 'closed');
  assert.deepEqual([groups.unpriced[0].priced, groups.unpriced[0].input_cost_per_token], [false, null]);
  const edge = r.json.fallbacks.find((e) => e.from === 'flaky' && e.to === 'paid');
  assert.equal(edge.kind, 'fallbacks');
  assert.equal(edge.order, 0);
  assert.ok(edge.classes.includes('retryable_capacity') && edge.classes.includes('transient_provider_error'));
  assert.ok(!edge.classes.includes('caller_fix_required') && !edge.classes.includes('commercial_limit'));
  const ctxEdge = r.json.fallbacks.find((e) => e.from === 'paid' && e.to === 'flaky');
  assert.deepEqual(ctxEdge, { from: 'paid', to: 'flaky', kind: 'context_window_fallbacks', classes: ['context_overflow'], order: 0, mode: null });
});

const SCENARIO = `name: ui scenario
requests:
  - name: flaky fails over
    model: flaky
    max_tokens: 50
    upstream:
      flaky-1: [{error: server_error}]
  - model: paid
    max_tokens: 20
    repeat: 2
`;

e2e('simulate: the live config by default, exactly what `tollgate simulate --json` prints', async (ctx) => {
  const gw = await ctx.gateway(config(state.mock));
  const r = await gw.fetch('/tollgate/simulate', { body: { scenario: SCENARIO } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.summary.requests, 3);
  assert.equal(r.json.requests[0].served_by, 'paid/paid-1');
  assert.ok(r.json.requests[0].decision.steps.length > 0);
  assert.equal(r.json.config, gw.configPath);

  // The CLI over the same texts: the same JSON (the scenario's path aside).
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tg-ui-sim-'));
  try {
    const scenario = path.join(dir, 'scenario.yaml');
    writeFileSync(scenario, SCENARIO);
    const cli = spawnSync(TOLLGATE_BIN, ['simulate', '--config', gw.configPath, '--scenario', scenario, '--json'], { encoding: 'utf8' });
    assert.equal(cli.status, 0, cli.stderr);
    const printed = JSON.parse(cli.stdout);
    assert.equal(printed.scenario.path, scenario);
    assert.equal(r.json.scenario.path, '<scenario>');
    printed.scenario.path = r.json.scenario.path;
    assert.deepEqual(r.json, printed);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // Ids the admin API generates on the same thread do not repeat after a simulation (the run
  // reseeds the thread's generator for determinism, and gives it back).
  const teams = [];
  for (let i = 0; i < 2; i++) {
    assert.equal((await gw.fetch('/tollgate/simulate', { body: { scenario: SCENARIO } })).status, 200);
    const t = await gw.fetch('/team/new', { body: {} });
    assert.equal(t.status, 200, t.text);
    teams.push(t.json.team_id);
  }
  assert.notEqual(teams[0], teams[1]);
  // A simulation that opens a circuit: the gateway's log does not show the simulated transition.
  const opening = `requests:
  - model: flaky
    max_tokens: 10
    repeat: 4
    upstream:
      flaky-1: [{error: server_error, times: 4}]
`;
  const sim = await gw.fetch('/tollgate/simulate', { body: { scenario: opening } });
  assert.equal(sim.status, 200, sim.text);
  assert.ok(sim.json.circuits.some((c) => c.id === 'flaky-1' && c.state === 'open'), JSON.stringify(sim.json.circuits));
  assert.ok(!gw.proc.stderr.includes('circuit deployment flaky-1'), gw.proc.stderr);
  // The gateway's own circuits and spend were not touched by the simulation.
  const routing = await gw.admin('/tollgate/routing');
  assert.equal(routing.model_groups.find((g) => g.model_name === 'flaky').deployments[0].circuit.state, 'closed');
  assert.equal((await gw.admin('/spend/logs')).length, 0);
});

e2e('simulate: a pasted config; broken YAML and bad scenarios are 400 with their paths; files, secrets and size bounded', async (ctx) => {
  const gw = await ctx.gateway(config(state.mock));
  const pasted = `model_list:
  - model_name: g
    litellm_params: {model: openai/gpt-4o, api_key: os.environ/HOME, input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
    model_info: {id: g-1}
`;
  const ok = await gw.fetch('/tollgate/simulate', { body: { scenario: 'requests:\n  - model: g\n', config: pasted } });
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.json.config, '<pasted config>');
  assert.equal(ok.json.summary.served, 1);
  for (const secret of [process.env.HOME].filter((s) => s && s.length > 3)) {
    assert.ok(!ok.text.includes(secret), 'the server environment is never read');
  }

  const cases = [
    [{ scenario: 'requests: [\n' }, 'scenario', 'invalid_scenario'],
    [{ scenario: 'requests:\n  - model: nope\n' }, 'scenario', 'invalid_scenario'],
    [{ scenario: 'requests:\n  - model: paid\n    upstream: {paid: [{error: no_such_error}]}\n' }, 'scenario', 'invalid_scenario'],
    [{ scenario: 'requests:\n  - model: g\n', config: 'model_list: [\n' }, 'config', 'invalid_config'],
    [{ scenario: 'requests:\n  - model: g\n', config: pasted + 'router_settings: {num_retries: many}\n' }, 'config', 'invalid_config'],
    [{ scenario: 'requests:\n  - model: g\n', config: pasted + 'tollgate_settings: {price_file: /etc/passwd}\n' }, 'config', 'invalid_config'],
    [{ scenario: 'requests:\n  - model: v\n', config: `model_list:
  - model_name: v
    litellm_params: {model: vertex_ai/gemini-pro, vertex_credentials: /etc/shadow, vertex_project: p}
` }, 'config', 'invalid_config'],
    [{ scenario: 'requests:\n  - model: paid\n    repeat: 1001\n' }, 'scenario', 'invalid_scenario'],
  ];
  for (const [body, param, code] of cases) {
    const r = await gw.fetch('/tollgate/simulate', { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.json.error.param, param, r.text);
    assert.equal(r.json.error.code, code, r.text);
    assert.ok(Array.isArray(r.json.problems) && r.json.problems.length > 0, r.text);
    for (const p of r.json.problems) assert.deepEqual(Object.keys(p).sort(), ['line', 'message', 'path', 'source']);
    assert.ok(!r.text.includes('root:'), 'no file content');
  }
  const typo = await gw.fetch('/tollgate/simulate', { body: { scenario: 'requests:\n  - model: paid\n    upstream: {paid: [{error: no_such_error}]}\n' } });
  assert.match(typo.json.problems[0].path, /^requests\[0\]\.upstream\.paid\[0\]/);
  const price = await gw.fetch('/tollgate/simulate', { body: { scenario: 'requests:\n  - model: g\n', config: pasted + 'tollgate_settings: {price_file: /etc/passwd}\n' } });
  assert.equal(price.json.problems[0].path, 'tollgate_settings.price_file');

  for (const [body, param] of [[{}, 'scenario'], [{ scenario: 3 }, 'scenario'], [{ scenario: 'requests: []', config: 1 }, 'config'],
                               [{ scenario: 'requests: []', extra: true }, 'extra']]) {
    const r = await gw.fetch('/tollgate/simulate', { body });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.param, param);
  }
  const huge = await gw.fetch('/tollgate/simulate', { body: { scenario: `# ${'x'.repeat(1024 * 1024)}\nrequests: []\n` } });
  assert.equal(huge.status, 413, huge.text.slice(0, 300));
  assert.equal((await gw.fetch('/tollgate/simulate', { method: 'GET' })).status, 405);
  assert.equal((await gw.fetch('/tollgate/simulate', { body: { scenario: 'requests: []' }, auth: false })).status, 401);
});

// Leave no master key in the report of a failing assertion.
void MASTER_KEY;
