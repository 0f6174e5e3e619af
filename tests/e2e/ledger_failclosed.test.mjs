// Fail closed: when the spend ledger cannot be written, paid attempts are refused with 503
// rather than served unrecorded; zero-cost attempts still pass; service resumes once the ledger
// can be written again.
// - Without the ledger journal (`ledger_journal: false`) the ledger is the SQLite database: it is
//   made unwritable by holding SQLite's exclusive lock from another process (the `sqlite3` shell)
//   past the gateway's busy timeout (5 s).
// - With the journal (the default) the ledger is the journal: it is made unwritable the way a
//   full disk does it, with a file size limit on the gateway process (`prlimit --fsize`: every
//   write past it fails with EFBIG). A locked database then refuses nothing: the journal holds
//   the records and the database gets them once it is unlocked.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import { hi, chat, paidDeployment, lockDatabase, costNanos, mockPromptTokens, nanos, mockBill } from './budget_helpers.mjs';

const state = useMock();

const ledgerRows = (db) => JSON.parse(spawnSync('sqlite3', ['-json', '-readonly', db,
  'SELECT reservation_id, kind, settle_kind, actual_nanos FROM ledger ORDER BY seq'], { encoding: 'utf8' }).stdout || '[]');

function prlimit(pid, soft) {
  const r = spawnSync('prlimit', ['--pid', String(pid), `--fsize=${soft}:`], { encoding: 'utf8' });
  assert.equal(r.status, 0, `prlimit: ${r.stderr}`);
}

// While the ledger cannot be written: a paid attempt is refused 503 ledger_unavailable and sends
// nothing upstream; a free one is served.
async function expectFailClosed(mock, gw, key) {
  const before = (await mock.model('paid-upstream')).requests;
  const refused = await chat(gw, key.key, hi('paid-model'));
  assert.equal(refused.status, 503, refused.text);
  assert.equal(refused.json?.error?.code, 'ledger_unavailable', refused.text);
  assert.equal((await mock.model('paid-upstream')).requests, before, 'nothing was sent upstream');
  const freeAnswer = await chat(gw, key.key, hi('free-model'));
  assert.equal(freeAnswer.status, 200, freeAnswer.text);
}

const servedAgain = (gw, key) => waitFor(async () => (await chat(gw, key.key, hi('paid-model'))).status === 200,
  { timeoutMs: 10000, intervalMs: 200, what: 'paid requests to be served again' });

function setup(ctx, mock, extra = {}) {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-failclosed-'));
  const free = paidDeployment(mock, 'free-model', 'free-upstream', { inPrice: '0', outPrice: '0' });
  const config = gatewayConfig({
    model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream'), free],
    tollgate_settings: { data_dir: dataDir, ...extra },
  });
  return { dataDir, config, db: path.join(dataDir, 'tollgate.db') };
}

e2e('without the journal, a locked database refuses paid attempts with 503, passes free ones, and recovers', async (ctx) => {
  const { mock } = state;
  const { dataDir, config, db } = setup(ctx, mock, { ledger_journal: false });
  try {
    const gw = await ctx.gateway(config);
    const key = await gw.generateKey({ max_budget: 10 });
    assert.equal((await chat(gw, key.key, hi('paid-model'))).status, 200);

    const lock = await lockDatabase(db);
    try {
      await expectFailClosed(mock, gw, key);
    } finally {
      await lock.release();
    }
    await servedAgain(gw, key);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, { timeout: 30000 });

e2e('a journal the disk refuses (file size limit) refuses paid attempts with 503, passes free ones, recovers, and the money adds up', async (ctx) => {
  const { mock } = state;
  const { dataDir, config, db } = setup(ctx, mock);
  try {
    let gw = await ctx.gateway(config);
    const key = await gw.generateKey({ max_budget: 10 });
    const body = hi('paid-model');
    const actual = costNanos(mockPromptTokens(body), 10);
    assert.equal((await chat(gw, key.key, body)).status, 200);

    const journalDir = `${db}.ledger`;
    const segments = readdirSync(journalDir).filter((f) => f.endsWith('.journal')).sort();
    assert.ok(segments.length >= 1, `a journal segment in ${journalDir}`);
    const size = statSync(path.join(journalDir, segments.at(-1))).size;
    assert.ok(size > 0, 'the first request\'s records are in the journal');
    const pid = gw.proc.child.pid;
    prlimit(pid, size);
    try {
      await expectFailClosed(mock, gw, key);
      assert.ok(gw.alive, 'the gateway survives the refused writes');
    } finally {
      prlimit(pid, 'unlimited');
    }
    await servedAgain(gw, key);

    // Two paid answers served and billed; the refused attempt left no record anywhere.
    const bill = await mockBill(mock, 'paid-upstream');
    assert.equal(bill.succeeded, 2);
    assert.equal(nanos((await gw.keyInfo(key.key)).spend), bill.nanos);
    assert.equal(bill.nanos, 2 * actual);
    await gw.stop();
    assert.deepEqual(ledgerRows(db).map((r) => [r.kind, r.actual_nanos]),
      [['reserve', 0], ['settle', actual], ['reserve', 0], ['settle', actual]]);
    gw = await ctx.gateway(config);
    assert.doesNotMatch(gw.proc.stderr, /ledger recovery: \d+ reservation\(s\) left open/);
    assert.equal(nanos((await gw.keyInfo(key.key)).spend), 2 * actual, 'the restart rebuilds the billed spend');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, { timeout: 60000 });

e2e('with the journal, a locked database refuses nothing: paid attempts are served and reach the database once it is unlocked', async (ctx) => {
  const { mock } = state;
  const { dataDir, config, db } = setup(ctx, mock);
  try {
    let gw = await ctx.gateway(config);
    const key = await gw.generateKey({ max_budget: 10 });
    const body = hi('paid-model');
    const actual = costNanos(mockPromptTokens(body), 10);
    assert.equal((await chat(gw, key.key, body)).status, 200);
    await waitFor(() => ledgerRows(db).length === 2, { what: 'the first request folded into the database' });

    const lock = await lockDatabase(db);
    try {
      for (let i = 0; i < 3; i++) {
        const r = await chat(gw, key.key, body);
        assert.equal(r.status, 200, r.text);
      }
      assert.equal(nanos((await gw.keyInfo(key.key)).spend), 4 * actual);
    } finally {
      await lock.release();
    }
    await waitFor(() => ledgerRows(db).length === 8, { timeoutMs: 15000, intervalMs: 100, what: 'every record folded once the lock is gone' });
    const bill = await mockBill(mock, 'paid-upstream');
    assert.equal(bill.nanos, 4 * actual);
    assert.equal(ledgerRows(db).filter((r) => r.kind === 'settle').reduce((a, r) => a + r.actual_nanos, 0), bill.nanos);
    await gw.stop();
    gw = await ctx.gateway(config);
    assert.equal(nanos((await gw.keyInfo(key.key)).spend), bill.nanos, 'the restart rebuilds the billed spend');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}, { timeout: 60000 });
