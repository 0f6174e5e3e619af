// Streaming spend equals non-streaming spend for the same usage, in the OpenAI format
// (/v1/chat/completions, with and without stream_options.include_usage) and in the Anthropic
// format (/v1/messages through an anthropic/ and through an openai/ deployment). Each variant
// runs on its own key, so /key/info spend is that request's cost alone.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig } from './harness.mjs';
import { costNanos, mockPromptTokens, paidDeployment, paidAnthropicDeployment, nanos, expectSpend, spendLogRow } from './budget_helpers.mjs';

const state = useMock();
const IN = '0.0000031';
const OUT = '0.0000157';
const MESSAGES = [{ role: 'user', content: 'Grüße aus Köln — say something short, please.' }];
const MAX_TOKENS = 40; // the mock answers 16 completion tokens (its default), under the cap

async function setup(ctx) {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      paidDeployment(mock, 'gpt', 'gpt-upstream', { inPrice: IN, outPrice: OUT }),
      paidAnthropicDeployment(mock, 'claude', 'claude-upstream', { inPrice: IN, outPrice: OUT }),
    ],
  }));
  const expected = costNanos(mockPromptTokens({ messages: MESSAGES }), 16, IN, OUT);
  return { gw, expected };
}

/// Spend of `key` (polled until it is `expected`) and its one spend-log row.
async function checkSpend(gw, key, expected, what) {
  await expectSpend(gw, key, expected, what);
  const rows = await gw.admin(`/spend/logs?api_key=${key}`);
  return rows;
}

async function openaiVariants(gw, group, expected) {
  const body = { model: group, messages: MESSAGES, max_tokens: MAX_TOKENS };
  const spends = {};

  const k1 = await gw.generateKey({ key_alias: `${group}-plain`, max_budget: 1 });
  const { data, response } = await gw.openai({ apiKey: k1.key }).chat.completions.create(body).withResponse();
  assert.equal(costNanos(data.usage.prompt_tokens, data.usage.completion_tokens, IN, OUT), expected);
  assert.equal(nanos(response.headers.get('x-litellm-response-cost')), expected);
  spends.plain = await expectSpend(gw, k1.key, expected, `${group} non-streaming`);

  const k2 = await gw.generateKey({ key_alias: `${group}-stream-usage`, max_budget: 1 });
  const stream = await gw.openai({ apiKey: k2.key }).chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  let usage = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert.ok(usage, 'the stream carried usage');
  assert.equal(costNanos(usage.prompt_tokens, usage.completion_tokens, IN, OUT), expected);
  spends.streamUsage = await expectSpend(gw, k2.key, expected, `${group} streaming with include_usage`);

  // Without include_usage the client gets no usage chunk, but the gateway still meters the
  // stream from the usage it asks the upstream for: same spend, not the worst case.
  const k3 = await gw.generateKey({ key_alias: `${group}-stream`, max_budget: 1 });
  const s3 = await gw.openai({ apiKey: k3.key }).chat.completions.create({ ...body, stream: true });
  let sawUsage = false;
  for await (const chunk of s3) if (chunk.usage) sawUsage = true;
  assert.equal(sawUsage, false, 'no usage chunk the client did not ask for');
  spends.stream = await expectSpend(gw, k3.key, expected, `${group} streaming without include_usage`);

  for (const k of [k1, k2, k3]) {
    const [row] = await checkSpend(gw, k.key, expected, k.key_alias);
    assert.equal(nanos(row.spend), expected, `${k.key_alias} spend log row`);
    assert.equal(row.completion_tokens, 16);
    assert.equal(row.unknown_outcome, false);
  }
  return spends;
}

async function anthropicVariants(gw, group, expected) {
  const body = { model: group, messages: MESSAGES, max_tokens: MAX_TOKENS };

  const k1 = await gw.generateKey({ key_alias: `${group}-msg-plain`, max_budget: 1 });
  const { data, response } = await gw.anthropic({ apiKey: k1.key }).messages.create(body).withResponse();
  assert.equal(costNanos(data.usage.input_tokens, data.usage.output_tokens, IN, OUT), expected);
  assert.equal(nanos(response.headers.get('x-litellm-response-cost')), expected);
  await expectSpend(gw, k1.key, expected, `${group} /v1/messages non-streaming`);

  const k2 = await gw.generateKey({ key_alias: `${group}-msg-stream`, max_budget: 1 });
  const stream = await gw.anthropic({ apiKey: k2.key }).messages.create({ ...body, stream: true });
  let input = null;
  let output = null;
  for await (const ev of stream) {
    if (ev.type === 'message_start') input = ev.message.usage.input_tokens;
    if (ev.type === 'message_delta') {
      output = ev.usage.output_tokens;
      // Translated from an OpenAI stream, the input count is only known at the end: the
      // gateway sends it in message_delta's usage (as the Messages API allows).
      if (ev.usage.input_tokens) input = ev.usage.input_tokens;
    }
  }
  assert.equal(costNanos(input, output, IN, OUT), expected, `stream usage ${input}/${output}`);
  await expectSpend(gw, k2.key, expected, `${group} /v1/messages streaming`);

  for (const k of [k1, k2]) {
    const [row] = await checkSpend(gw, k.key, expected, k.key_alias);
    assert.equal(nanos(row.spend), expected, `${k.key_alias} spend log row`);
    assert.equal(row.unknown_outcome, false);
  }
}

e2e('OpenAI format: streaming spend (with and without include_usage) equals non-streaming spend', async (ctx) => {
  const { gw, expected } = await setup(ctx);
  const s = await openaiVariants(gw, 'gpt', expected);
  assert.deepEqual(s, { plain: expected, streamUsage: expected, stream: expected });
  const m = await state.mock.model('gpt-upstream');
  assert.equal(m.requests, 3);
  assert.equal(m.streams, 2);
});

e2e('OpenAI format through an anthropic/ deployment: streaming spend equals non-streaming spend', async (ctx) => {
  const { gw, expected } = await setup(ctx);
  await openaiVariants(gw, 'claude', expected);
  assert.equal((await state.mock.model('claude-upstream')).streams, 2);
});

e2e('Anthropic format (/v1/messages) through an anthropic/ deployment: streaming spend equals non-streaming spend', async (ctx) => {
  const { gw, expected } = await setup(ctx);
  await anthropicVariants(gw, 'claude', expected);
  const m = await state.mock.model('claude-upstream');
  assert.equal(m.requests, 2);
  assert.equal(m.streams, 1);
});

e2e('Anthropic format (/v1/messages) through an openai/ deployment: streaming spend equals non-streaming spend', async (ctx) => {
  const { gw, expected } = await setup(ctx);
  await anthropicVariants(gw, 'gpt', expected);
  const m = await state.mock.model('gpt-upstream');
  assert.equal(m.requests, 2);
  assert.equal(m.streams, 1);
});
