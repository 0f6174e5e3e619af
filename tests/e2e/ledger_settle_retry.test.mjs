// A settle record the store cannot write at once (disk full, database locked) is kept and
// written once the store can be written again: it is never dropped. Found by the chaos soak
// (bench/soak.mjs): a dropped settle left its reservation open in the durable ledger, so the next
// start charged the whole reservation ("recovered") instead of the answer's usage — the durable
// spend then disagreed with the spend the running gateway had admitted against, and could pass a
// key's max_budget by the difference. The store is made unwritable by holding SQLite's exclusive
// lock from the sqlite3 shell past the gateway's busy timeout (5 s), as in
// ledger_failclosed.test.mjs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, waitFor, metricsText, metricValue } from './harness.mjs';
import { hi, chat, paidDeployment, worstNanos, costNanos, mockPromptTokens, nanos, lockDatabase } from './budget_helpers.mjs';

const state = useMock();

const ledger = (db) => JSON.parse(spawnSync('sqlite3', ['-json', '-readonly', db,
  "SELECT reservation_id, kind, settle_kind, amount_nanos, actual_nanos FROM ledger ORDER BY seq"], { encoding: 'utf8' }).stdout || '[]');

e2e('a settle that cannot be written at once is written later: no reservation left open, the restart rebuilds the billed spend', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-settle-retry-'));
  const db = path.join(dataDir, 'tollgate.db');
  try {
    const config = gatewayConfig({
      model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')],
      tollgate_settings: { data_dir: dataDir },
    });
    let gw = await ctx.gateway(config);
    const key = await gw.generateKey({ max_budget: 10 });
    const body = hi('paid-model');
    const actual = costNanos(mockPromptTokens(body), 10);
    assert.ok(actual < worstNanos(body));

    // The answer comes while the database is locked: its reserve is written, its settle is not.
    // 4 s of upstream latency: room for sqlite3 to take the lock on a busy machine.
    await mock.script('paid-upstream', [{ latency_ms: 4000 }, {}]);
    const pending = chat(gw, key.key, body);
    await waitFor(async () => (await mock.model('paid-upstream')).requests === 1, { what: 'the request to reach the upstream' });
    const lock = await lockDatabase(db);
    try {
      const r = await pending;
      assert.equal(r.status, 200, r.text);
      // /metrics, not /tollgate/stats: the latter also probes the store's health, a write that
      // waits behind the failing batches (up to 3 busy timeouts here) while the lock is held.
      await waitFor(async () => metricValue(await metricsText(gw), 'tollgate_ledger_failed_batches_total') >= 1,
        { timeoutMs: 15000, intervalMs: 100, what: 'the settle batch to fail on the locked database' });
    } finally {
      await lock.release();
    }
    assert.equal(nanos((await gw.keyInfo(key.key)).spend), actual, 'the running gateway charged the answer\'s usage');

    // Once the store is writable the settle is in the durable ledger — before any restart.
    await waitFor(() => ledger(db).some((r) => r.kind === 'settle'), { timeoutMs: 10000, intervalMs: 100, what: 'the settle record to be written' });
    const rows = ledger(db);
    assert.deepEqual(rows.map((r) => [r.kind, r.settle_kind, r.actual_nanos]), [['reserve', '', 0], ['settle', 'actual', actual]]);

    // A clean restart finds nothing open and rebuilds the same spend.
    await gw.stop();
    gw = await ctx.gateway(config);
    assert.doesNotMatch(gw.proc.stderr, /ledger recovery: \d+ reservation\(s\) left open/);
    assert.equal(nanos((await gw.keyInfo(key.key)).spend), actual, 'the spend after the restart is the bill, not the reservation');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, { timeout: 60000 });
