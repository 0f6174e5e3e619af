// /v1/messages to an anthropic/ deployment is passed through natively (issue 12 §5): the
// caller's body reaches Anthropic unchanged but for `model` and the admission's `max_tokens`, so
// fields the translation does not know (`thinking`, `cache_control` with `ttl`, future fields)
// arrive; the answer and the events are Anthropic's own; spend == the simulator's bill. A
// fallback to an OpenAI deployment still translates.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { useMock, e2e, gatewayConfig, anthropicDeployment, openaiDeployment } from './harness.mjs';
import { IN_PRICE, OUT_PRICE, mockBillNanos, expectSpend, spendNanos, dollars } from './budget_helpers.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: OUT_PRICE };
const priced = { input_cost_per_token: IN_PRICE, output_cost_per_token: OUT_PRICE };

function config(mock) {
  return gatewayConfig({
    model_list: [
      anthropicDeployment(mock, 'claude', 'claude-up', { id: 'claude-1', ...priced }),
      anthropicDeployment(mock, 'claude-fb', 'claude-down', { id: 'claude-down-1', ...priced }),
      openaiDeployment(mock, 'gpt-fb', 'gpt-rescue', { id: 'gpt-rescue-1', ...priced }),
    ],
    litellm_settings: { fallbacks: [{ 'claude-fb': ['gpt-fb'] }] },
  });
}

const SYSTEM = [{ type: 'text', text: 'You are a careful assistant. '.repeat(8), cache_control: { type: 'ephemeral', ttl: '1h' } }];
const THINKING = { type: 'enabled', budget_tokens: 1024 };
const body = (model, extra = {}) => ({
  model,
  max_tokens: 2000,
  system: SYSTEM,
  thinking: THINKING,
  messages: [{ role: 'user', content: 'Think, then answer briefly.' }],
  ...extra,
});

async function received(mock, model) {
  const res = await fetch(`${mock.url}/mock/requests`);
  return (await res.json()).requests.filter((r) => r.model === model);
}

e2e('non-streaming: thinking and cache_control.ttl reach Anthropic unchanged; the answer is Anthropic\'s; spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('claude-up', [{ content: 'short answer', completion_tokens: 2 }]);
  const client = gw.anthropic({ apiKey: k.key });
  const msg = await client.messages.create(body('claude', { future_field: { kept: true } }));
  assert.equal(msg.type, 'message');
  assert.equal(msg.content[0].text, 'short answer');
  const [sent] = await received(mock, 'claude-up');
  assert.equal(sent.path, '/v1/messages');
  assert.equal(sent.body.model, 'claude-up', 'model rewritten to the upstream model');
  assert.deepEqual(sent.body.thinking, THINKING, 'thinking arrived unchanged');
  assert.deepEqual(sent.body.system, SYSTEM, 'the system blocks with cache_control.ttl arrived unchanged');
  assert.deepEqual(sent.body.future_field, { kept: true }, 'an unknown field arrived too');
  assert.ok(Number.isInteger(sent.body.max_tokens) && sent.body.max_tokens <= 2000, 'max_tokens is the admission bound');
  // The mock wrote the marked prefix to the 1-hour cache: only possible if the ttl arrived; the
  // answer carries Anthropic's own usage object (cache_creation split by TTL).
  assert.ok(msg.usage.cache_creation?.ephemeral_1h_input_tokens > 0, `1h cache writes in ${JSON.stringify(msg.usage)}`);
  await expectSpend(gw, k.key, await mockBillNanos(mock, 'claude-up', PRICES), 'spend == bill');
  assert.ok(await spendNanos(gw, k.key) > 0);
});

e2e('streaming: Anthropic\'s events relayed (ping included), fields unchanged, usage read, spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('claude-up', [{ content: 'alpha beta gamma', completion_tokens: 3 }]);
  const client = gw.anthropic({ apiKey: k.key });
  const stream = await client.messages.create(body('claude', { stream: true }));
  const types = [];
  let text = '';
  let usage = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') usage = ev.usage;
  }
  assert.equal(text, 'alpha beta gamma');
  assert.equal(types[0], 'message_start');
  // The SDK drops `ping`; on the wire the upstream's own ping is relayed (the translation has none).
  await mock.script('claude-up', [{ content: 'alpha beta gamma', completion_tokens: 3 }]);
  const raw = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': k.key },
    body: JSON.stringify(body('claude', { stream: true })),
  });
  assert.match(await raw.text(), /event: ping\ndata: \{"type": "ping"\}/, "the upstream's ping is relayed unchanged");
  assert.equal(types.at(-1), 'message_stop');
  assert.equal(usage.output_tokens, 3);
  const [sent] = await received(mock, 'claude-up');
  assert.equal(sent.body.stream, true);
  assert.deepEqual(sent.body.thinking, THINKING);
  assert.equal(sent.body.system[0].cache_control.ttl, '1h');
  const m = await mock.model('claude-up');
  assert.equal(m.streams, 2);
  await expectSpend(gw, k.key, await mockBillNanos(mock, 'claude-up', PRICES), 'spend == bill');
});

e2e('a fallback from the Anthropic deployment to an OpenAI one still translates; both attempts billed as the bills say', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('claude-down', [{ error: 'overloaded_529' }]);
  await mock.script('gpt-rescue', [{ content: 'rescued', completion_tokens: 1 }]);
  const client = gw.anthropic({ apiKey: k.key });
  const msg = await client.messages.create(body('claude-fb'));
  assert.equal(msg.type, 'message');
  assert.equal(msg.content[0].text, 'rescued');
  const [native] = await received(mock, 'claude-down');
  assert.deepEqual(native.body.thinking, THINKING, 'the Anthropic attempt was native');
  const [translated] = await received(mock, 'gpt-rescue');
  assert.equal(translated.path, '/v1/chat/completions', 'the OpenAI attempt got a chat request');
  assert.ok(Array.isArray(translated.body.messages));
  assert.equal(translated.body.thinking, undefined);
  const bill = (await mockBillNanos(mock, 'claude-down', PRICES)) + (await mockBillNanos(mock, 'gpt-rescue', PRICES));
  await expectSpend(gw, k.key, bill, 'spend == bill (the 529 is unbilled)');
});

e2e('past the budget: refused, nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: dollars(1000) });
  const client = gw.anthropic({ apiKey: k.key });
  await assert.rejects(client.messages.create(body('claude')), (e) => e.status === 429);
  assert.equal((await mock.model('claude-up')).requests, 0);
  assert.equal(await spendNanos(gw, k.key), 0);
});
