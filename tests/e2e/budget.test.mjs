// Budgets, end to end: the seed 000 replay (a zero-cost primary that always fails, a paid
// fallback, an over-budget key), a 2-second real budget window, and unpriced models.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, openaiDeployment, waitFor } from './harness.mjs';
import {
  hi, chat, expectSpend, spendLogRow, worstNanos, costNanos, mockPromptTokens, nanos, spendNanos, freeBrokenDeployment, paidDeployment,
} from './budget_helpers.mjs';

const state = useMock();

/// Seed 000's config: free-model (zero-cost, closed port) falls back to paid-model (priced, on the mock).
function seedConfig(mock, dataDir, general_settings = {}) {
  return gatewayConfig({
    model_list: [freeBrokenDeployment('free-model'), paidDeployment(mock, 'paid-model', 'paid-upstream')],
    litellm_settings: { fallbacks: [{ 'free-model': ['paid-model'] }] },
    general_settings,
    tollgate_settings: { data_dir: dataDir },
  });
}

e2e('seed 000: an over-budget key gets the free primary\'s error, not a billed paid fallback; an under-budget key is served by the fallback; enforce_fallback_budget: false restores the old behaviour', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-seed000-'));
  try {
    let gw = await ctx.gateway(seedConfig(mock, dataDir));
    const over = await gw.generateKey({ key_alias: 'over-budget', max_budget: 0.0005 });
    const under = await gw.generateKey({ key_alias: 'under-budget', max_budget: 100.0 });
    const body = hi('paid-model');
    const worst = worstNanos(body);
    const actual = costNanos(mockPromptTokens(body), 10);
    assert.equal(worst, 34_000);
    assert.equal(actual, 25_000);

    // Drive the over-budget key to its cap with direct paid-model calls: each one reserves the
    // worst case, so the key is refused once spend + worst case passes $0.0005.
    let served = 0;
    for (;;) {
      const r = await chat(gw, over.key, body);
      if (r.status === 429) {
        assert.equal(r.json?.error?.type, 'budget_exceeded', r.text);
        assert.match(r.json.error.message, new RegExp(`\\bkey ${over.token}\\b`));
        break;
      }
      assert.equal(r.status, 200, r.text);
      assert.equal(nanos(r.headers.get('x-litellm-response-cost')), actual);
      assert.equal(nanos(r.headers.get('x-litellm-key-max-budget')), 500_000);
      served += 1;
      assert.ok(served < 100, 'the key was never refused');
    }
    // Admitted while spend + worst ≤ cap: spend ≤ 466,000 before the last admitted call.
    assert.equal(served, Math.floor((500_000 - worst) / actual) + 1);
    const capped = await expectSpend(gw, over.key, served * actual);
    assert.ok(capped + worst > 500_000, 'the key cannot pay for one more worst case');
    assert.equal((await mock.model('paid-upstream')).succeeded, served);

    // 1. Over-budget key → free-model (fails) → paid fallback skipped: the primary's own error.
    const before = (await mock.model('paid-upstream')).requests;
    const r1 = await chat(gw, over.key, hi('free-model'));
    assert.equal(r1.status, 502, r1.text);
    assert.equal(r1.json?.error?.code, 'upstream_unavailable', r1.text);
    assert.match(r1.json.error.message, /free-model/);
    assert.equal(r1.headers.get('x-litellm-attempted-fallbacks'), '0');
    const skipped = r1.headers.get('x-tollgate-skipped-fallbacks');
    assert.ok(skipped, 'the skipped target is listed');
    assert.match(skipped, new RegExp(`^paid-model \\(budget_exceeded key ${over.token}\\)$`));
    assert.equal((await mock.model('paid-upstream')).requests, before, 'the paid model was not called');
    assert.equal(await spendNanos(gw, over.key), capped, 'no new spend');
    const row = await spendLogRow(gw, r1);
    assert.equal(row.api_key, over.token);
    assert.equal(row.status, 'failure');
    assert.equal(nanos(row.spend), 0);
    assert.deepEqual(row.skipped_fallbacks, [{ target: 'paid-model', reason: `budget_exceeded key ${over.token}` }]);

    // 2. Under-budget key → same request → served by the paid fallback.
    const r2 = await chat(gw, under.key, hi('free-model'));
    assert.equal(r2.status, 200, r2.text);
    assert.equal(r2.headers.get('x-litellm-attempted-fallbacks'), '1');
    assert.equal(r2.headers.get('x-litellm-model-group'), 'paid-model');
    assert.equal(r2.headers.get('x-tollgate-skipped-fallbacks'), null);
    assert.equal(nanos(r2.headers.get('x-litellm-response-cost')), actual);
    await expectSpend(gw, under.key, actual);
    assert.equal((await mock.model('paid-upstream')).requests, before + 1);

    // 3. Same proxy and database, restarted with enforce_fallback_budget: false and nothing else.
    gw.kill();
    gw = await ctx.gateway(seedConfig(mock, dataDir, { enforce_fallback_budget: false }));
    assert.equal(await spendNanos(gw, over.key), capped, 'spend rebuilt from the ledger after restart');
    const direct = await chat(gw, over.key, body);
    assert.equal(direct.status, 429, 'the primary is still guarded');
    let spend = capped;
    for (let i = 0; i < 2; i++) {
      const r3 = await chat(gw, over.key, hi('free-model'));
      assert.equal(r3.status, 200, r3.text);
      assert.equal(r3.headers.get('x-litellm-attempted-fallbacks'), '1');
      assert.equal(r3.headers.get('x-tollgate-skipped-fallbacks'), null);
      spend = await expectSpend(gw, over.key, spend + actual, 'spend grows');
    }
    assert.ok(spend > 500_000, `the unguarded fallback spends past the cap ($${spend / 1e9})`);
    assert.equal((await mock.model('paid-upstream')).requests, before + 3);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

e2e('seed 000: a key whose budget is below one worst case never reaches the paid fallback, while the zero-cost primary keeps being served', async (ctx) => {
  const { mock } = state;
  // Here the free model works: over budget or not, a zero-cost attempt is never blocked.
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      paidDeployment(mock, 'free-ok', 'free-upstream', { inPrice: 0, outPrice: 0 }),
      freeBrokenDeployment('free-model'),
      paidDeployment(mock, 'paid-model', 'paid-upstream'),
    ],
    litellm_settings: { fallbacks: [{ 'free-model': ['paid-model'] }] },
  }));
  const tiny = await gw.generateKey({ max_budget: 0.00001 }); // < one worst case (0.00005)
  for (let i = 0; i < 3; i++) {
    const ok = await chat(gw, tiny.key, hi('free-ok'));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(nanos(ok.headers.get('x-litellm-response-cost')), 0);
  }
  const r = await chat(gw, tiny.key, hi('free-model'));
  assert.equal(r.status, 502, r.text);
  assert.equal(r.headers.get('x-litellm-attempted-fallbacks'), '0');
  assert.match(r.headers.get('x-tollgate-skipped-fallbacks') ?? '', /^paid-model \(budget_exceeded key [0-9a-f]{64}\)$/);
  const p = await chat(gw, tiny.key, hi('paid-model'));
  assert.equal(p.status, 429);
  assert.equal(p.json.error.type, 'budget_exceeded');
  assert.deepEqual(await mock.requests('free-upstream', 'paid-upstream'), { 'free-upstream': 3, 'paid-upstream': 0 });
  assert.equal(await spendNanos(gw, tiny.key), 0);
});

e2e('a 2-second budget window: refused once spent, served again after the window resets', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  // Fits one request (worst 34,000 nanos), not two (25,000 spent + 34,000 > 50,000).
  const k = await gw.generateKey({ max_budget: 0.00005, budget_duration: '2s' });
  // 2 s windows are aligned to the Unix epoch: start near the beginning of one.
  await waitFor(() => Date.now() % 2000 < 300, { timeoutMs: 2500, intervalMs: 10, what: 'the start of a 2 s window' });
  const t0 = Date.now();
  const first = await chat(gw, k.key, hi('paid-model'));
  assert.equal(first.status, 200, first.text);
  const second = await chat(gw, k.key, hi('paid-model'));
  assert.ok(Date.now() - t0 < 1500, 'both requests ran inside one window');
  assert.equal(second.status, 429, second.text);
  assert.equal(second.json.error.type, 'budget_exceeded');
  const info = await gw.keyInfo(k.key);
  assert.equal(nanos(info.spend), 25_000);
  const resetAt = info.budget_reset_at_ms;
  assert.ok(Number.isInteger(resetAt) && resetAt % 2000 === 0 && resetAt > t0 && resetAt <= t0 + 2000,
    `budget_reset_at_ms ${resetAt} is the end of the current 2 s window`);

  // Poll (no fixed sleep) until the next window admits it again.
  const third = await waitFor(async () => {
    const r = await chat(gw, k.key, hi('paid-model'));
    if (r.status === 200) return r;
    assert.equal(r.status, 429, r.text);
    return null;
  }, { timeoutMs: 4000, intervalMs: 100, what: 'the window reset' });
  assert.ok(Date.now() >= resetAt, 'served only after the reset instant');
  assert.equal(nanos(third.headers.get('x-litellm-key-spend')), 25_000, 'the new window starts from 0');
  assert.equal((await mock.model('paid-upstream')).succeeded, 2);
});

e2e('an unpriced model is refused (403 unpriced_model_blocked) where a budget attaches and served where none does', async (ctx) => {
  const { mock } = state;
  const model_list = [
    openaiDeployment(mock, 'unpriced', 'some-mock-model'),
  ];
  const gw = await ctx.gateway(gatewayConfig({ model_list }));
  const budgeted = await gw.generateKey({ max_budget: 10 });
  const free = await gw.generateKey({});

  const refused = await chat(gw, budgeted.key, hi('unpriced'));
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.json.error.type, 'unpriced_model_blocked');
  assert.equal(refused.json.error.code, 'unpriced_model_blocked');
  assert.equal((await mock.model('some-mock-model')).requests, 0, 'never sent upstream');

  for (const auth of [free.key, true /* master key: no budget */]) {
    const r = await gw.fetch('/v1/chat/completions', { auth, body: hi('unpriced') });
    assert.equal(r.status, 200, r.text);
  }
  assert.equal((await mock.model('some-mock-model')).succeeded, 2);
  // Recorded as unpriced, not as a silent $0 priced row.
  const row = await spendLogRow(gw, await chat(gw, free.key, hi('unpriced')));
  assert.equal(row.status, 'success');
  assert.equal(row.priced, false);

  // A budget that attaches to every caller (global) blocks it for the master key too.
  const g2 = await ctx.gateway(gatewayConfig({ model_list, litellm_settings: { max_budget: 10 } }));
  const r2 = await g2.fetch('/v1/chat/completions', { body: hi('unpriced') });
  assert.equal(r2.status, 403, r2.text);
  assert.equal(r2.json.error.type, 'unpriced_model_blocked');

  // An end-user budget attaches only when the request names the end user.
  const g3 = await ctx.gateway(gatewayConfig({ model_list, litellm_settings: { max_end_user_budget: 1 } }));
  assert.equal((await g3.fetch('/v1/chat/completions', { body: hi('unpriced') })).status, 200);
  const r3 = await g3.fetch('/v1/chat/completions', { body: hi('unpriced', { user: 'cust-1' }) });
  assert.equal(r3.status, 403, r3.text);

  // No master key at all: an open gateway, no budgets → served.
  const open = await ctx.gateway(gatewayConfig({ model_list, general_settings: { master_key: undefined } }));
  const r4 = await open.fetch('/v1/chat/completions', { auth: false, body: hi('unpriced') });
  assert.equal(r4.status, 200, r4.text);
  // ... but a key that is not a virtual key is refused there too, never served anonymously.
  const r4bad = await open.fetch('/v1/chat/completions', { auth: 'sk-anything-at-all', body: hi('unpriced') });
  assert.equal(r4bad.status, 401, r4bad.text);
  assert.equal(r4bad.json.error.message, 'Authentication Error, Invalid proxy server token passed');

  // block_unpriced_models: false → the budgeted key is served too, recorded as unpriced.
  const g5 = await ctx.gateway(gatewayConfig({ model_list, general_settings: { block_unpriced_models: false } }));
  const k5 = await g5.generateKey({ max_budget: 10 });
  const r5 = await chat(g5, k5.key, hi('unpriced'));
  assert.equal(r5.status, 200, r5.text);
  const row5 = await spendLogRow(g5, r5);
  assert.equal(row5.priced, false);
  assert.equal((await mock.model('some-mock-model')).succeeded, 6);
});

e2e('an unpriced fallback target where a budget attaches is skipped, naming the reason', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [freeBrokenDeployment('free-model'), openaiDeployment(mock, 'unpriced', 'some-mock-model')],
    litellm_settings: { fallbacks: [{ 'free-model': ['unpriced'] }] },
  }));
  const k = await gw.generateKey({ max_budget: 10 });
  const r = await chat(gw, k.key, hi('free-model'));
  assert.equal(r.status, 502, r.text);
  assert.equal(r.headers.get('x-litellm-attempted-fallbacks'), '0');
  assert.equal(r.headers.get('x-tollgate-skipped-fallbacks'), 'unpriced (unpriced_model_blocked)');
  assert.equal((await mock.model('some-mock-model')).requests, 0);
  const nobudget = await gw.generateKey({});
  const ok = await chat(gw, nobudget.key, hi('free-model'));
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.headers.get('x-litellm-attempted-fallbacks'), '1');
});


