// The gateway on a PostgreSQL database (general_settings.database_url = postgresql://…): a key
// made through the admin API, a paid request against the simulator, a restart, and the key's
// spend still equal to the simulator's bill. Needs TOLLGATE_TEST_POSTGRES_URL (scripts/services.sh
// starts a server); skipped without it unless TOLLGATE_REQUIRE_SERVICES=1 (CI), then it fails.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { after } from 'node:test';
import { useMock, e2e, gatewayConfig } from './harness.mjs';
import { hi, chat, paidDeployment, nanos, mockBill, expectSpend } from './budget_helpers.mjs';

const SERVER = process.env.TOLLGATE_TEST_POSTGRES_URL ?? '';
const REQUIRED = process.env.TOLLGATE_REQUIRE_SERVICES === '1';
const skip = !SERVER && !REQUIRED
  ? 'TOLLGATE_TEST_POSTGRES_URL is not set (eval "$(scripts/services.sh start)" starts a server)' : undefined;

const state = useMock();
const created = [];

function psql(url, sql) {
  execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/// A fresh database on the test server; its URL.
function freshDatabase() {
  assert.ok(SERVER, 'TOLLGATE_TEST_POSTGRES_URL is not set but TOLLGATE_REQUIRE_SERVICES=1');
  const name = `tg_test_${randomBytes(6).toString('hex')}`;
  psql(SERVER, `CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
  created.push(name);
  const u = new URL(SERVER);
  u.pathname = `/${name}`;
  return u.toString();
}

after(() => {
  for (const name of created) {
    try { psql(SERVER, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`); } catch { /* server gone */ }
  }
});

e2e('postgres: a key and its spend survive a gateway restart (spend == the simulator\'s bill)', async (ctx) => {
  const { mock } = state;
  const config = gatewayConfig({
    model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')],
    general_settings: { database_url: freshDatabase(), database_connection_pool_limit: 3 },
  });
  let gw = await ctx.gateway(config);
  const k = await gw.generateKey({ max_budget: 10, key_alias: 'pg-e2e' });
  for (let i = 0; i < 3; i++) {
    const r = await chat(gw, k.key, hi('paid-model'));
    assert.equal(r.status, 200, r.text);
  }
  const bill = await mockBill(mock, 'paid-upstream');
  assert.equal(bill.succeeded, 3);
  assert.ok(bill.nanos > 0);
  await expectSpend(gw, k.key, bill.nanos, 'spend before the restart');
  await gw.stop();

  gw = await ctx.gateway(config);
  const info = await gw.keyInfo(k.key);
  assert.equal(info.key_alias, 'pg-e2e', 'the key is in the database');
  assert.equal(nanos(info.spend), bill.nanos, 'the spend was rebuilt from the Postgres ledger');
  assert.equal(nanos(info.reserved_spend), 0);
  const r = await chat(gw, k.key, hi('paid-model'));
  assert.equal(r.status, 200, r.text);
  await expectSpend(gw, k.key, (await mockBill(mock, 'paid-upstream')).nanos, 'spend after one more request');

  // tollgate explain reads the same database beside the running gateway.
  const id = r.headers.get('x-litellm-call-id');
  const bin = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
  const deadline = Date.now() + 5000;
  let x;
  do {
    x = spawnSync(bin, ['explain', id, '--config', gw.configPath], { encoding: 'utf8', timeout: 20000 });
  } while (x.status !== 0 && Date.now() < deadline);
  assert.equal(x.status, 0, `${x.stdout}\n${x.stderr}`);
  assert.match(x.stdout, new RegExp(`^request {6}${id}$`, 'm'));
  assert.match(x.stdout, /^status {7}success$/m);
}, { skip });

// No server needed: a Postgres URL nothing answers on is retried for 10 s, then serve exits 1 with
// one line naming the database (password masked).
e2e('postgres: serve on an unreachable server retries for a bounded time, then exits 1 with one line', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-pgdown-'));
  try {
    const cfg = path.join(dir, 'config.yaml');
    writeFileSync(cfg, 'model_list: []\ngeneral_settings:\n  database_url: postgresql://tg:hunter2@127.0.0.1:1/tollgate\n');
    const bin = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
    const started = Date.now();
    const r = spawnSync(bin, ['serve', '--config', cfg, '--host', '127.0.0.1', '--port', '0'], { encoding: 'utf8', timeout: 30000 });
    const took = Date.now() - started;
    assert.equal(r.status, 1, r.stderr);
    assert.ok(took >= 9000 && took < 20000, `gave up after ${took} ms`);
    const last = r.stderr.trim().split('\n').at(-1);
    assert.match(last, /^tollgate: cannot open the database postgresql:\/\/tg:\*\*\*@127\.0\.0\.1:1\/tollgate: /);
    assert.ok(!r.stderr.includes('hunter2'), 'the password is never printed');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, { timeout: 40000 });
