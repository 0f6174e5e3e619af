// Routing constraints that are data boundaries (issue 11 §3): tag-based routing
// (router_settings.enable_tag_filtering + litellm_params.tags), and model_group_alias
// (regions: routing_regions.test.mjs). A fallback never crosses a boundary the caller may not cross: the skip and
// its reason are in the decision trace, and the upstream outside the boundary is sent nothing.
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

function tagConfig(mock, extra = {}) {
  return gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'g', 'free-model', priced({ tags: ['free'] })),
      openaiDeployment(mock, 'g', 'paid-model', priced({ tags: ['paid'] })),
      openaiDeployment(mock, 'g', 'default-model', priced({ tags: ['default'] })),
    ],
    router_settings: { enable_tag_filtering: true, ...extra },
  });
}

e2e('tag routing: a tagged request goes only to deployments with its tag, an untagged one to the default', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(tagConfig(mock));
  for (const m of ['free-model', 'paid-model', 'default-model']) await mock.script(m, [OK(`from ${m}`)]);
  const client = gw.openai();
  for (let i = 0; i < 6; i++) {
    const r = await client.chat.completions.create(chatBody('g', { tags: ['free'] }));
    assert.equal(r.choices[0].message.content, 'from free-model');
  }
  for (let i = 0; i < 3; i++) {
    const r = await client.chat.completions.create(chatBody('g', { metadata: { tags: ['paid'] } }));
    assert.equal(r.choices[0].message.content, 'from paid-model');
  }
  for (let i = 0; i < 3; i++) {
    const r = await client.chat.completions.create(chatBody('g'));
    assert.equal(r.choices[0].message.content, 'from default-model');
  }
  // A tag no deployment carries: the default deployment serves it (LiteLLM's rule).
  const r = await client.chat.completions.create(chatBody('g', { tags: ['nobody'] }));
  assert.equal(r.choices[0].message.content, 'from default-model');
  assert.deepEqual(await mock.requests('free-model', 'paid-model', 'default-model'),
    { 'free-model': 6, 'paid-model': 3, 'default-model': 4 });
});

e2e('tag routing: LiteLLM\'s x-litellm-tags header tags the request; a bad one is a 400 naming it', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(tagConfig(mock));
  for (const m of ['free-model', 'paid-model', 'default-model']) await mock.script(m, [OK(`from ${m}`)]);
  const { data, response } = await gw.openai().chat.completions
    .create(chatBody('g'), { headers: { 'x-litellm-tags': ' paid , extra' } }).withResponse();
  assert.equal(data.choices[0].message.content, 'from paid-model');
  assert.deepEqual((await spendLogOf(gw, response)).request_tags, ['paid', 'extra']);
  const err = await rejectsWith(gw.openai().chat.completions
    .create(chatBody('g'), { headers: { 'x-litellm-tags': 'x'.repeat(300) } }));
  assert.equal(err.status, 400);
  assert.equal(err.param, 'x-litellm-tags');
  assert.equal((await mock.model('paid-model')).requests, 1);
});

e2e('tag routing: a key\'s own tags route its requests', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(tagConfig(mock));
  for (const m of ['free-model', 'paid-model', 'default-model']) await mock.script(m, [OK(`from ${m}`)]);
  const key = await gw.generateKey({ tags: ['paid'] });
  const r = await gw.openai({ apiKey: key.key }).chat.completions.create(chatBody('g'));
  assert.equal(r.choices[0].message.content, 'from paid-model');
  assert.equal((await mock.model('paid-model')).requests, 1);
});

e2e('tag routing: a key\'s tags are a hard boundary: the request cannot widen it, and no default deployment outside it serves', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'g', 'eu-model', priced({ tags: ['eu'] })),
      openaiDeployment(mock, 'g', 'us-model', priced({ tags: ['us', 'default'] })),
      openaiDeployment(mock, 'us-only', 'us-only-model', priced({ tags: ['default'] })),
    ],
    router_settings: { enable_tag_filtering: true },
    litellm_settings: { fallbacks: [{ g: ['us-only'] }] },
  }));
  await mock.script('eu-model', [OK('eu answered')]);
  await mock.script('us-model', [OK('us answered')]);
  await mock.script('us-only-model', [OK('us-only answered')]);
  const key = await gw.generateKey({ tags: ['eu'] });
  const client = gw.openai({ apiKey: key.key });
  for (const extra of [{ tags: ['us'] }, { tags: ['nobody'] }, { metadata: { tags: ['default'] } }]) {
    const r = await client.chat.completions.create(chatBody('g', extra), { headers: { 'x-litellm-tags': 'us' } });
    assert.equal(r.choices[0].message.content, 'eu answered', JSON.stringify(extra));
  }
  // The key's boundary holds on the fallback too: eu-model fails, us-only (default-tagged) is skipped.
  await mock.script('eu-model', [{ error: 'server_error' }]);
  const err = await rejectsWith(client.chat.completions.create(chatBody('g')));
  assert.equal(err.status, 500, String(err));
  assert.deepEqual(await mock.requests('us-model', 'us-only-model'), { 'us-model': 0, 'us-only-model': 0 });
  const row = await spendLogOf(gw, err.headers);
  assert.deepEqual(row.skipped_fallbacks, [{ target: 'us-only', reason: 'tag_constraint' }]);
});

e2e('a fallback never crosses a tag boundary: the skip and its reason are in the trace, and the money matches', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'primary', 'primary-paid', priced({ tags: ['paid'] })),
      openaiDeployment(mock, 'outside', 'outside-free', priced({ tags: ['free'] })),
      openaiDeployment(mock, 'inside', 'inside-paid', priced({ tags: ['paid'] })),
    ],
    router_settings: { enable_tag_filtering: true },
    litellm_settings: { fallbacks: [{ primary: ['outside', 'inside'] }] },
  }));
  await mock.script('primary-paid', [{ error: 'server_error' }]);
  await mock.script('outside-free', [OK('outside answered')]);
  await mock.script('inside-paid', [OK('inside answered')]);
  const { data, response } = await gw.openai().chat.completions
    .create(chatBody('primary', { tags: ['paid'] })).withResponse();
  assert.equal(data.choices[0].message.content, 'inside answered');
  assert.equal((await mock.model('outside-free')).requests, 0, 'the target outside the boundary was sent nothing');
  const row = await spendLogOf(gw, response);
  assert.deepEqual(row.skipped_fallbacks, [{ target: 'outside', reason: 'tag_constraint' }]);
  const skip = row.decision.steps.find((s) => s.step === 'skip' && s.group === 'outside');
  assert.ok(skip, JSON.stringify(row.decision.steps));
  assert.match(skip.reason, /^tag_constraint: no deployment of model group 'outside' carries any of the request's tags \[paid\]/);
  // The charge follows the evidence: the primary's 500 error body is unbilled, the fallback's answer is.
  const bill = (await billOf(mock, 'inside-paid')) + 0;
  assert.ok(Math.abs(row.spend - bill) < 1e-9, `spend ${row.spend} vs the mock's bill ${bill}`);
});

e2e('no deployment within the tag boundary anywhere: 400, nothing sent, nothing charged', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'strict', 'strict-a', priced({ tags: ['a'] })),
      openaiDeployment(mock, 'other', 'other-b', priced({ tags: ['b'] })),
    ],
    router_settings: { enable_tag_filtering: true },
    litellm_settings: { fallbacks: [{ strict: ['other'] }] },
  }));
  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('strict', { tags: ['c'] })));
  assert.equal(err.status, 400, String(err));
  assert.equal(err.code, 'no_deployments_with_tag_routing');
  assert.match(err.message, /no deployment of model group 'strict' carries any of the request's tags \[c\]/);
  assert.deepEqual(await mock.requests('strict-a', 'other-b'), { 'strict-a': 0, 'other-b': 0 });
  const row = await spendLogOf(gw, err.headers);
  assert.equal(row.spend, 0);
  assert.deepEqual(row.skipped_fallbacks, [{ target: 'other', reason: 'tag_constraint' }]);
});

e2e('tag_filtering_match_any: false needs every tag of the request', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'g', 'one-tag', priced({ tags: ['eu-data'] })),
      openaiDeployment(mock, 'g', 'both-tags', priced({ tags: ['eu-data', 'hipaa'] })),
    ],
    router_settings: { enable_tag_filtering: true, tag_filtering_match_any: false },
  }));
  await mock.script('one-tag', [OK('one')]);
  await mock.script('both-tags', [OK('both')]);
  for (let i = 0; i < 4; i++) {
    const r = await gw.openai().chat.completions.create(chatBody('g', { tags: ['eu-data', 'hipaa'] }));
    assert.equal(r.choices[0].message.content, 'both');
  }
  assert.equal((await mock.model('one-tag')).requests, 0);
});

e2e('without enable_tag_filtering, tags do not route', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'g', 'only', priced({ tags: ['free'] }))],
  }));
  await mock.script('only', [OK('served')]);
  const r = await gw.openai().chat.completions.create(chatBody('g', { tags: ['paid'] }));
  assert.equal(r.choices[0].message.content, 'served');
});

e2e('model_group_alias: the alias is served by its group and logged as asked; a hidden alias is not listed', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'big', 'big-model', priced()),
      openaiDeployment(mock, 'small', 'small-model', priced()),
    ],
    router_settings: { model_group_alias: { 'gpt-4': 'big', legacy: { model: 'small', hidden: true } } },
  }));
  await mock.script('big-model', [OK('big answered')]);
  await mock.script('small-model', [OK('small answered')]);
  const { data, response } = await gw.openai().chat.completions.create(chatBody('gpt-4')).withResponse();
  assert.equal(data.choices[0].message.content, 'big answered');
  assert.equal(response.headers.get('x-litellm-model-group'), 'big');
  const row = await spendLogOf(gw, response);
  assert.equal(row.requested_model, 'gpt-4');
  assert.equal(row.model_group, 'big');
  assert.ok(Math.abs(row.spend - (await billOf(mock, 'big-model'))) < 1e-9);
  const hidden = await gw.openai().chat.completions.create(chatBody('legacy'));
  assert.equal(hidden.choices[0].message.content, 'small answered');
  const ids = (await gw.openai().models.list()).data.map((m) => m.id).sort();
  assert.deepEqual(ids, ['big', 'gpt-4', 'small']);
});

