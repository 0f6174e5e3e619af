// LiteLLM router settings Tollgate maps onto its own policy (issue 11 §2): retry_policy and
// allowed_fails_policy (per exception class → failure class), per-deployment max_retries, and
// default request parameters in litellm_params (a default max_tokens bounds the reservation).
import assert from 'node:assert/strict';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, chatBody, rejectsWith, spendLogOf, circuitOf,
} from './harness.mjs';

const state = useMock();
const OK = (content) => ({ content, completion_tokens: content.split(' ').length });

e2e('retry_policy: RateLimitErrorRetries bounds retries after 429s, InternalServerErrorRetries after 500s', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'rl', 'rl-model'),
      openaiDeployment(mock, 'ise', 'ise-model'),
      openaiDeployment(mock, 'backup', 'backup-model'),
    ],
    router_settings: {
      num_retries: 5,
      retry_policy: { RateLimitErrorRetries: 1, InternalServerErrorRetries: 0 },
    },
    litellm_settings: { fallbacks: [{ rl: ['backup'] }, { ise: ['backup'] }] },
  }));
  await mock.script('rl-model', [{ error: 'rate_limit_exceeded' }]);
  await mock.script('ise-model', [{ error: 'server_error' }]);
  await mock.script('backup-model', [OK('backup answered')]);

  const a = await gw.openai().chat.completions.create(chatBody('rl')).withResponse();
  assert.equal(a.data.choices[0].message.content, 'backup answered');
  assert.equal(a.response.headers.get('x-litellm-attempted-retries'), '1');
  assert.equal((await mock.model('rl-model')).requests, 2, 'one attempt and one retry (retry_policy), not five');
  const row = await spendLogOf(gw, a.response);
  assert.ok(row.decision.steps.some((s) => s.step === 'fallback' && /retry_policy: at most 1 retries after retryable_capacity/.test(s.reason)),
    JSON.stringify(row.decision.steps));

  const b = await gw.openai().chat.completions.create(chatBody('ise')).withResponse();
  assert.equal(b.data.choices[0].message.content, 'backup answered');
  assert.equal(b.response.headers.get('x-litellm-attempted-retries'), '0');
  assert.equal((await mock.model('ise-model')).requests, 1);
});

e2e('retry_policy never raises the retry budget: num_retries stays the ceiling', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'g', 'g-model')],
    router_settings: { num_retries: 1, retry_policy: { InternalServerErrorRetries: 4 } },
  }));
  await mock.script('g-model', [{ error: 'server_error' }]);
  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('g')));
  assert.equal(err.status, 500);
  assert.equal((await mock.model('g-model')).requests, 2);
});

e2e('litellm_params.max_retries: a deployment is retried at most that often, then the walk goes on', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'g', 'solo-model', { max_retries: 1 }),
      openaiDeployment(mock, 'fb', 'fb-model'),
    ],
    router_settings: { num_retries: 4 },
    litellm_settings: { fallbacks: [{ g: ['fb'] }] },
  }));
  await mock.script('solo-model', [{ error: 'server_error' }]);
  await mock.script('fb-model', [OK('fallback answered')]);
  const r = await gw.openai().chat.completions.create(chatBody('g'));
  assert.equal(r.choices[0].message.content, 'fallback answered');
  assert.equal((await mock.model('solo-model')).requests, 2, 'the first attempt and one retry');
});

e2e('allowed_fails_policy: rate limits get their own threshold and do not count toward allowed_fails', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'g', 'a-model', { id: 'dep-a' }),
      openaiDeployment(mock, 'g', 'b-model', { id: 'dep-b' }),
    ],
    router_settings: { allowed_fails: 1, allowed_fails_policy: { RateLimitErrorAllowedFails: 3 } },
  }));
  await mock.script('a-model', [{ error: 'rate_limit_exceeded' }]);
  await mock.script('b-model', [OK('b answered')]);
  // Each request fails on a then is served by b (a 429 sends the walk to the group's other
  // deployment), or is served by b directly: send until a has failed 4 times.
  for (let i = 0; i < 40 && (await mock.model('a-model')).requests < 4; i++) {
    const before = (await mock.model('a-model')).requests;
    await gw.openai().chat.completions.create(chatBody('g')).catch(() => {});
    const after = (await mock.model('a-model')).requests;
    const c = await circuitOf(gw, 'deployments', 'dep-a');
    if (after > before && after <= 3) assert.equal(c.state, 'closed', `after ${after} rate limits: ${JSON.stringify(c)}`);
  }
  const c = await circuitOf(gw, 'deployments', 'dep-a');
  assert.equal((await mock.model('a-model')).requests, 4);
  assert.equal(c.state, 'open', JSON.stringify(c));
  assert.equal(c.reason, '4 consecutive retryable_capacity failures (allowed_fails_policy)');
});

e2e('default request parameters in litellm_params are sent when the caller sets none, and only to that deployment', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'g', 'tuned-model', { temperature: 0.2, seed: 7, presence_penalty: -0.5 }),
      openaiDeployment(mock, 'fb', 'plain-model'),
    ],
    router_settings: { num_retries: 0 },
    litellm_settings: { fallbacks: [{ g: ['fb'] }] },
  }));
  await mock.script('tuned-model', [{ echo_params: true }]);
  const a = await gw.openai().chat.completions.create(chatBody('g'));
  assert.deepEqual(JSON.parse(a.choices[0].message.content), { temperature: 0.2, seed: 7, presence_penalty: -0.5 });
  // The caller's own value wins.
  const b = await gw.openai().chat.completions.create(chatBody('g', { temperature: 1, seed: 1 }));
  assert.deepEqual(JSON.parse(b.choices[0].message.content), { temperature: 1, seed: 1, presence_penalty: -0.5 });
  // A fallback to another deployment gets none of the first one's defaults.
  await mock.script('tuned-model', [{ error: 'server_error' }]);
  await mock.script('plain-model', [{ echo_params: true }]);
  const c = await gw.openai().chat.completions.create(chatBody('g'));
  assert.deepEqual(JSON.parse(c.choices[0].message.content), {});
});

e2e('a default max_tokens bounds the reservation and the request; the charge follows the usage', async (ctx) => {
  const { mock } = state;
  const price = { input_cost_per_token: 0.000001, output_cost_per_token: 0.00001 };
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'g', 'capped-model', { max_tokens: 40, ...price })],
  }));
  const key = await gw.generateKey({ max_budget: 1 });
  await mock.script('capped-model', [{ fill_max_tokens: true }]);
  const { response } = await gw.openai({ apiKey: key.key }).chat.completions.create(chatBody('g')).withResponse();
  const m = await mock.model('capped-model');
  assert.equal(m.completion_tokens, 40, 'the upstream was asked for at most 40 tokens');
  const row = await spendLogOf(gw, response);
  const attempt = row.decision.steps.find((s) => s.step === 'attempt');
  assert.equal(attempt.max_tokens, 40, JSON.stringify(attempt));
  const bill = m.prompt_tokens * price.input_cost_per_token + m.completion_tokens * price.output_cost_per_token;
  assert.ok(Math.abs(row.spend - bill) < 1e-9, `spend ${row.spend} vs bill ${bill}`);
  // The caller's own limit wins over the default.
  await gw.openai({ apiKey: key.key }).chat.completions.create(chatBody('g', { max_tokens: 5 }));
  assert.equal((await mock.model('capped-model')).completion_tokens, 45);
  // An upstream that ignores the default limit is charged what it reports, not the bound.
  await mock.script('capped-model', [{ ignore_max_tokens: true, completion_tokens: 100 }]);
  const before = await mock.model('capped-model');
  const over = await gw.openai({ apiKey: key.key }).chat.completions.create(chatBody('g')).withResponse();
  const after = await mock.model('capped-model');
  assert.equal(after.completion_tokens - before.completion_tokens, 100);
  const overRow = await spendLogOf(gw, over.response);
  const overBill = (after.prompt_tokens - before.prompt_tokens) * price.input_cost_per_token + 100 * price.output_cost_per_token;
  assert.ok(Math.abs(overRow.spend - overBill) < 1e-9, `spend ${overRow.spend} vs bill ${overBill}`);
  assert.equal(overRow.decision.steps.find((s) => s.step === 'attempt').max_tokens, 40, 'the bound sent was still 40');
});
