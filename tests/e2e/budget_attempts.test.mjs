// Admission per attempt: retries reserve again (a failed attempt settles to 0), an attempt
// whose outcome is unknown settles at its reservation, and the worst-case bound follows
// max_tokens × n (else the model's max output, else 4096).
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import {
  hi, chat, worstNanos, inputBound, costNanos, mockPromptTokens, paidDeployment, nanos, dollars, expectSpend, spendLogRow, mockBill,
} from './budget_helpers.mjs';

const state = useMock();

e2e('every retry is admitted on its own: failed attempts settle to zero, so a budget of one worst case still gets its retries', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')],
    router_settings: { num_retries: 2, retry_after: 0 },
  }));
  const body = hi('paid-model');
  const worst = worstNanos(body);
  const actual = costNanos(mockPromptTokens(body), 10);
  const k = await gw.generateKey({ max_budget: dollars(worst) });
  await mock.script('paid-upstream', [{ error: 'server_error' }, { error: 'server_error' }, {}]);
  const r = await chat(gw, k.key, body);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-litellm-attempted-retries'), '2');
  assert.equal((await mock.model('paid-upstream')).requests, 3);
  await expectSpend(gw, k.key, actual, 'only the served attempt is charged');
  // Now the key holds `actual` of a budget of one worst case: the next request is refused.
  const again = await chat(gw, k.key, body);
  assert.equal(again.status, 429, again.text);
  assert.equal(again.json.error.type, 'budget_exceeded');
});

e2e('an attempt whose outcome is unknown (timeout after the request was sent) settles at its reservation and is marked unknown', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream', { timeout: 0.5 })],
  }));
  const body = hi('paid-model');
  const worst = worstNanos(body);
  const k = await gw.generateKey({ max_budget: dollars(worst + worst / 2) });
  await mock.script('paid-upstream', [{ fault: 'hang' }, {}]);
  const r = await chat(gw, k.key, body);
  assert.equal(r.status, 504, r.text);
  await expectSpend(gw, k.key, worst, 'charged the worst case');
  const row = await spendLogRow(gw, r);
  assert.equal(row.unknown_outcome, true);
  assert.equal(nanos(row.spend), worst);
  // 1.5 worst cases of budget, one already charged: the next is refused.
  const next = await chat(gw, k.key, body);
  assert.equal(next.status, 429, next.text);
  const bill = await mockBill(mock, 'paid-upstream');
  assert.equal(bill.nanos, 0, 'the provider billed nothing; the ledger errs on the safe side');
});

e2e('an upstream error before any usage settles to zero', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  const k = await gw.generateKey({ max_budget: 1 });
  for (const error of ['server_error', 'rate_limit_exceeded', 'context_length_exceeded']) {
    await mock.script('paid-upstream', [{ error }]);
    const r = await chat(gw, k.key, hi('paid-model'));
    assert.ok(r.status >= 400, r.text);
  }
  await mock.script('paid-upstream', [{ fault: 'reset' }]);
  const reset = await chat(gw, k.key, hi('paid-model'));
  assert.ok(reset.status >= 500, reset.text);
  const info = await gw.keyInfo(k.key);
  assert.equal(nanos(info.reserved_spend), 0);
  // A reset after the request was sent is an unknown outcome (charged its reservation); the
  // three error replies cost nothing.
  const resetRow = await spendLogRow(gw, reset);
  assert.equal(resetRow.unknown_outcome, true);
  await expectSpend(gw, k.key, worstNanos(hi('paid-model')));
});

e2e('the worst case follows max_tokens × n, else the model\'s max output, else 4096 tokens; a bound the budget cannot pay for is lowered, not refused', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      paidDeployment(mock, 'paid-model', 'paid-upstream'),
      // A bundled model (gpt-4o-mini: max output 16384 tokens) with its price overridden.
      paidDeployment(mock, 'mini', 'gpt-4o-mini'),
    ],
  }));
  const body = hi('paid-model');
  const w1 = worstNanos(body);
  // n = 2 doubles the output bound.
  const w2 = worstNanos({ ...body, n: 2 });
  assert.equal(w2 - w1, 10 * 2000);
  const k = await gw.generateKey({ max_budget: dollars(w2 - 1) });
  const refused = await chat(gw, k.key, { ...body, n: 2 });
  assert.equal(refused.status, 429, refused.text);
  // 10 tokens is below min_output_tokens (16): the caller's own small limit is all or nothing.
  assert.ok(refused.json.error.message.includes(`this attempt needs $${dollars(w2)}`), refused.json.error.message);
  const ok = await chat(gw, k.key, body);
  assert.equal(ok.status, 200, ok.text);

  // max_completion_tokens counts like max_tokens.
  const kc = await gw.generateKey({ max_budget: dollars(w1) });
  const mct = { model: 'paid-model', messages: body.messages, max_completion_tokens: 11 };
  const r1 = await chat(gw, kc.key, mct);
  assert.equal(r1.status, 429, r1.text);
  assert.ok(r1.json.error.message.includes(`$${dollars(worstNanos(mct))})`), r1.json.error.message);

  // No max_tokens and no known max output: 4096 output tokens, written into the request. A key
  // that cannot pay for all of them is served with a smaller bound (a quarter of what is left:
  // budget_reservation_share_percent), and the response says so.
  const noMax = { model: 'paid-model', messages: body.messages };
  const kd = await gw.generateKey({ max_budget: 1 });
  const fits = await chat(gw, kd.key, noMax);
  assert.equal(fits.status, 200, fits.text);
  assert.equal(fits.headers.get('x-tollgate-output-capped'), null);
  const bigBudget = worstNanos({ ...noMax, max_tokens: 4096 }) - 1;
  const big = await gw.generateKey({ max_budget: dollars(bigBudget) });
  const r2 = await chat(gw, big.key, noMax);
  assert.equal(r2.status, 200, r2.text);
  const capped = Number(r2.headers.get('x-tollgate-output-capped'));
  assert.ok(capped >= 16 && capped < 4096, `capped at ${capped}`);
  assert.ok(costNanos(inputBound(noMax), capped) <= Math.floor(bigBudget / 4) + 1, `${capped} tokens cost more than a quarter of the budget`);
  const row2 = await spendLogRow(gw, r2);
  const step = row2.decision.steps.find((s) => s.step === 'attempt');
  assert.equal(step.max_tokens, capped);
  assert.match(step.output_capped_by, /^key /);
  await expectSpend(gw, big.key, costNanos(mockPromptTokens(noMax), 16));

  // No max_tokens, a model with a known max output (gpt-4o-mini: 16384).
  const miniBody = { model: 'mini', messages: body.messages };
  const km = await gw.generateKey({ max_budget: dollars(worstNanos({ ...miniBody, max_tokens: 16384 }) - 1) });
  const r3 = await chat(gw, km.key, miniBody);
  assert.equal(r3.status, 200, r3.text);
  assert.ok(Number(r3.headers.get('x-tollgate-output-capped')) < 16384, r3.headers.get('x-tollgate-output-capped'));
  const kf = await gw.generateKey({ max_budget: dollars(worstNanos({ ...miniBody, max_tokens: 16384 }) * 5) });
  const r4 = await chat(gw, kf.key, miniBody);
  assert.equal(r4.status, 200, r4.text);
  assert.equal(r4.headers.get('x-tollgate-output-capped'), null);
  assert.equal((await spendLogRow(gw, r4)).decision.steps.find((s) => s.step === 'attempt').max_tokens, 16384);
});

e2e('a raised budget applies to the next request (/key/update), and spend survives the update', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  const body = hi('paid-model');
  const actual = costNanos(mockPromptTokens(body), 10);
  const k = await gw.generateKey({ max_budget: dollars(worstNanos(body)) });
  assert.equal((await chat(gw, k.key, body)).status, 200);
  assert.equal((await chat(gw, k.key, body)).status, 429);
  await gw.admin('/key/update', { key: k.key, max_budget: 1 });
  const r = await chat(gw, k.key, body);
  assert.equal(r.status, 200, r.text);
  assert.equal(nanos(r.headers.get('x-litellm-key-max-budget')), 1e9);
  await expectSpend(gw, k.key, 2 * actual);
  // /global/spend sums the spend-log rows, written by the store's writer just after each response.
  await waitFor(async () => nanos((await gw.admin('/global/spend')).spend) === 2 * actual,
    { what: `/global/spend of ${2 * actual} nanos` });
});
