// Config hot reload and models kept in the store (issue 11 §5, §6; docs/config.md "Reloading",
// docs/admin_api.md "Models"): SIGHUP and POST /config/reload with a good and a bad file, a
// stream in flight across a reload, /model/new, /model/update and /model/delete seen by the
// running gateway (and by a second gateway on the same PostgreSQL database), and admission of an
// API-added model like any other.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { after } from 'node:test';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, toYaml, waitFor, sseData, MASTER_KEY,
} from './harness.mjs';
import { hi, chat, paidDeployment, mockBill, expectSpend } from './budget_helpers.mjs';

const state = useMock();

/// Writes `config` as the gateway's config file (same data_dir as at start).
function rewrite(gw, config) {
  if (typeof config === 'string') return writeFileSync(gw.configPath, config);
  const c = structuredClone(config);
  c.tollgate_settings = { data_dir: path.join(gw.dir, 'data'), ...(c.tollgate_settings ?? {}) };
  return writeFileSync(gw.configPath, toYaml(c));
}

const hangup = (gw) => gw.proc.child.kill('SIGHUP');
const status = async (gw, model, key = MASTER_KEY) => (await chat(gw, key, hi(model))).status;

e2e('SIGHUP with a good file: the new group is served, the removed one is 400, restart-only settings are kept', async (ctx) => {
  const { mock } = state;
  const first = gatewayConfig({ model_list: [openaiDeployment(mock, 'old-group', 'old-up')] });
  const gw = await ctx.gateway(first);
  assert.equal(await status(gw, 'old-group'), 200);
  assert.equal(await status(gw, 'new-group'), 400);

  rewrite(gw, gatewayConfig({
    model_list: [openaiDeployment(mock, 'new-group', 'new-up')],
    general_settings: { master_key: 'sk-a-new-master-key' },
  }));
  hangup(gw);
  await waitFor(async () => (await status(gw, 'new-group')) === 200, { what: 'new-group served after SIGHUP' });
  const gone = await chat(gw, MASTER_KEY, hi('old-group'));  // the master key is restart-only: still the old one
  assert.equal(gone.status, 400, gone.text);
  assert.equal(gone.json.error.code, 'model_not_found');
  assert.match(gw.logs(), /general_settings\.master_key: restart required/);
  assert.equal((await mock.model('new-up')).succeeded, 1);
  const models = await gw.fetch('/v1/models', { method: 'GET' });
  assert.deepEqual(models.json.data.map((m) => m.id), ['new-group']);
});

e2e('SIGHUP with a bad file: refused with the reason logged, the old config keeps serving', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'kept', 'kept-up')] }));
  rewrite(gw, 'model_list:\n  - model_name: broken\n    litellm_params: {model: "openai/x\n');
  hangup(gw);
  await waitFor(() => /config reload refused/.test(gw.logs()), { what: 'the refusal in the log' });
  assert.match(gw.logs(), /quoted string is never closed|invalid YAML/);
  assert.equal(await status(gw, 'kept'), 200);
  // A file that parses but does not load (a fallback to a group that does not exist): refused too.
  rewrite(gw, gatewayConfig({
    model_list: [openaiDeployment(mock, 'kept', 'kept-up')],
    litellm_settings: { fallbacks: [{ kept: ['nowhere'] }] },
  }));
  const r = await gw.fetch('/config/reload', { body: {} });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.code, 'config_invalid');
  assert.match(r.json.error.message, /nowhere/);
  assert.equal(r.json.reload.status, 'refused');
  assert.equal(await status(gw, 'kept'), 200);
});

e2e('POST /config/reload needs the master key and answers what it applied', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'g1', 'up1')] }));
  const key = (await gw.generateKey({})).key;
  for (const [auth, status] of [[false, 401], ['sk-wrong', 401], [key, 403]]) {  // a valid virtual key: 403
    const r = await gw.fetch('/config/reload', { body: {}, auth });
    assert.equal(r.status, status, `${auth}: ${r.text}`);
  }
  assert.equal((await gw.fetch('/config/reload', { method: 'GET' })).status, 405);
  rewrite(gw, gatewayConfig({ model_list: [openaiDeployment(mock, 'g1', 'up1'), openaiDeployment(mock, 'g2', 'up2')] }));
  const r = await gw.fetch('/config/reload', { body: {} });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.status, 'reloaded');
  assert.equal(r.json.model_groups, 2);
  assert.deepEqual(r.json.restart_required, []);
  assert.equal(await status(gw, 'g2'), 200);
});

e2e('a stream in flight across a reload finishes on the config it started with, and is charged the bill', async (ctx) => {
  const { mock } = state;
  const config = gatewayConfig({ model_list: [paidDeployment(mock, 'streamer', 'slow-up')] });
  const gw = await ctx.gateway(config);
  const k = await gw.generateKey({ max_budget: 5 });
  await mock.script('slow-up', [{ completion_tokens: 20, tokens_per_second: 10 }]);
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(hi('streamer', { stream: true, max_tokens: 30 })),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const first = await reader.read();  // the stream is under way
  assert.ok(!first.done);
  rewrite(gw, gatewayConfig({ model_list: [openaiDeployment(mock, 'other', 'other-up')] }));
  const r = await gw.fetch('/config/reload', { body: {} });
  assert.equal(r.status, 200, r.text);
  assert.equal(await status(gw, 'streamer', k.key), 400);  // new requests: the group is gone
  let text = new TextDecoder().decode(first.value);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  const events = sseData(text);
  assert.equal(events.at(-1), '[DONE]', text);
  const bill = await mockBill(mock, 'slow-up');
  assert.equal(bill.succeeded, 1);
  assert.equal(bill.completion_tokens, 20);
  await expectSpend(gw, k.key, bill.nanos, 'the stream that crossed the reload');
});

e2e('/model/new without general_settings.store_model_in_db is 400 and stores nothing', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'file-group', 'f-up')] }));
  const r = await gw.fetch('/model/new', { body: openaiDeployment(mock, 'api-group', 'a-up') });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.code, 'store_model_in_db_disabled');
  assert.match(r.json.error.message, /store_model_in_db/);
  const info = await gw.admin('/model/info');
  assert.deepEqual(info.data.map((d) => d.model_name), ['file-group']);
  assert.equal(info.data[0].model_info.db_model, false);
  assert.equal(info.data[0].litellm_params.api_key, undefined);  // never shown
  assert.equal(info.data[0].litellm_params.model, 'openai/f-up');
});

const storeConfig = (mock, general = {}) => gatewayConfig({
  model_list: [openaiDeployment(mock, 'file-group', 'f-up')],
  general_settings: { store_model_in_db: true, ...general },
  tollgate_settings: { model_refresh_ms: 100 },
});

e2e('/model/new, /model/update, /model/delete are served at once; a bad body is 400 naming the field', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(storeConfig(mock));
  const k = await gw.generateKey({ max_budget: 5 });

  // Bad bodies: refused by the config loader, nothing stored.
  const bad = await gw.fetch('/model/new', { body: { model_name: 'api', litellm_params: { model: 'openai/a-up', rpm: -1 } } });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.error.param, 'litellm_params.rpm');
  const noModel = await gw.fetch('/model/new', { body: { model_name: 'api', litellm_params: {} } });
  assert.equal(noModel.status, 400);
  assert.equal(noModel.json.error.param, 'litellm_params.model');
  const dupId = await gw.fetch('/model/new', { body: openaiDeployment(mock, 'api', 'a-up', { id: 'file-group.f-up' }) });
  assert.equal(dupId.status, 409, dupId.text);
  assert.equal((await gw.admin('/model/info')).data.length, 1);

  const created = await gw.admin('/model/new', paidDeployment(mock, 'api', 'a-up', { id: 'api-1' }));
  assert.equal(created.model_id, 'api-1');
  assert.equal(created.litellm_params.api_key, undefined);
  const r1 = await chat(gw, k.key, hi('api'));  // no wait: the writing instance serves it at once
  assert.equal(r1.status, 200, r1.text);
  const info = await gw.admin('/v1/model/info?litellm_model_id=api-1');
  assert.equal(info.data.length, 1);
  assert.equal(info.data[0].model_info.db_model, true);
  assert.equal(info.data[0].model_info.input_cost_per_token, 0.000001);
  assert.equal(info.data[0].litellm_params.api_key, undefined);

  // /model/update: the upstream model changes; the next request goes there.
  const upd = await gw.admin('/model/update', { model_info: { id: 'api-1' }, litellm_params: { model: 'openai/b-up' } });
  assert.equal(upd.litellm_params.model, 'openai/b-up');
  assert.equal((await chat(gw, k.key, hi('api'))).status, 200);
  assert.equal((await mock.model('a-up')).succeeded, 1);
  assert.equal((await mock.model('b-up')).succeeded, 1);
  // Spend follows the simulator's bill across the models' changes.
  const bill = (await mockBill(mock, 'a-up')).nanos + (await mockBill(mock, 'b-up')).nanos;
  await expectSpend(gw, k.key, bill, 'spend on API-added models');
  const badUpd = await gw.fetch('/model/update', { body: { model_info: { id: 'api-1' }, litellm_params: { timeout: 'soon' } } });
  assert.equal(badUpd.status, 400, badUpd.text);
  assert.equal(badUpd.json.error.param, 'litellm_params.timeout');
  assert.equal((await chat(gw, k.key, hi('api'))).status, 200);  // the refused update changed nothing

  // A model of the config file cannot be changed here; an unknown one is 404.
  const fileModel = await gw.fetch('/model/delete', { body: { id: 'file-group.f-up' } });
  assert.equal(fileModel.status, 400);
  assert.equal(fileModel.json.error.code, 'config_model');
  assert.equal((await gw.fetch('/model/delete', { body: { id: 'nope' } })).status, 404);
  const del = await gw.admin('/model/delete', { id: 'api-1' });
  assert.match(del.message, /api-1 deleted/);
  const gone = await chat(gw, k.key, hi('api'));
  assert.equal(gone.status, 400);
  assert.equal(gone.json.error.code, 'model_not_found');
  // Only the master key writes.
  assert.equal((await gw.fetch('/model/new', { body: openaiDeployment(mock, 'x', 'x'), auth: k.key })).status, 403);
});

e2e('an unpriced model added through /model/new is refused where a budget attaches', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(storeConfig(mock));
  await gw.admin('/model/new', openaiDeployment(mock, 'unpriced-api', 'no-such-priced-model', { id: 'u-1' }));
  const k = await gw.generateKey({ max_budget: 1 });
  const r = await chat(gw, k.key, hi('unpriced-api'));
  assert.equal(r.status, 403, r.text);
  assert.equal(r.json.error.code, 'unpriced_model_blocked');
  assert.equal((await mock.model('no-such-priced-model')).requests, 0);
  const info = await gw.admin('/model/info?litellm_model_id=u-1');
  assert.equal(info.data[0].model_info.input_cost_per_token, null);
});

e2e('models kept in the store survive a restart and load with the file', async (ctx) => {
  const { mock } = state;
  const config = storeConfig(mock);
  let gw = await ctx.gateway(config);
  await gw.admin('/model/new', openaiDeployment(mock, 'kept-api', 'k-up', { id: 'k-1' }));
  const dir = gw.dir;
  await gw.proc.stop();
  // The same data_dir: the same SQLite file.
  const again = structuredClone(config);
  again.tollgate_settings = { ...again.tollgate_settings, data_dir: path.join(dir, 'data') };
  gw = await ctx.gateway(again);
  assert.equal(await status(gw, 'kept-api'), 200);
  // SIGHUP re-reads the file and keeps the store's models.
  hangup(gw);
  await waitFor(() => /config reload applied/.test(gw.logs()), { what: 'the reload' });
  assert.equal(await status(gw, 'kept-api'), 200);
  assert.equal(await status(gw, 'file-group'), 200);
});

// --- a second gateway on the same PostgreSQL database -------------------------------------------

const SERVER = process.env.TOLLGATE_TEST_POSTGRES_URL ?? '';
const REQUIRED = process.env.TOLLGATE_REQUIRE_SERVICES === '1';
const pgSkip = !SERVER && !REQUIRED ? 'TOLLGATE_TEST_POSTGRES_URL is not set' : undefined;
const databases = [];
const psql = (url, sql) => execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql], { stdio: ['ignore', 'pipe', 'pipe'] });
after(() => {
  for (const name of databases) {
    try { psql(SERVER, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`); } catch { /* server gone */ }
  }
});

e2e('postgres: a model added on one gateway is served by another on the same database, without a restart', async (ctx) => {
  const { mock } = state;
  assert.ok(SERVER, 'TOLLGATE_TEST_POSTGRES_URL is not set but TOLLGATE_REQUIRE_SERVICES=1');
  const name = `tg_test_${randomBytes(6).toString('hex')}`;
  psql(SERVER, `CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
  databases.push(name);
  const u = new URL(SERVER);
  u.pathname = `/${name}`;
  const config = storeConfig(mock, { database_url: u.toString() });
  const a = await ctx.gateway(config);
  const b = await ctx.gateway(config);
  assert.equal(await status(b, 'shared-api'), 400);
  await a.admin('/model/new', openaiDeployment(mock, 'shared-api', 's-up', { id: 's-1' }));
  await waitFor(async () => (await status(b, 'shared-api')) === 200, { what: 'the other gateway serving it', timeoutMs: 5000 });
  await a.admin('/model/delete', { id: 's-1' });
  await waitFor(async () => (await status(b, 'shared-api')) === 400, { what: 'the other gateway dropping it', timeoutMs: 5000 });
  assert.equal((await b.admin('/model/info')).data.length, 1);
}, { skip: pgSkip });

