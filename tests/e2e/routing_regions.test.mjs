// Region-based routing (issue 11 §3): allowed_model_region on keys, teams and end users
// against litellm_params.region_name. A fallback never leaves the region: the skip and its reason
// are in the decision trace, and the upstream outside the boundary is sent nothing.
import assert from 'node:assert/strict';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, chatBody, rejectsWith, spendLogOf,
} from './harness.mjs';

const state = useMock();
const IN = 0.000002;   // $ per prompt token on every deployment here
const OUT = 0.000008;  // $ per completion token
const priced = (extra = {}) => ({ input_cost_per_token: IN, output_cost_per_token: OUT, ...extra });
const OK = (content) => ({ content, completion_tokens: content.split(' ').length });

/// What the mock billed for `name`, in dollars, at this file's prices.
async function billOf(mock, name) {
  const m = await mock.model(name);
  return m.prompt_tokens * IN + m.completion_tokens * OUT;
}

function regionConfig(mock) {
  return gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'chat', 'chat-us', priced({ region_name: 'us' })),
      openaiDeployment(mock, 'chat', 'chat-eu', priced({ region_name: 'eu' })),
      openaiDeployment(mock, 'backup', 'backup-us', priced({ region_name: 'us' })),
      openaiDeployment(mock, 'backup', 'backup-eu', priced({ region_name: 'EU' })),
      openaiDeployment(mock, 'us-only', 'us-only-model', priced({ region_name: 'us' })),
      openaiDeployment(mock, 'anywhere', 'anywhere-model', priced()),
    ],
    litellm_settings: { fallbacks: [{ chat: ['us-only', 'anywhere', 'backup'] }, { 'us-only': ['anywhere'] }] },
  });
}

e2e('region: a key, team or end user with allowed_model_region is served only in that region', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(regionConfig(mock));
  for (const m of ['chat-us', 'chat-eu']) await mock.script(m, [OK(`from ${m}`)]);
  const euKey = await gw.generateKey({ allowed_model_region: 'eu' });
  assert.equal((await gw.keyInfo(euKey.key)).allowed_model_region, 'eu');
  for (let i = 0; i < 6; i++) {
    const r = await gw.openai({ apiKey: euKey.key }).chat.completions.create(chatBody('chat'));
    assert.equal(r.choices[0].message.content, 'from chat-eu');
  }
  await gw.admin('/team/new', { team_id: 'eu-team', allowed_model_region: 'eu' });
  const teamKey = await gw.generateKey({ team_id: 'eu-team' });
  for (let i = 0; i < 4; i++) {
    const r = await gw.openai({ apiKey: teamKey.key }).chat.completions.create(chatBody('chat'));
    assert.equal(r.choices[0].message.content, 'from chat-eu');
  }
  await gw.admin('/customer/new', { user_id: 'eu-customer', allowed_model_region: 'eu' });
  for (let i = 0; i < 4; i++) {
    const r = await gw.openai().chat.completions.create(chatBody('chat', { user: 'eu-customer' }));
    assert.equal(r.choices[0].message.content, 'from chat-eu');
  }
  // /customer/update moves the end user to another region; a bad region stores nothing.
  const bad = await gw.fetch('/customer/update', { body: { user_id: 'eu-customer', allowed_model_region: 'ap' } });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.error.param, 'allowed_model_region');
  const upd = await gw.admin('/customer/update', { user_id: 'eu-customer', allowed_model_region: 'us' });
  assert.equal(upd.allowed_model_region, 'us');
  const r = await gw.openai().chat.completions.create(chatBody('chat', { user: 'eu-customer' }));
  assert.equal(r.choices[0].message.content, 'from chat-us');
  assert.equal((await gw.fetch('/customer/update', { body: { user_id: 'nobody', alias: 'x' } })).status, 404);
  assert.equal((await mock.model('chat-us')).requests, 1);
  assert.equal((await mock.model('chat-eu')).requests, 14);
});

e2e('region: a fallback never leaves the region; targets outside it are skipped with their reason', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(regionConfig(mock));
  await mock.script('chat-eu', [{ error: 'server_error' }]);
  await mock.script('backup-eu', [OK('eu backup answered')]);
  for (const m of ['chat-us', 'us-only-model', 'anywhere-model', 'backup-us']) await mock.script(m, [OK(`from ${m}`)]);
  const euKey = await gw.generateKey({ allowed_model_region: 'eu' });
  const { data, response } = await gw.openai({ apiKey: euKey.key }).chat.completions.create(chatBody('chat')).withResponse();
  assert.equal(data.choices[0].message.content, 'eu backup answered');
  assert.deepEqual(await mock.requests('chat-us', 'us-only-model', 'anywhere-model', 'backup-us'),
    { 'chat-us': 0, 'us-only-model': 0, 'anywhere-model': 0, 'backup-us': 0 });
  const row = await spendLogOf(gw, response);
  assert.deepEqual(row.skipped_fallbacks, [
    { target: 'us-only', reason: 'region_constraint' },
    { target: 'anywhere', reason: 'region_constraint' },
  ]);
  const skips = row.decision.steps.filter((s) => s.step === 'skip').map((s) => s.reason);
  assert.ok(skips.some((r) => /^region_constraint: no deployment of model group 'us-only' is in the allowed region \(key allows region 'eu'\)/.test(r)), skips.join('\n'));
  const bill = await billOf(mock, 'backup-eu');
  assert.ok(Math.abs(row.spend - bill) < 1e-9, `spend ${row.spend} vs bill ${bill}`);
});

e2e('region: nothing in the region anywhere is a 400 with nothing sent; conflicting regions leave nothing', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(regionConfig(mock));
  const euKey = await gw.generateKey({ allowed_model_region: 'eu' });
  const err = await rejectsWith(gw.openai({ apiKey: euKey.key }).chat.completions.create(chatBody('us-only')));
  assert.equal(err.status, 400, String(err));
  assert.equal(err.code, 'region_not_allowed');
  assert.equal((await mock.model('us-only-model')).requests, 0);
  assert.equal((await mock.model('anywhere-model')).requests, 0);
  const refused = await spendLogOf(gw, err.headers);
  assert.equal(refused.spend, 0, 'nothing sent, nothing charged');
  assert.deepEqual(refused.skipped_fallbacks, [{ target: 'anywhere', reason: 'region_constraint' }]);
  // A key allowed 'us' whose end user is allowed 'eu': no deployment is in both.
  await gw.admin('/customer/new', { user_id: 'eu-user', allowed_model_region: 'eu' });
  const usKey = await gw.generateKey({ allowed_model_region: 'us' });
  const both = await rejectsWith(gw.openai({ apiKey: usKey.key }).chat.completions.create(chatBody('chat', { user: 'eu-user' })));
  assert.equal(both.status, 400);
  assert.match(both.message, /key allows region 'us', end_user allows region 'eu'/);
});

e2e('region: when the primary has nothing in the region and the fallback inside it fails, the client gets the fallback\'s error', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'us-only', 'us-only-model', priced({ region_name: 'us' })),
      openaiDeployment(mock, 'backup', 'backup-eu', priced({ region_name: 'eu' })),
    ],
    litellm_settings: { fallbacks: [{ 'us-only': ['backup'] }] },
  }));
  await mock.script('us-only-model', [OK('never')]);
  await mock.script('backup-eu', [{ error: 'server_error' }]);
  const euKey = await gw.generateKey({ allowed_model_region: 'eu' });
  const err = await rejectsWith(gw.openai({ apiKey: euKey.key }).chat.completions.create(chatBody('us-only')));
  assert.equal(err.status, 500, `the fallback's 500, not the boundary's 400: ${err}`);
  assert.equal((await mock.model('us-only-model')).requests, 0);
  assert.equal((await mock.model('backup-eu')).requests, 1);
  // The fallback's error body is unbilled by the provider: the charge follows that evidence.
  const row = await spendLogOf(gw, err.headers);
  assert.equal(row.spend, await billOf(mock, 'backup-eu'));
  assert.equal(row.spend, 0);
});

e2e('region: a region no deployment has is refused by the admin API, naming the field', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(regionConfig(mock));
  for (const [p, body] of [
    ['/key/generate', { allowed_model_region: 'ap' }],
    ['/team/new', { team_id: 't-ap', allowed_model_region: 'ap' }],
    ['/customer/new', { user_id: 'c-ap', allowed_model_region: 'ap' }],
    ['/key/generate', { allowed_model_region: 7 }],
  ]) {
    const r = await gw.fetch(p, { body });
    assert.equal(r.status, 400, `${p}: ${r.text}`);
    assert.equal(r.json.error.param, 'allowed_model_region', r.text);
  }
  const teams = await gw.fetch('/team/info?team_id=t-ap', { method: 'GET' });
  assert.equal(teams.status, 404, 'nothing was stored');
});
