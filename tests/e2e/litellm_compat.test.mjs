// A LiteLLM user's config as it is (issue 11): a deployment of a provider Tollgate does not
// implement loads with a warning and fails only when routed to (400 unsupported_provider, no
// upstream call, no charge), while its group's other deployments and its fallbacks serve; YAML
// numbers as PyYAML reads them; a file PyYAML would refuse is refused with line and column.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, metricsText, metricValue, waitFor } from './harness.mjs';
import { paidDeployment, chat, hi, spendNanos, expectSpend, mockBillNanos, IN_PRICE, OUT_PRICE } from './budget_helpers.mjs';

const state = useMock();
const BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-compat-'));
// A provider prefix Tollgate does not implement (LiteLLM's replicate/).
const unsupported = (group, extra = {}) => ({
  model_name: group,
  litellm_params: { model: 'replicate/meta/llama-2-7b-chat', input_cost_per_token: '0.000001', output_cost_per_token: '0.000002', ...extra },
});

function check(name, text) {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  const r = spawnSync(BIN, ['config', 'check', p], { encoding: 'utf8', timeout: 10000 });
  return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
}

e2e('a provider Tollgate cannot call: the config loads, that deployment answers 400 unsupported_provider, the rest serves, nothing is charged', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      unsupported('lonely'),
      unsupported('only-sm'),
      paidDeployment(mock, 'backup', 'uc-backup'),
      unsupported('mixed'),
      paidDeployment(mock, 'mixed', 'uc-mixed'),
      { model_name: 'noconf', litellm_params: { model: 'azure/gpt-4o', api_key: 'sk-x' } },
      { model_name: 'noenv', litellm_params: { model: 'openai/gpt-4o', api_key: 'os.environ/TOLLGATE_E2E_SURELY_UNSET_KEY' } },
    ],
    litellm_settings: { fallbacks: [{ 'only-sm': ['backup'] }] },
  }));
  assert.match(gw.logs(), /replicate.*not supported by tollgate/, 'the start says which deployment will not serve');
  const k = await gw.generateKey({ max_budget: 1 });
  const lonely = await chat(gw, k.key, hi('lonely'));
  assert.equal(lonely.status, 400, lonely.text);
  assert.equal(lonely.json.error.code, 'unsupported_provider');
  assert.match(lonely.json.error.message, /replicate/);
  const again = await chat(gw, k.key, hi('lonely'));
  assert.equal(again.status, 400, 'no circuit turns it into a vaguer 503');
  assert.equal(again.json.error.code, 'unsupported_provider');
  const noconf = await chat(gw, k.key, hi('noconf'));
  assert.equal(noconf.status, 500, noconf.text);
  assert.equal(noconf.json.error.code, 'deployment_misconfigured');
  assert.match(noconf.json.error.message, /api_base is required/);
  const noenv = await chat(gw, k.key, hi('noenv'));
  assert.equal(noenv.status, 500, noenv.text);
  assert.equal(noenv.json.error.code, 'deployment_misconfigured');
  assert.match(noenv.json.error.message, /TOLLGATE_E2E_SURELY_UNSET_KEY/, 'an unset key is never replaced by a provider-wide one');
  assert.match(gw.logs(), /environment variable\(s\) not set: TOLLGATE_E2E_SURELY_UNSET_KEY/, 'a warning at load, not a refusal');
  assert.equal(await spendNanos(gw, k.key), 0, 'nothing was sent, nothing is charged');

  // The backup ignores max_tokens (10): the charge follows the usage it reported.
  await mock.script('uc-backup', [{ content: 'from the backup', completion_tokens: 40 }]);
  const fb = await chat(gw, k.key, hi('only-sm'));
  assert.equal(fb.status, 200, fb.text);
  assert.match(fb.json.choices[0].message.content, /^from the backup/);
  await mock.script('uc-mixed', [{ content: 'ok', completion_tokens: 1 }]);
  for (let i = 0; i < 4; i++) {
    const m = await chat(gw, k.key, hi('mixed'));
    assert.equal(m.status, 200, `a group with a callable deployment always serves: ${m.text}`);
  }
  assert.equal((await mock.model('uc-mixed')).requests, 4);
  // Money: exactly the simulator's bill of what was sent (the backup's 40 tokens and the four
  // mixed answers), nothing for the deployments that were never called.
  const prices = { input: IN_PRICE, output: OUT_PRICE };
  const bill = (await mockBillNanos(mock, 'uc-backup', prices)) + (await mockBillNanos(mock, 'uc-mixed', prices));
  assert.ok(bill > 0);
  await expectSpend(gw, k.key, bill, 'key spend = the simulator\'s bill');
});

const FIXTURES = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../fixtures/litellm-configs');
// Files that do not load yet (the same as tests/unit/config/litellm_fixtures_test.cpp's kKnownGaps).
const KNOWN_GAPS = new Set([]);

/// The variables a config references, set as a user's environment would set them.
function envFor(text) {
  const env = { ...process.env };
  for (const [, n] of text.matchAll(/os\.environ\/([A-Za-z0-9_]+)/g)) {
    env[n] = /DATABASE_URL/.test(n) ? 'postgresql://user:pass@127.0.0.1:5432/litellm'
      : /REDIS_URL/.test(n) ? 'redis://127.0.0.1:6379'
      : /BASE|URL|ENDPOINT/.test(n) ? 'http://127.0.0.1:9'
      : /PORT/.test(n) ? '6379' : /HOST/.test(n) ? '127.0.0.1' : 'sk-placeholder-value';
  }
  return env;
}

e2e('tollgate config check on every real LiteLLM config in tests/fixtures/litellm-configs', async () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml'));
  assert.ok(files.length >= 20, `${files.length} fixtures`);
  const failed = [];
  for (const f of files) {
    const p = path.join(FIXTURES, f);
    const r = spawnSync(BIN, ['config', 'check', p], { encoding: 'utf8', timeout: 10000, env: envFor(readFileSync(p, 'utf8')) });
    if (KNOWN_GAPS.has(f)) assert.equal(r.status, 2, `${f} loads now: take it off KNOWN_GAPS`);
    else if (r.status !== 0) failed.push(`${f}: ${r.stderr}`);
  }
  assert.deepEqual(failed, []);
  // A cache type Tollgate does not have (semantic, s3, disk): an error naming the type.
  const refused = readdirSync(path.join(FIXTURES, 'refused')).filter((f) => f.endsWith('.yaml'));
  assert.ok(refused.length >= 3, `${refused.length} refused fixtures`);
  for (const f of refused) {
    const p = path.join(FIXTURES, 'refused', f);
    const text = readFileSync(p, 'utf8');
    const type = /cache_params:\s*(?:#.*)?\n\s+type:\s*"?([A-Za-z0-9_-]+)/.exec(text)?.[1];
    assert.ok(type, `${f}: no cache_params.type`);
    const r = spawnSync(BIN, ['config', 'check', p], { encoding: 'utf8', timeout: 10000, env: envFor(text) });
    assert.equal(r.status, 2, `${f}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr + r.stdout, new RegExp(`litellm_settings\\.cache_params\\.type \\(line \\d+\\): cache type '${type}' is not supported`), f);
  }
  for (const f of readdirSync(path.join(FIXTURES, 'invalid-yaml'))) {
    const r = spawnSync(BIN, ['config', 'check', path.join(FIXTURES, 'invalid-yaml', f)], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 2, f);
    assert.match(r.stderr + r.stdout, /\(line \d+\): invalid YAML \(column \d+\)/, f);
  }
}, { timeout: 60000 });

test_config_check();

function test_config_check() {
  e2e('config check: an unsupported provider is a warning (exit 0); PyYAML numbers load; an unclosed quote is an error with line and column', async () => {
    const sm = check('sm.yaml', 'model_list:\n  - model_name: m\n    litellm_params:\n      model: replicate/x\n');
    assert.equal(sm.code, 0, sm.out);
    assert.match(sm.out, /model_list\[0\]\.litellm_params\.model.*replicate.*not supported/);
    const nums = check('nums.yaml',
      'model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/m\n      api_base: http://127.0.0.1:9/v1\n      tpm: 20_000\n      rpm: 1_000\n      input_cost_per_token: 0.000_001\n');
    assert.equal(nums.code, 0, nums.out);
    const open = check('open.yaml', 'general_settings:\n  master_key: "sk-1234\nmodel_list: []\n');
    assert.equal(open.code, 2, open.out);
    assert.match(open.out, /\(line 2\): invalid YAML \(column 15\): a quoted string is never closed/);
  });
}

e2e('/team/info, /user/info, /customer/info and /organization/info carry the spend the ledger holds; budget_reset_at is ISO 8601', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'sp-paid', 'sp-up')] }));
  const org = await gw.admin('/organization/new', { organization_alias: 'sp-org', max_budget: 50 });
  const team = await gw.admin('/team/new', { team_alias: 'sp-team', max_budget: 10, budget_duration: '30d', organization_id: org.organization_id });
  await gw.admin('/user/new', { user_id: 'sp-alice', max_budget: 5, budget_duration: '1d', auto_create_key: false });
  await gw.admin('/customer/new', { user_id: 'sp-customer', max_budget: 2 });
  const k = await gw.generateKey({ team_id: team.team_id, user_id: 'sp-alice', max_budget: 3, budget_duration: '1h' });
  await mock.script('sp-up', [{ content: 'one two three', completion_tokens: 3 }]);
  for (let i = 0; i < 3; i++) assert.equal((await chat(gw, k.key, hi('sp-paid', { user: 'sp-customer' }))).status, 200);
  const spent = await spendNanos(gw, k.key);
  assert.ok(spent > 0);
  const near = (dollarsValue, what) => assert.ok(Math.abs(Number(dollarsValue) * 1e9 - spent) < 1, `${what}: ${dollarsValue} vs ${spent / 1e9}`);
  const ti = (await gw.admin(`/team/info?team_id=${team.team_id}`)).team_info;
  near(ti.spend, 'team spend');
  assert.match(ti.budget_reset_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  near((await gw.admin('/user/info?user_id=sp-alice')).user_info.spend, 'user spend');
  near((await gw.admin('/customer/info?end_user_id=sp-customer')).spend, 'customer spend');
  near((await gw.admin(`/organization/info?organization_id=${org.organization_id}`)).spend, 'organization spend');
  const ki = await gw.keyInfo(k.key);
  assert.match(ki.budget_reset_at, /^\d{4}-\d\d-\d\dT/, 'the key\'s window end, as LiteLLM shows it');
  assert.ok(Math.abs(Date.parse(ki.budget_reset_at) - ki.budget_reset_at_ms) < 1000);
  const untouched = await gw.admin('/team/new', { team_alias: 'sp-idle' });
  assert.equal(Number((await gw.admin(`/team/info?team_id=${untouched.team_id}`)).team_info.spend), 0);
});

e2e('wildcard routing: "*" and "openai/*" pass the requested model through, an exact group wins, fallbacks may name wildcard-served models, prices follow the resolved model', async (ctx) => {
  const { mock } = state;
  const base = `${mock.url}/v1`;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      { model_name: '*', litellm_params: { model: 'openai/*', api_base: base, api_key: 'sk-mock-upstream-key' } },
      { model_name: 'openai/*', litellm_params: { model: 'openai/*', api_base: base, api_key: 'sk-mock-upstream-key', input_cost_per_token: '0.000001', output_cost_per_token: '0.000002' } },
      paidDeployment(mock, 'wc-exact', 'wc-exact-up'),
      paidDeployment(mock, 'wc-primary', 'wc-primary-up'),
    ],
    litellm_settings: { fallbacks: [{ 'wc-primary': ['wc-fallback-model'] }] },
  }));
  assert.doesNotMatch(gw.logs(), /wildcard model names are not supported/);
  for (const m of ['wc-any-model', 'wc-exact-up', 'wc-other-up', 'wc-fallback-model', 'gpt-4o-mini', 'wc-no-price'])
    await mock.script(m, [{ content: `from ${m}`, completion_tokens: 2 }]);
  const any = await gw.fetch('/v1/chat/completions', { body: hi('wc-any-model') });
  assert.equal(any.status, 200, any.text);
  assert.equal(any.json.choices[0].message.content, 'from wc-any-model', '"*" sent the requested name upstream');
  const exact = await gw.fetch('/v1/chat/completions', { body: hi('wc-exact') });
  assert.equal(exact.json.choices[0].message.content, 'from wc-exact-up', 'an exact group wins over "*"');
  const prefixed = await gw.fetch('/v1/chat/completions', { body: hi('openai/wc-other-up') });
  assert.equal(prefixed.status, 200, prefixed.text);
  assert.equal(prefixed.json.choices[0].message.content, 'from wc-other-up', '"openai/*" sends what its star matched');
  assert.equal(prefixed.headers.get('x-litellm-model-group'), 'openai/wc-other-up');

  await mock.script('wc-primary-up', [{ status: 500, error: 'server_error' }]);
  const fb = await gw.fetch('/v1/chat/completions', { body: hi('wc-primary') });
  assert.equal(fb.status, 200, fb.text);
  assert.equal(fb.json.choices[0].message.content, 'from wc-fallback-model', 'a fallback to a name "*" serves');

  // The caller's text becomes the upstream model: only a model identifier passes a wildcard.
  for (const bad of ['openai/x/../y', 'x?api-version=1#', 'a b', 'openai/'])  {
    const r = await gw.fetch('/v1/chat/completions', { body: hi(bad) });
    assert.equal(r.status, 400, `${bad}: ${r.text}`);
    assert.equal(r.json.error.code, 'model_not_found');
  }
  // One caller's name that the provider refuses (403) does not shut the wildcard for others.
  await mock.script('wc-forbidden', [{ status: 403, error: 'permission_error' }]);
  for (let i = 0; i < 3; i++) assert.notEqual((await gw.fetch('/v1/chat/completions', { body: hi('wc-forbidden') })).status, 200);
  const still = await gw.fetch('/v1/chat/completions', { body: hi('wc-any-model') });
  assert.equal(still.status, 200, `the wildcard still serves: ${still.text}`);
  // Metric labels name the pattern, never the caller's free-form model name.
  // (A served request is counted just after its answer is written: wait for the last one.)
  const text = await waitFor(async () => {
    const t = await metricsText(gw);
    return metricValue(t, 'tollgate_requests_total', { model_group: '*' }) >= 5 ? t : null;
  }, { what: 'five requests counted under model_group "*"' });
  assert.ok(!text.includes('wc-any-model') && !text.includes('wc-forbidden'), 'no caller-chosen name in /metrics');

  // Money: a budgeted key is admitted where the resolved model has a price, refused where not.
  // The override price of `openai/*` applies to every name it serves: exactly the bill.
  const k1 = await gw.generateKey({ max_budget: 1 });
  await mock.script('wc-keyed-up', [{ content: 'keyed', completion_tokens: 7 }]);
  const overridden = await chat(gw, k1.key, hi('openai/wc-keyed-up'));
  assert.equal(overridden.status, 200, overridden.text);
  await expectSpend(gw, k1.key, await mockBillNanos(mock, 'wc-keyed-up', { input: '0.000001', output: '0.000002' }),
    'charged at the wildcard deployment\'s price');
  const k = await gw.generateKey({ max_budget: 1 });
  const priced = await chat(gw, k.key, hi('gpt-4o-mini'));
  assert.equal(priced.status, 200, `gpt-4o-mini is in the price table: ${priced.text}`);
  // Settlement runs just after the response is written: wait for it (as expectSpend does).
  const spent = await waitFor(async () => {
    const s = await spendNanos(gw, k.key);
    return s > 0 ? s : null;
  }, { timeoutMs: 2000, what: 'the charge at the table price of the resolved model' });
  assert.ok(spent > 0, 'charged at the table price of the resolved model');
  const unpriced = await chat(gw, k.key, hi('wc-no-price'));
  assert.notEqual(unpriced.status, 200, 'a model with no price is refused where a budget attaches');
  assert.equal((await mock.model('wc-no-price')).requests, 0, 'and never sent');
  assert.equal(await spendNanos(gw, k.key), spent);
});
