// Fail closed: when the spend ledger cannot be written, paid attempts are refused with 503
// rather than served unrecorded; zero-cost attempts still pass; service resumes once the store
// can be written again. The store is made unwritable by holding SQLite's exclusive lock from
// another process (the `sqlite3` shell) past the gateway's busy timeout (5 s).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import { hi, chat, paidDeployment, lockDatabase } from './budget_helpers.mjs';

const state = useMock();

e2e('an unwritable ledger refuses paid attempts with 503, passes free ones, and recovers', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-failclosed-'));
  try {
    const free = { ...paidDeployment(mock, 'free-model', 'free-upstream', { inPrice: '0', outPrice: '0' }) };
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream'), free],
      tollgate_settings: { data_dir: dataDir },
    }));
    const key = await gw.generateKey({ max_budget: 10 });
    assert.equal((await chat(gw, key.key, hi('paid-model'))).status, 200);

    const lock = await lockDatabase(path.join(dataDir, 'tollgate.db'));
    let refused;
    try {
      const before = (await mock.model('paid-upstream')).requests;
      refused = await chat(gw, key.key, hi('paid-model'));
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.json?.error?.code, 'ledger_unavailable', refused.text);
      assert.equal((await mock.model('paid-upstream')).requests, before, 'nothing was sent upstream');
      const freeAnswer = await chat(gw, key.key, hi('free-model'));
      assert.equal(freeAnswer.status, 200, freeAnswer.text);
    } finally {
      await lock.release();
    }
    await waitFor(async () => (await chat(gw, key.key, hi('paid-model'))).status === 200,
      { timeoutMs: 10000, intervalMs: 200, what: 'paid requests to be served again' });
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, { timeout: 30000 });
