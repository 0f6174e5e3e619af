// The router: retries with Retry-After, fallbacks by failure class, caller errors,
// cooldown, max_fallbacks, and the primary's own error when everything fails.
import assert from 'node:assert/strict';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, chatBody, rejectsWith, sleep,
} from './harness.mjs';

const state = useMock();
const OK = (content) => ({ content, completion_tokens: content.split(' ').length });

e2e('429 with Retry-After: 1 is retried after the given delay', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'rl', 'rl-model', { id: 'rl-1' })],
    router_settings: { num_retries: 2 },
  }));
  await mock.script('rl-model', [
    { error: 'rate_limit_exceeded', retry_after: 1 },
    OK('served after retry'),
  ]);

  const t0 = performance.now();
  const { data, response } = await gw.openai().chat.completions.create(chatBody('rl')).withResponse();
  const elapsed = performance.now() - t0;

  assert.equal(data.choices[0].message.content, 'served after retry');
  assert.ok(elapsed >= 950, `the retry waited for Retry-After (elapsed ${elapsed.toFixed(0)} ms)`);
  assert.ok(elapsed < 4000, `but not much longer (elapsed ${elapsed.toFixed(0)} ms)`);
  assert.equal(response.headers.get('x-litellm-attempted-retries'), '1');
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '0');
  const m = await mock.model('rl-model');
  assert.equal(m.requests, 2);
  assert.equal(m.failed, 1);
  assert.equal(m.succeeded, 1);
});

e2e('retry-after-ms is honoured too (1500 ms)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'rlms', 'rlms-model')],
    router_settings: { num_retries: 1 },
  }));
  await mock.script('rlms-model', [
    { error: 'rate_limit_exceeded', retry_after: 1, retry_after_ms: 1500 },
    OK('served after retry'),
  ]);
  const t0 = performance.now();
  const { response } = await gw.openai().chat.completions.create(chatBody('rlms')).withResponse();
  const elapsed = performance.now() - t0;
  assert.ok(elapsed >= 1450, `waited retry-after-ms (elapsed ${elapsed.toFixed(0)} ms)`);
  assert.ok(elapsed < 4500, `elapsed ${elapsed.toFixed(0)} ms`);
  assert.equal(response.headers.get('x-litellm-attempted-retries'), '1');
  assert.equal((await mock.model('rlms-model')).requests, 2);
});

e2e('500s are retried within the group (num_retries)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'flaky', 'flaky-model')],
    router_settings: { num_retries: 2 },
  }));
  await mock.script('flaky-model', [{ error: 'server_error' }, { error: 'server_error' }, OK('third time lucky')]);
  const { data, response } = await gw.openai().chat.completions.create(chatBody('flaky')).withResponse();
  assert.equal(data.choices[0].message.content, 'third time lucky');
  assert.equal(response.headers.get('x-litellm-attempted-retries'), '2');
  assert.equal((await mock.model('flaky-model')).requests, 3);
});

e2e('retries stop at num_retries and the client gets the upstream error', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'down', 'down-model')],
    router_settings: { num_retries: 2 },
  }));
  await mock.script('down-model', [{ error: 'server_error' }]);
  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('down')));
  assert.equal(err.status, 500, String(err));
  assert.equal(err.headers?.get('x-litellm-attempted-retries'), '2');
  assert.equal((await mock.model('down-model')).requests, 3, '1 attempt + 2 retries');
});

e2e('a primary returning 500 is served by its fallback', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'fb-primary', 'fb-primary-model', { id: 'fb-primary-1' }),
      openaiDeployment(mock, 'fb-backup', 'fb-backup-model', { id: 'fb-backup-1' }),
      openaiDeployment(mock, 'fb-unused', 'fb-unused-model'),
    ],
    litellm_settings: { fallbacks: [{ 'fb-primary': ['fb-backup'] }, { 'fb-backup': ['fb-unused'] }] },
  }));
  await mock.script('fb-primary-model', [{ error: 'server_error' }]);
  await mock.script('fb-backup-model', [OK('from the backup')]);

  const { data, response } = await gw.openai().chat.completions.create(chatBody('fb-primary')).withResponse();
  assert.equal(data.choices[0].message.content, 'from the backup');
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal(response.headers.get('x-litellm-model-id'), 'fb-backup-1');
  assert.deepEqual(await mock.requests('fb-primary-model', 'fb-backup-model', 'fb-unused-model'),
    { 'fb-primary-model': 1, 'fb-backup-model': 1, 'fb-unused-model': 0 });
});

e2e('a 400 invalid_request is neither retried nor fallen back', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'strict', 'strict-model'),
      openaiDeployment(mock, 'strict-backup', 'strict-backup-model'),
    ],
    router_settings: { num_retries: 2 },
    litellm_settings: {
      fallbacks: [{ strict: ['strict-backup'] }],
      context_window_fallbacks: [{ strict: ['strict-backup'] }],
      content_policy_fallbacks: [{ strict: ['strict-backup'] }],
      default_fallbacks: ['strict-backup'],
    },
  }));
  const upstream = await mock.direct('/v1/chat/completions', chatBody('strict-model'), { error: 'invalid_request' });
  assert.equal(upstream.status, 400);
  await mock.reset();
  await mock.script('strict-model', [{ error: 'invalid_request' }]);

  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('strict')));
  assert.equal(err.status, 400, String(err));
  assert.equal(err.error?.type, 'invalid_request_error');
  assert.equal(err.error?.message, upstream.json.error.message, 'the upstream error message is passed through');
  assert.equal(err.headers.get('x-litellm-attempted-retries'), '0');
  assert.equal(err.headers.get('x-litellm-attempted-fallbacks'), '0');
  assert.deepEqual(await mock.requests('strict-model', 'strict-backup-model'),
    { 'strict-model': 1, 'strict-backup-model': 0 });
});

e2e('context overflow goes to context_window_fallbacks, not to fallbacks', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'ctx-small', 'ctx-small-model'),
      openaiDeployment(mock, 'ctx-general', 'ctx-general-model'),
      openaiDeployment(mock, 'ctx-large', 'ctx-large-model', { id: 'ctx-large-1' }),
    ],
    router_settings: { num_retries: 1 },
    litellm_settings: {
      fallbacks: [{ 'ctx-small': ['ctx-general'] }],
      context_window_fallbacks: [{ 'ctx-small': ['ctx-large'] }],
    },
  }));
  await mock.script('ctx-small-model', [{ error: 'context_length_exceeded' }]);
  await mock.script('ctx-large-model', [OK('large context answer')]);

  const { data, response } = await gw.openai().chat.completions.create(chatBody('ctx-small')).withResponse();
  assert.equal(data.choices[0].message.content, 'large context answer');
  assert.equal(response.headers.get('x-litellm-model-id'), 'ctx-large-1');
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.deepEqual(await mock.requests('ctx-small-model', 'ctx-general-model', 'ctx-large-model'),
    { 'ctx-small-model': 1, 'ctx-general-model': 0, 'ctx-large-model': 1 },
    'overflow is not retried on the same deployment and skips plain fallbacks');
});

e2e('content filter goes to content_policy_fallbacks, not to fallbacks', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'cp-main', 'cp-main-model'),
      openaiDeployment(mock, 'cp-general', 'cp-general-model'),
      openaiDeployment(mock, 'cp-lenient', 'cp-lenient-model'),
    ],
    litellm_settings: {
      fallbacks: [{ 'cp-main': ['cp-general'] }],
      content_policy_fallbacks: [{ 'cp-main': ['cp-lenient'] }],
    },
  }));
  await mock.script('cp-main-model', [{ error: 'content_filter' }]);
  await mock.script('cp-lenient-model', [OK('lenient answer')]);
  const { data, response } = await gw.openai().chat.completions.create(chatBody('cp-main')).withResponse();
  assert.equal(data.choices[0].message.content, 'lenient answer');
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.deepEqual(await mock.requests('cp-main-model', 'cp-general-model', 'cp-lenient-model'),
    { 'cp-main-model': 1, 'cp-general-model': 0, 'cp-lenient-model': 1 });
});

e2e('default_fallbacks apply when a group has no fallbacks of its own', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'df-main', 'df-main-model'),
      openaiDeployment(mock, 'df-default', 'df-default-model'),
    ],
    litellm_settings: { default_fallbacks: ['df-default'] },
  }));
  await mock.script('df-main-model', [{ error: 'overloaded' }]);
  await mock.script('df-default-model', [OK('default answer')]);
  const { data, response } = await gw.openai().chat.completions.create(chatBody('df-main')).withResponse();
  assert.equal(data.choices[0].message.content, 'default answer');
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.deepEqual(await mock.requests('df-main-model', 'df-default-model'), { 'df-main-model': 1, 'df-default-model': 1 });
});

e2e("every fallback fails: the client gets the primary's own error (status and body)", async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'ov-primary', 'ov-primary-model'),
      openaiDeployment(mock, 'ov-backup', 'ov-backup-model'),
    ],
    litellm_settings: { fallbacks: [{ 'ov-primary': ['ov-backup'] }] },
  }));
  // What the provider itself says for each behaviour (the model name is the same as the
  // gateway will send, so a message naming the model compares equal).
  const primaryBody = await mock.direct('/v1/chat/completions', chatBody('ov-primary-model'), { error: 'overloaded' });
  const backupBody = await mock.direct('/v1/chat/completions', chatBody('ov-backup-model'), { error: 'server_error' });
  assert.equal(primaryBody.status, 503);
  assert.equal(backupBody.status, 500);
  assert.notEqual(primaryBody.json.error.message, backupBody.json.error.message, 'the two errors are distinguishable');
  await mock.reset();
  await mock.script('ov-primary-model', [{ error: 'overloaded' }]);
  await mock.script('ov-backup-model', [{ error: 'server_error' }]);

  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('ov-primary')));
  assert.equal(err.status, 503, String(err));
  assert.equal(err.error?.message, primaryBody.json.error.message);
  assert.equal(err.error?.type, primaryBody.json.error.type);
  assert.equal(err.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.deepEqual(await mock.requests('ov-primary-model', 'ov-backup-model'), { 'ov-primary-model': 1, 'ov-backup-model': 1 });
});

e2e('max_fallbacks bounds the fallback targets attempted', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: ['mf-a', 'mf-b', 'mf-c', 'mf-d'].map((g) => openaiDeployment(mock, g, `${g}-model`)),
    router_settings: { max_fallbacks: 2 },
    litellm_settings: { fallbacks: [{ 'mf-a': ['mf-b', 'mf-c', 'mf-d'] }] },
  }));
  for (const g of ['mf-a', 'mf-b', 'mf-c', 'mf-d']) await mock.script(`${g}-model`, [{ error: 'server_error' }]);
  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('mf-a')));
  assert.equal(err.status, 500, String(err));
  assert.equal(err.headers.get('x-litellm-attempted-fallbacks'), '2');
  assert.deepEqual(await mock.requests('mf-a-model', 'mf-b-model', 'mf-c-model', 'mf-d-model'),
    { 'mf-a-model': 1, 'mf-b-model': 1, 'mf-c-model': 1, 'mf-d-model': 0 });
});

e2e('cooldown takes a failing deployment out of rotation and brings it back after cooldown_time', async (ctx) => {
  const { mock } = state;
  const COOLDOWN_S = 2;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'cool', 'cool-bad-model', { id: 'cool-bad' }),
      openaiDeployment(mock, 'cool', 'cool-good-model', { id: 'cool-good' }),
    ],
    router_settings: { routing_strategy: 'simple-shuffle', num_retries: 3, allowed_fails: 1, cooldown_time: COOLDOWN_S },
  }));
  await mock.script('cool-bad-model', [{ error: 'server_error' }]);
  const client = gw.openai();
  const ask = async () => {
    const { response } = await client.chat.completions.create(chatBody('cool')).withResponse();
    assert.equal(response.headers.get('x-litellm-model-id'), 'cool-good', 'only the good deployment answers');
  };

  // Phase 1: traffic until the bad deployment has failed more than allowed_fails (1) times.
  // Every request still succeeds: a failed attempt is retried on the group.
  let sent = 0;
  while ((await mock.model('cool-bad-model')).failed < 2) {
    assert.ok(sent < 40, `the shuffle should pick the bad deployment twice within 40 requests: ${JSON.stringify(await mock.model('cool-bad-model'))}`);
    await ask();
    sent++;
  }
  const tCooled = performance.now();
  const badAtCooldown = (await mock.model('cool-bad-model')).requests;
  assert.equal(badAtCooldown, 2, 'cooled down right after the second failure (allowed_fails: 1)');

  // Phase 2: within cooldown_time, everything goes to the good deployment.
  const goodBefore = (await mock.model('cool-good-model')).requests;
  for (let i = 0; i < 12; i++) await ask();
  assert.ok(performance.now() - tCooled < COOLDOWN_S * 1000 - 200, 'phase 2 ran inside the cooldown window');
  assert.equal((await mock.model('cool-bad-model')).requests, badAtCooldown, 'no request reached the cooled-down deployment');
  assert.equal((await mock.model('cool-good-model')).requests, goodBefore + 12);

  // Phase 3: after cooldown_time the bad deployment is tried again.
  await sleep(Math.max(0, COOLDOWN_S * 1000 + 150 - (performance.now() - tCooled)));
  for (let i = 0; i < 30 && (await mock.model('cool-bad-model')).requests === badAtCooldown; i++) await ask();
  assert.ok((await mock.model('cool-bad-model')).requests > badAtCooldown,
    'after cooldown_time the deployment is back in rotation');
}, { timeout: 30000 });

// (router_settings.timeout is LiteLLM's per-call timeout, issue 13: the whole request's deadline
// is the policy's deadline_ms.)
e2e('a single-deployment group retries honour the request deadline (deadline_ms)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'slowrl', 'slowrl-model')],
    router_settings: { num_retries: 3, timeout: 2 },
    fallback_policy: { model_groups: { slowrl: { budgets: { deadline_ms: 2000 } } } },
  }));
  // Every attempt is told to come back in 5 s: waiting would overrun the 2 s deadline.
  await mock.script('slowrl-model', [{ error: 'rate_limit_exceeded', retry_after: 5 }]);
  const t0 = performance.now();
  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('slowrl')));
  const elapsed = performance.now() - t0;
  assert.ok(elapsed < 3000, `gave up within the request timeout (elapsed ${elapsed.toFixed(0)} ms)`);
  assert.ok([429, 408].includes(err.status), `429 (the upstream's) or 408, got ${err.status}`);
  assert.equal((await mock.model('slowrl-model')).requests, 1, 'no retry that would start after the deadline');
});

e2e('rpm: a deployment does not receive more than its requests per minute', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'rpm', 'rpm-small-model', { id: 'rpm-small', rpm: 2 }),
      openaiDeployment(mock, 'rpm', 'rpm-large-model', { id: 'rpm-large', rpm: 1000 }),
    ],
  }));
  const client = gw.openai();
  for (let i = 0; i < 12; i++) await client.chat.completions.create(chatBody('rpm'));
  const counts = await mock.requests('rpm-small-model', 'rpm-large-model');
  assert.ok(counts['rpm-small-model'] <= 2, `rpm 2 respected: ${JSON.stringify(counts)}`);
  assert.equal(counts['rpm-small-model'] + counts['rpm-large-model'], 12);
});

e2e('latency-based-routing prefers the faster deployment', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'lat', 'lat-slow-model', { id: 'lat-slow' }),
      openaiDeployment(mock, 'lat', 'lat-fast-model', { id: 'lat-fast' }),
    ],
    router_settings: { routing_strategy: 'latency-based-routing' },
  }));
  await mock.script('lat-slow-model', [{ latency_ms: 300 }]);
  const client = gw.openai();
  for (let i = 0; i < 12; i++) await client.chat.completions.create(chatBody('lat'));
  const counts = await mock.requests('lat-slow-model', 'lat-fast-model');
  assert.ok(counts['lat-slow-model'] <= 3, `the slow deployment got few requests: ${JSON.stringify(counts)}`);
  assert.equal(counts['lat-slow-model'] + counts['lat-fast-model'], 12);
});

e2e('simple-shuffle spreads load over the group', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'spread', 'spread-a-model'),
      openaiDeployment(mock, 'spread', 'spread-b-model'),
    ],
    router_settings: { routing_strategy: 'simple-shuffle' },
  }));
  const client = gw.openai();
  for (let i = 0; i < 30; i++) await client.chat.completions.create(chatBody('spread'));
  const counts = await mock.requests('spread-a-model', 'spread-b-model');
  // P(one side < 5 of 30 at p=0.5) is about 3e-4.
  assert.ok(counts['spread-a-model'] >= 5 && counts['spread-b-model'] >= 5, JSON.stringify(counts));
});

e2e('429 insufficient_quota (billing) is not retried; the client sees the 429 quota error', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'quota', 'quota-model')],
    router_settings: { num_retries: 2 },
  }));
  await mock.script('quota-model', [{ error: 'insufficient_quota' }]);
  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('quota')));
  assert.equal(err.status, 429, String(err));
  assert.equal(err.error?.code, 'insufficient_quota', JSON.stringify(err.error));
  assert.equal(err.headers.get('x-litellm-attempted-retries'), '0');
  assert.equal((await mock.model('quota-model')).requests, 1, 'a billing error is not retried');
});

e2e('an openai/... primary falls back to an anthropic/... group, translated', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'xp-gpt', 'xp-gpt-model'),
      anthropicDeployment(mock, 'xp-claude', 'xp-claude-model', { id: 'xp-claude-1' }),
    ],
    litellm_settings: { fallbacks: [{ 'xp-gpt': ['xp-claude'] }] },
  }));
  await mock.script('xp-gpt-model', [{ error: 'overloaded' }]);
  await mock.script('xp-claude-model', [OK('claude stepped in')]);
  const client = gw.openai();
  const { data, response } = await client.chat.completions.create(chatBody('xp-gpt', { max_tokens: 64 })).withResponse();
  assert.equal(data.choices[0].message.content, 'claude stepped in');
  assert.equal(data.usage.completion_tokens, 3);
  assert.equal(response.headers.get('x-litellm-model-id'), 'xp-claude-1');
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '1');
  const stream = await client.chat.completions.create(chatBody('xp-gpt', { max_tokens: 64, stream: true }));
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'claude stepped in');
  assert.deepEqual(await mock.requests('xp-gpt-model', 'xp-claude-model'), { 'xp-gpt-model': 2, 'xp-claude-model': 2 });
});
