// Issue 12 item 4: LiteLLM's GET /health (docs.litellm.ai/docs/proxy/health). Each deployment
// gets a cheap call (one message, max_tokens 1) through the one attempt loop pinned to it: the
// answer sorts deployments into healthy_endpoints / unhealthy_endpoints in LiteLLM's shape; the
// calls are admitted (a global budget refuses them with nothing sent), settled and spend-logged
// as call_type "health_check", so their recorded spend equals the simulator's bill; a timeout
// bounds each call; background_health_checks runs rounds on a timer whose outcomes open (and,
// once the deployment answers again, close) its circuit.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, openaiDeployment, waitFor, circuitOf, UPSTREAM_KEY, MASTER_KEY } from './harness.mjs';
import { IN_PRICE, OUT_PRICE, nanos, billNanos, mockBillNanos, unknownCharges } from './budget_helpers.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: OUT_PRICE };
const priced = (extra = {}) => ({ input_cost_per_token: IN_PRICE, output_cost_per_token: OUT_PRICE, ...extra });

/// The spend-log rows of the health checks (call_type health_check), once `n` are written.
async function healthRows(gw, n) {
  return waitFor(async () => {
    const rows = (await gw.admin('/spend/logs?limit=1000')).filter((r) => r.call_type === 'health_check');
    return rows.length >= n ? rows : null;
  }, { what: `${n} health_check spend-log rows` });
}
/// The deployment a health check row is about (a failed run has no model_id: its attempt names it).
const depOf = (r) => r.model_id || (r.decision?.steps ?? []).find((x) => x.step === 'attempt')?.deployment;
const spentOf = (rows) => rows.reduce((a, r) => a + nanos(r.spend), 0);

e2e('GET /health: one healthy and one unhealthy deployment in LiteLLM\'s shape, no secrets, spend == the bill, ?model= limits it', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'hc', 'hc-ok', { id: 'hc-ok', ...priced() }),
      openaiDeployment(mock, 'hc', 'hc-bad', { id: 'hc-bad', ...priced() }),
      openaiDeployment(mock, 'other', 'hc-other', { id: 'hc-other', ...priced() }),
      { ...openaiDeployment(mock, 'emb', 'hc-emb', { id: 'hc-emb', ...priced() }), model_info: { id: 'hc-emb', mode: 'embedding' } },
    ],
  }));
  await mock.script('hc-bad', [{ error: 'server_error' }]);
  // Not the master key: refused before anything is sent.
  const anon = await gw.fetch('/health', { method: 'GET', auth: false });
  assert.equal(anon.status, 401, anon.text);
  const k = await gw.generateKey({});
  const virt = await gw.fetch('/health', { method: 'GET', auth: k.key });
  assert.equal(virt.status, 401, virt.text);
  assert.equal((await mock.stats()).requests_total, 0);

  const r = await gw.fetch('/health?model=hc', { method: 'GET' });
  assert.equal(r.status, 200, r.text);
  const h = r.json;
  assert.equal(h.healthy_count, 1);
  assert.equal(h.unhealthy_count, 1);
  assert.deepEqual(h.healthy_endpoints.map((e) => e.model_id), ['hc-ok']);
  assert.equal(h.healthy_endpoints[0].model, 'openai/hc-ok');
  assert.equal(h.healthy_endpoints[0].api_base, `${mock.url}/v1`);
  assert.deepEqual(h.unhealthy_endpoints.map((e) => e.model_id), ['hc-bad']);
  assert.match(h.unhealthy_endpoints[0].error, /server|500|error/i);
  assert.ok(!r.text.includes(UPSTREAM_KEY) && !r.text.includes(MASTER_KEY), 'no secret in /health');
  // One cheap call each, max_tokens 1; the other group and the embedding deployment untouched.
  const s = await mock.stats();
  assert.equal(s.models['hc-ok'].requests, 1);
  assert.equal(s.models['hc-bad'].requests, 1);
  assert.equal(s.models['hc-other'], undefined);
  const okBill = s.bills.filter((b) => b.model === 'hc-ok');
  assert.equal(okBill.length, 1);
  assert.equal(okBill[0].completion_tokens, 1);
  // Money: the health calls are recorded, and their spend is the provider's bill.
  const rows = await healthRows(gw, 2);
  assert.deepEqual(rows.map(depOf).sort(), ['hc-bad', 'hc-ok']);
  const bill = (await mockBillNanos(mock, 'hc-ok', PRICES)) + (await mockBillNanos(mock, 'hc-bad', PRICES));
  assert.ok(bill > 0);
  assert.equal(spentOf(rows), bill);
  assert.equal(nanos(rows.find((x) => depOf(x) === 'hc-bad').spend), 0, 'an unbilled 500 costs 0');

  // Without ?model=: every group; the embedding deployment is listed as skipped, never called.
  const all = await gw.fetch('/health', { method: 'GET' });
  assert.equal(all.status, 200, all.text);
  assert.equal(all.json.healthy_count, 2);
  assert.deepEqual(all.json.healthy_endpoints.map((e) => e.model_id).sort(), ['hc-ok', 'hc-other']);
  assert.deepEqual(all.json.skipped_endpoints.map((e) => e.model_id), ['hc-emb']);
  assert.equal((await mock.stats()).models['hc-emb'], undefined);
  const rows2 = await healthRows(gw, 5);
  const bill2 = (await mockBillNanos(mock, 'hc-ok', PRICES)) + (await mockBillNanos(mock, 'hc-other', PRICES));
  assert.equal(spentOf(rows2), bill2);
  const unknown = await gw.fetch('/health?model=nope', { method: 'GET' });
  assert.equal(unknown.status, 400, unknown.text);
});

e2e('GET /health: health calls are admitted: past the global budget they are refused with nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'hc', 'hc-ok', { id: 'hc-ok', ...priced() })],
    litellm_settings: { max_budget: 0.0000001 },  // $1e-7: the call's worst case does not fit
  }));
  const r = await gw.fetch('/health', { method: 'GET' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.unhealthy_count, 1);
  assert.match(r.json.unhealthy_endpoints[0].error, /budget/i);
  assert.equal((await mock.stats()).requests_total, 0, 'nothing was sent');
  const rows = await healthRows(gw, 1);
  assert.equal(spentOf(rows), 0);
});

e2e('GET /health: model_info.health_check_timeout bounds a slow deployment; it is charged its reservation (unknown), never more', async (ctx) => {
  const { mock } = state;
  const slow = openaiDeployment(mock, 'hc', 'hc-slow', { id: 'hc-slow', ...priced() });
  slow.model_info.health_check_timeout = 1;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [slow, openaiDeployment(mock, 'hc', 'hc-ok', { id: 'hc-ok', ...priced() })],
    general_settings: { health_check_timeout: 20 },
  }));
  await mock.script('hc-slow', [{ latency_ms: 5000 }]);
  const t0 = Date.now();
  const r = await gw.fetch('/health', { method: 'GET' });
  const took = Date.now() - t0;
  assert.equal(r.status, 200, r.text);
  assert.ok(took < 3000, `took ${took} ms`);
  assert.deepEqual(r.json.unhealthy_endpoints.map((e) => e.model_id), ['hc-slow']);
  assert.match(r.json.unhealthy_endpoints[0].error, /tim/i);
  assert.deepEqual(r.json.healthy_endpoints.map((e) => e.model_id), ['hc-ok']);
  const rows = await healthRows(gw, 2);
  const slowRow = rows.find((x) => depOf(x) === 'hc-slow');
  const okRow = rows.find((x) => depOf(x) === 'hc-ok');
  assert.equal(nanos(okRow.spend), await mockBillNanos(mock, 'hc-ok', PRICES));
  // Sent and not answered: the reservation, marked unknown; the provider billed nothing.
  assert.equal(nanos(slowRow.spend), unknownCharges(slowRow));
  assert.ok(unknownCharges(slowRow) > 0);
  assert.equal(await mockBillNanos(mock, 'hc-slow', PRICES), 0);
  ctx.t.diagnostic(`timeout round took ${took} ms; slow deployment charged ${slowRow.spend}`);
});

e2e('background_health_checks: rounds open the circuit of a failing deployment and close it once it answers again; GET /health answers from the last round', async (ctx) => {
  const { mock } = state;
  await mock.script('hc-bad', [{ error: 'server_error' }]);
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'hc', 'hc-ok', { id: 'hc-ok', ...priced() }),
      openaiDeployment(mock, 'hc', 'hc-bad', { id: 'hc-bad', ...priced() }),
    ],
    general_settings: { background_health_checks: true, health_check_interval: 1 },
    fallback_policy: { defaults: { circuit: { consecutive_failures: 2, cooldown_ms: 1500 } } },
  }));
  const open = await waitFor(async () => {
    const c = await circuitOf(gw, 'deployments', 'hc-bad');
    return c?.state === 'open' ? c : null;
  }, { timeoutMs: 8000, intervalMs: 50, what: 'the circuit of hc-bad to open' });
  assert.equal(open.state, 'open');
  assert.equal((await circuitOf(gw, 'deployments', 'hc-ok'))?.state ?? 'closed', 'closed');
  const before = (await mock.stats()).models['hc-bad'].requests;
  assert.ok(before >= 2, `${before} calls opened it`);
  // From the last round: no call is made for this GET.
  const asked = (await mock.stats()).requests_total;
  const r = await gw.fetch('/health', { method: 'GET' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.unhealthy_endpoints.map((e) => e.model_id), ['hc-bad']);
  assert.ok(r.json.checked_at_ms > 0);
  assert.ok((await mock.stats()).requests_total - asked <= 2, 'GET /health answered from the last round');
  // Healthy again: the half-open probe of a later round succeeds and closes the circuit.
  await mock.script('hc-bad', [{}]);
  await waitFor(async () => {
    const c = await circuitOf(gw, 'deployments', 'hc-bad');
    return !c || c.state === 'closed' ? true : null;
  }, { timeoutMs: 8000, intervalMs: 50, what: 'the circuit of hc-bad to close' });
  // Money over every background call so far, on a quiet moment between rounds: the rows
  // logged are exactly the calls the provider saw, and their spend is its bill.
  await waitFor(async () => {
    const rows1 = await healthRows(gw, 0);
    const s = await mock.stats();
    const rows2 = await healthRows(gw, 0);
    const calls = s.models['hc-ok'].requests + s.models['hc-bad'].requests;
    // Checks refused by the open circuit are logged too, with no attempt and $0.
    const attempts = rows2.reduce((a, r) => a + (r.decision?.steps ?? []).filter((x) => x.step === 'attempt').length, 0);
    if (rows1.length !== rows2.length || attempts !== calls) return null;
    const bill = s.bills.filter((x) => x.model === 'hc-ok' || x.model === 'hc-bad').reduce((t, x) => t + billNanos(x, PRICES), 0);
    assert.equal(spentOf(rows2), bill);
    return true;
  }, { timeoutMs: 8000, intervalMs: 100, what: 'every health call logged' });
}, { timeout: 40000 });
