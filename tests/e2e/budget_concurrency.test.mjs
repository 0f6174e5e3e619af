// Budgets and limits under concurrency: 200 concurrent paid requests on a key whose budget
// fits 20 worst cases, a team budget shared by two keys, and max_parallel_requests / rpm_limit.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import { hi, chat, worstNanos, inputBound, costNanos, paidDeployment, nanos, dollars, mockBill, tally } from './budget_helpers.mjs';

const state = useMock();

// A price with a fraction of a nano-dollar per token, so per-request rounding is exercised.
const IN = '0.00000100033';
const OUT = '0.000002';

/// Fires `n` requests at once; returns the responses.
function burst(gw, keyOf, n, body) {
  return Promise.all(Array.from({ length: n }, (_, i) => chat(gw, keyOf(i), body)));
}

e2e('200 concurrent paid requests on a key whose budget fits 20 → exactly 20 served, spend ≤ max_budget and equal to the mock\'s bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream', { inPrice: IN, outPrice: OUT })],
  }));
  const body = hi('paid-model');
  const worst = worstNanos(body, IN, OUT);
  assert.equal(worst, 34_005); // ceil(14 × 1000.33 + 10 × 2000)
  // The mock reports exactly the bounded prompt size, so an attempt costs its worst case and a
  // settled request frees nothing: no more than 20 can ever be admitted.
  await mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 100 }]);
  const maxBudget = 20 * worst;
  const k = await gw.generateKey({ max_budget: dollars(maxBudget) });

  const t0 = Date.now();
  const t = tally(await burst(gw, () => k.key, 200, body));
  const elapsed = Date.now() - t0;
  assert.deepEqual(t.other, [], 'only 200s and 429 budget_exceeded');
  assert.equal(t.ok, 20, `served ${t.ok}, refused ${t.budget} in ${elapsed} ms`);
  assert.equal(t.budget, 180);

  const bill = await mockBill(mock, 'paid-upstream', IN, OUT);
  assert.equal(bill.requests, 20, 'the upstream saw only the admitted requests');
  assert.equal(bill.succeeded, 20);
  const info = await waitFor(async () => {
    const i = await gw.keyInfo(k.key);
    return nanos(i.reserved_spend) === 0 && nanos(i.spend) > 0 ? i : null;
  }, { what: 'all reservations settled' });
  const spend = nanos(info.spend);
  assert.ok(spend <= maxBudget, `spend ${spend} ≤ max_budget ${maxBudget}`);
  assert.equal(spend, 20 * costNanos(inputBound(body), 10, IN, OUT));
  // The ledger equals the provider's bill up to the per-request rounding up (≤ 1 nano each).
  assert.ok(spend >= bill.nanos && spend - bill.nanos <= t.ok,
    `ledger ${spend} nanos vs bill ${bill.nanos} nanos (${bill.prompt_tokens} prompt, ${bill.completion_tokens} completion tokens)`);

  // One spend-log row per request; their spend adds up to the ledger.
  const rows = await waitFor(async () => {
    const r = await gw.admin(`/spend/logs?api_key=${k.key}`);
    return r.length === 200 ? r : null;
  }, { what: '200 spend log rows' });
  assert.equal(rows.filter((r) => r.status === 'success').length, 20);
  assert.equal(rows.reduce((a, r) => a + nanos(r.spend), 0), spend);
});

e2e('a team budget shared by two keys under concurrency: all-or-none admission across key and team scopes', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream', { inPrice: IN, outPrice: OUT })],
  }));
  const body = hi('paid-model');
  const worst = worstNanos(body, IN, OUT);
  await mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 100 }]);
  await gw.admin('/team/new', { team_id: 'team-x', max_budget: dollars(20 * worst) });
  const a = await gw.generateKey({ team_id: 'team-x', max_budget: dollars(15 * worst) });
  const b = await gw.generateKey({ team_id: 'team-x', max_budget: dollars(15 * worst) });
  const res = await burst(gw, (i) => (i % 2 ? a.key : b.key), 200, body);
  const t = tally(res);
  assert.deepEqual(t.other, []);
  assert.equal(t.ok, 20, 'the team admits exactly its 20');
  const okA = res.filter((r, i) => i % 2 && r.status === 200).length;
  assert.ok(okA <= 15 && t.ok - okA <= 15, `per key ≤ 15 (a ${okA}, b ${t.ok - okA})`);
  for (const r of res.filter((x) => x.status === 429)) assert.match(r.json.error.message, /(team team-x|key [0-9a-f]{64}) cannot cover/);
  assert.equal((await mock.model('paid-upstream')).succeeded, 20);
  await waitFor(async () => nanos((await gw.keyInfo(a.key)).spend) + nanos((await gw.keyInfo(b.key)).spend) === 20 * worst,
    { what: 'key spends add up to the team\'s' });
});

e2e('max_parallel_requests under concurrency: only that many in flight, the rest 429 rate_limit_exceeded with Retry-After', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  await mock.script('paid-upstream', [{ latency_ms: 300 }]);
  const k = await gw.generateKey({ max_parallel_requests: 3 });
  const res = await burst(gw, () => k.key, 20, hi('paid-model'));
  const ok = res.filter((r) => r.status === 200).length;
  const limited = res.filter((r) => r.status === 429 && r.json?.error?.type === 'rate_limit_exceeded');
  assert.equal(ok, 3, res.map((r) => r.status).join(','));
  assert.equal(limited.length, 17);
  for (const r of limited) assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After is set');
  assert.equal((await mock.model('paid-upstream')).requests, 3);
  // The slots are released once the requests finish.
  const again = await burst(gw, () => k.key, 3, hi('paid-model'));
  assert.deepEqual(again.map((r) => r.status), [200, 200, 200]);
});

e2e('rpm_limit under concurrency: at most rpm_limit requests per minute are served', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  const k = await gw.generateKey({ rpm_limit: 5 });
  const res = await burst(gw, () => k.key, 30, hi('paid-model'));
  const ok = res.filter((r) => r.status === 200).length;
  const limited = res.filter((r) => r.status === 429 && r.json?.error?.type === 'rate_limit_exceeded');
  assert.equal(ok, 5, res.map((r) => r.status).join(','));
  assert.equal(limited.length, 25);
  for (const r of limited) assert.ok(Number(r.headers.get('retry-after')) >= 1);
  assert.equal((await mock.model('paid-upstream')).requests, 5);
});
