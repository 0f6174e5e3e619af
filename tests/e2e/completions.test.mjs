// POST /v1/completions (legacy text completions) through the official OpenAI SDK (issue 12):
// `text-completion-openai/` and OpenAI-compatible deployments, non-streaming and streaming;
// OpenAI's default max_tokens (16) is the bound reserved and written upstream; best_of
// completions are billed; spend == the simulator's bill; refused past a budget with nothing
// sent; a 5xx falls back; chat-only providers and bad input are 400s with nothing sent.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, spendLogOf, UPSTREAM_KEY, MASTER_KEY } from './harness.mjs';
import { mockBillNanos, spendNanos, expectSpend, dollars, costNanos, IN_PRICE, OUT_PRICE } from './budget_helpers.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: OUT_PRICE };
const priced = { input_cost_per_token: IN_PRICE, output_cost_per_token: OUT_PRICE };

/// A `text-completion-openai/` deployment on the mock (LiteLLM: always /completions).
function textDeployment(mock, group, upstream) {
  return {
    model_name: group,
    litellm_params: { model: `text-completion-openai/${upstream}`, api_base: `${mock.url}/v1`, api_key: UPSTREAM_KEY, ...priced },
    model_info: { id: `${group}.${upstream}` },
  };
}

function config(mock) {
  return gatewayConfig({
    model_list: [
      textDeployment(mock, 'instruct', 'instruct-up'),
      openaiDeployment(mock, 'compat', 'compat-up', priced),
      textDeployment(mock, 'flaky', 'flaky-up'),
      textDeployment(mock, 'backup', 'backup-up'),
      anthropicDeployment(mock, 'claude', 'claude-sonnet-4-5', priced),
    ],
    litellm_settings: { fallbacks: [{ flaky: ['backup'] }] },
  });
}

/// `completions.create` with `key`: {status, headers, data | chunks} or {status, error}.
async function complete(gw, key, body) {
  const client = gw.openai({ apiKey: key });
  try {
    if (body.stream) {
      const { data: stream, response } = await client.completions.create(body).withResponse();
      const chunks = [];
      for await (const c of stream) chunks.push(c);
      return { status: response.status, headers: response.headers, chunks };
    }
    const { data, response } = await client.completions.create(body).withResponse();
    return { status: response.status, headers: response.headers, data };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError) || e.status === undefined) throw e;
    return { status: e.status, error: e.error, headers: e.headers instanceof Headers ? e.headers : new Headers(e.headers ?? {}) };
  }
}

e2e('non-streaming: no max_tokens means OpenAI\'s 16, reserved and written upstream; spend == the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('instruct-up', [{ fill_max_tokens: true }]);  // a verbose model: fills whatever cap it gets
  const r = await complete(gw, k.key, { model: 'instruct', prompt: 'Say this is a test' });
  assert.equal(r.status, 200);
  assert.equal(r.data.object, 'text_completion');
  assert.equal(r.data.choices.length, 1);
  assert.equal(r.data.choices[0].finish_reason, 'length');
  assert.equal(r.data.usage.completion_tokens, 16, 'the upstream was sent max_tokens 16');
  const row = await spendLogOf(gw, r.headers);
  assert.equal(row.call_type, 'atext_completion');
  const attempt = row.decision.steps.find((s) => s.step === 'attempt');
  assert.equal(attempt.max_tokens, 16);
  const bill = await mockBillNanos(mock, 'instruct-up', PRICES);
  assert.equal(bill, costNanos(r.data.usage.prompt_tokens, 16));
  await expectSpend(gw, k.key, bill);
});

e2e('streaming with include_usage: text_completion chunks and a usage chunk; spend == the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('compat-up', [{ content: 'one two three four five' }]);
  const r = await complete(gw, k.key, {
    model: 'compat', prompt: 'Count to five', max_tokens: 20, stream: true, stream_options: { include_usage: true },
  });
  assert.equal(r.status, 200);
  assert.ok(r.chunks.every((c) => c.object === 'text_completion'));
  const text = r.chunks.flatMap((c) => c.choices).map((c) => c.text).join('');
  assert.equal(text, 'one two three four five');
  const last = r.chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 5);
  const bill = await mockBillNanos(mock, 'compat-up', PRICES);
  assert.equal(bill, costNanos(last.usage.prompt_tokens, 5));
  await expectSpend(gw, k.key, bill);
});

e2e('best_of completions are generated and billed: the bound pays for max_tokens × best_of; spend == the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('instruct-up', [{ fill_max_tokens: true }]);
  const r = await complete(gw, k.key, { model: 'instruct', prompt: 'Pick one', max_tokens: 10, n: 1, best_of: 3 });
  assert.equal(r.status, 200);
  assert.equal(r.data.choices.length, 1, 'n choices are returned');
  assert.equal(r.data.usage.completion_tokens, 30, 'best_of completions are billed');
  const row = await spendLogOf(gw, r.headers);
  const attempt = row.decision.steps.find((s) => s.step === 'attempt');
  assert.ok(nanosOf(attempt.reserved) >= costNanos(0, 30), 'the reservation covers every generated completion');
  const bill = await mockBillNanos(mock, 'instruct-up', PRICES);
  await expectSpend(gw, k.key, bill);
  // A batch of prompts: each answered n times.
  const batch = await complete(gw, k.key, { model: 'instruct', prompt: ['a', 'b'], max_tokens: 4, n: 2 });
  assert.equal(batch.data.choices.length, 4);
  await expectSpend(gw, k.key, await mockBillNanos(mock, 'instruct-up', PRICES));
});

const nanosOf = (d) => Math.round(Number(d ?? 0) * 1e9);

e2e('a key whose budget cannot pay for the bound is refused with nothing sent (stream and not)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  // A budget lowers the output bound down to min_output_tokens (16) before refusing: 'hi' with
  // 16 tokens costs 2 × 1,000 + 16 × 2,000 = 34,000 nanos, more than the key has.
  const k = await gw.generateKey({ max_budget: dollars(20_000) });
  for (const stream of [false, true]) {
    const r = await complete(gw, k.key, { model: 'instruct', prompt: 'hi', max_tokens: 1000, stream });
    assert.equal(r.status, 429, `stream ${stream}`);
    assert.equal(r.error.type, 'budget_exceeded');
  }
  assert.equal((await mock.model('instruct-up')).requests, 0, 'nothing sent upstream');
  assert.equal(await spendNanos(gw, k.key), 0);
});

e2e('a 5xx falls back; the error is unbilled and spend == the backup bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('flaky-up', [{ status: 503, error: 'overloaded' }]);
  const r = await complete(gw, k.key, { model: 'flaky', prompt: 'hello', max_tokens: 8 });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal((await mock.model('flaky-up')).failed, 1);
  assert.equal(await mockBillNanos(mock, 'flaky-up', PRICES), 0);
  const bill = await mockBillNanos(mock, 'backup-up', PRICES);
  assert.ok(bill > 0);
  await expectSpend(gw, k.key, bill);
});

e2e('chat-only providers and bad input are OpenAI-shaped 400s with nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const claude = await complete(gw, MASTER_KEY, { model: 'claude', prompt: 'hi' });
  assert.equal(claude.status, 400);
  assert.equal(claude.error.code, 'operation_not_supported');
  assert.match(claude.error.message, /\(anthropic\).*does not support completions/);
  const chatOnText = await gw.fetch('/v1/chat/completions', { body: { model: 'instruct', messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(chatOnText.status, 400);
  assert.match(chatOnText.json.error.message, /\(text-completion-openai\).*does not support chat completions/);
  const cases = [
    [{ model: 'instruct' }, 'prompt'],
    [{ model: 'instruct', prompt: [] }, 'prompt'],
    [{ model: 'instruct', prompt: { text: 'x' } }, 'prompt'],
    [{ model: 'instruct', prompt: 'x', max_tokens: 0 }, 'max_tokens'],
    [{ model: 'instruct', prompt: 'x', n: 2, best_of: 1 }, 'best_of'],
    [{ model: 'instruct', prompt: 'x', best_of: 2, stream: true }, 'best_of'],
    [{ model: 'instruct', prompt: 'x', logprobs: 10 }, 'logprobs'],
  ];
  for (const [body, param] of cases) {
    const r = await gw.fetch('/v1/completions', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.equal(r.json.error.param, param);
  }
  const s = await mock.stats();
  assert.equal(Object.values(s.models ?? {}).reduce((a, m) => a + (m.requests ?? 0), 0), 0, 'nothing reached the mock');
});

e2e('echo and suffix are passed through; /completions (no /v1) works', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('instruct-up', [{ content: 'world' }]);
  const r = await gw.fetch('/completions', { body: { model: 'instruct', prompt: 'hello ', echo: true, suffix: '!', max_tokens: 5 } });
  assert.equal(r.status, 200);
  assert.equal(r.json.choices[0].text, 'hello world', 'the mock echoed the prompt: echo reached it');
  // The suffix is prompt tokens: ceil(6/4) + ceil(1/4) = 3.
  assert.equal(r.json.usage.prompt_tokens, 3);
});
