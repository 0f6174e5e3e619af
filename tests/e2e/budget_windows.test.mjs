// One window per settlement (issue 8 §5): a reservation taken in one budget window and settled in
// the next is charged to the new window in memory AND in the durable ledger, so a restart inside
// the new window rebuilds exactly what memory held; /key/info shows the current window.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, sleep } from './harness.mjs';
import { hi, chat, worstNanos, costNanos, mockPromptTokens, paidDeployment, nanos, dollars, expectSpend } from './budget_helpers.mjs';

const state = useMock();
const WINDOW_S = 10;

e2e('a request that crosses a window boundary is charged to the new window; after a restart inside it the next request is still refused', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-window-'));
  try {
    const config = gatewayConfig({
      model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')],
      tollgate_settings: { data_dir: dataDir },
    });
    let gw = await ctx.gateway(config);
    const body = hi('paid-model');
    const worst = worstNanos(body);
    const actual = costNanos(mockPromptTokens(body), 10);
    // One answer in a window leaves less than a worst case: the next request of that window is refused.
    const k = await gw.generateKey({ max_budget: dollars(worst + actual - 1), budget_duration: `${WINDOW_S}s` });
    // Send 1.5 s before a boundary; the upstream answers 3 s later, in the next window.
    const msToBoundary = WINDOW_S * 1000 - (Date.now() % (WINDOW_S * 1000));
    if (msToBoundary < 1500) await sleep(msToBoundary + 50);
    await sleep(Math.max(0, (WINDOW_S * 1000 - (Date.now() % (WINDOW_S * 1000))) - 1500));
    await mock.script('paid-upstream', [{ latency_ms: 3000 }, {}]);
    const first = await chat(gw, k.key, body);
    assert.equal(first.status, 200, first.text);
    const windowStart = Math.floor(Date.now() / (WINDOW_S * 1000)) * WINDOW_S * 1000;
    assert.ok(Date.now() - windowStart < 3000, 'settled early in the new window');
    await expectSpend(gw, k.key, actual, 'the new window pays');
    const info = await gw.keyInfo(k.key);
    assert.equal(info.budget_reset_at_ms, windowStart + WINDOW_S * 1000);
    assert.equal((await chat(gw, k.key, body)).status, 429);

    gw.kill();
    await gw.proc.exited;
    gw = await ctx.gateway(config);
    assert.ok(Date.now() < windowStart + WINDOW_S * 1000, 'restarted inside the same window');
    const after = await chat(gw, k.key, body);
    assert.equal(after.status, 429, `the new window's spend was lost in the restart: ${after.text}`);
    assert.equal(nanos((await gw.keyInfo(k.key)).spend), actual);
    // Once the window ends the key is served again, and /key/info shows the new window.
    await sleep(windowStart + WINDOW_S * 1000 - Date.now() + 50);
    assert.equal(nanos((await gw.keyInfo(k.key)).spend), 0);
    assert.equal((await chat(gw, k.key, body)).status, 200);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, { timeout: 40000 });
