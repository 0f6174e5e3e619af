// POST /v1/embeddings through the official OpenAI SDK (issue 12): single, batch, base64 and
// float vectors, token arrays; every answer's recorded spend == the simulator's bill; a key past
// its budget is refused with nothing sent; a 5xx falls back; bad input is an OpenAI-shaped 400.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, spendLogOf, UPSTREAM_KEY } from './harness.mjs';
import { mockBillNanos, spendNanos, expectSpend, dollars, costNanos, IN_PRICE } from './budget_helpers.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: '0' };
const priced = { input_cost_per_token: IN_PRICE, output_cost_per_token: 0 };
const utf8 = (s) => Buffer.byteLength(s, 'utf8');
/// The mock's token count of one text input: ceil(bytes / 4).
const tokensOf = (s) => Math.ceil(utf8(s) / 4);

/// An embedding deployment on the mock (model_info.mode: embedding).
function embeddingDeployment(mock, group, upstream, extra = {}) {
  const d = openaiDeployment(mock, group, upstream, { ...priced, ...extra });
  d.model_info.mode = 'embedding';
  return d;
}

function config(mock, extra = {}) {
  return gatewayConfig({
    model_list: [
      embeddingDeployment(mock, 'emb', 'text-embedding-3-small'),
      embeddingDeployment(mock, 'emb-flaky', 'emb-flaky-up'),
      embeddingDeployment(mock, 'emb-backup', 'emb-backup-up'),
      anthropicDeployment(mock, 'claude', 'claude-sonnet-4-5', { input_cost_per_token: IN_PRICE, output_cost_per_token: IN_PRICE }),
    ],
    litellm_settings: { fallbacks: [{ 'emb-flaky': ['emb-backup'] }] },
    ...extra,
  });
}

/// `embeddings.create` with `key`: {status, headers, data} or {status, error} for an APIError.
async function embed(gw, key, body) {
  try {
    const { data, response } = await gw.openai({ apiKey: key }).embeddings.create(body).withResponse();
    return { status: response.status, headers: response.headers, data };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError) || e.status === undefined) throw e;
    return { status: e.status, error: e.error, headers: e.headers instanceof Headers ? e.headers : new Headers(e.headers ?? {}) };
  }
}

/// Float32 values of a base64 embedding.
const fromBase64 = (b64) => {
  const buf = Buffer.from(b64, 'base64');
  return Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4));
};

e2e('single input: the SDK (base64 by default) gets a float vector; spend == the bill, logged as aembedding', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const input = 'The quick brown fox jumps over the lazy dog.';
  const r = await embed(gw, k.key, { model: 'emb', input });
  assert.equal(r.status, 200);
  assert.equal(r.data.object, 'list');
  assert.equal(r.data.data.length, 1);
  assert.equal(r.data.data[0].embedding.length, 1536);  // decoded from base64 by the SDK
  assert.ok(r.data.data[0].embedding.every((x) => typeof x === 'number' && x >= -1 && x < 1));
  assert.equal(r.data.usage.prompt_tokens, tokensOf(input));
  const bill = await mockBillNanos(mock, 'text-embedding-3-small', PRICES);
  assert.equal(bill, costNanos(tokensOf(input), 0, IN_PRICE, '0'));
  await expectSpend(gw, k.key, bill);
  const row = await spendLogOf(gw, r.headers);
  assert.equal(row.call_type, 'aembedding');
  assert.equal(row.prompt_tokens, tokensOf(input));
  assert.equal(row.completion_tokens, 0);
});

e2e('batch with float vectors and dimensions: one deterministic vector per input; spend == the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const inputs = ['alpha', 'beta gamma', 'alpha'];
  const r = await embed(gw, k.key, { model: 'emb', input: inputs, encoding_format: 'float', dimensions: 8 });
  assert.equal(r.status, 200);
  assert.deepEqual(r.data.data.map((d) => d.index), [0, 1, 2]);
  assert.ok(r.data.data.every((d) => d.embedding.length === 8));
  assert.deepEqual(r.data.data[0].embedding, r.data.data[2].embedding, 'same input, same vector');
  assert.notDeepEqual(r.data.data[0].embedding, r.data.data[1].embedding);
  const tokens = inputs.reduce((a, s) => a + tokensOf(s), 0);
  assert.equal(r.data.usage.prompt_tokens, tokens);
  const bill = await mockBillNanos(mock, 'text-embedding-3-small', PRICES);
  assert.equal(bill, costNanos(tokens, 0, IN_PRICE, '0'));
  await expectSpend(gw, k.key, bill);
});

e2e('explicit base64: the vectors arrive as base64 float32, equal to the float ones; token arrays are embedded too', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const b64 = await embed(gw, k.key, { model: 'emb', input: 'hello world', encoding_format: 'base64', dimensions: 16 });
  assert.equal(b64.status, 200);
  assert.equal(typeof b64.data.data[0].embedding, 'string');
  const floats = await embed(gw, k.key, { model: 'emb', input: 'hello world', encoding_format: 'float', dimensions: 16 });
  assert.deepEqual(fromBase64(b64.data.data[0].embedding), floats.data.data[0].embedding.map((x) => Math.fround(x)));
  const toks = await embed(gw, k.key, { model: 'emb', input: [[1, 2, 3, 4, 5], [6, 7]], encoding_format: 'float', dimensions: 4 });
  assert.equal(toks.status, 200);
  assert.equal(toks.data.data.length, 2);
  assert.equal(toks.data.usage.prompt_tokens, 7);  // token ids count exactly
  const bill = await mockBillNanos(mock, 'text-embedding-3-small', PRICES);
  assert.equal(bill, 2 * costNanos(tokensOf('hello world'), 0, IN_PRICE, '0') + costNanos(7, 0, IN_PRICE, '0'));
  await expectSpend(gw, k.key, bill);
});

e2e('a key whose budget cannot pay for the input is refused with nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const input = 'x'.repeat(2000);  // bound: 2,000 tokens = 2,000,000 nanos at $1/M
  const k = await gw.generateKey({ max_budget: dollars(1_500_000) });
  const r = await embed(gw, k.key, { model: 'emb', input });
  assert.equal(r.status, 429);
  assert.equal(r.error.type, 'budget_exceeded');
  assert.equal((await mock.model('text-embedding-3-small')).requests, 0, 'nothing sent upstream');
  assert.equal(await spendNanos(gw, k.key), 0);
  // The same key can still pay for a short input: admitted and charged its bill.
  const ok = await embed(gw, k.key, { model: 'emb', input: 'short' });
  assert.equal(ok.status, 200);
  await expectSpend(gw, k.key, await mockBillNanos(mock, 'text-embedding-3-small', PRICES));
});

e2e('a 5xx falls back to the fallback group; the error is unbilled and spend == the backup bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('emb-flaky-up', [{ status: 500 }]);
  const r = await embed(gw, k.key, { model: 'emb-flaky', input: ['one', 'two'] });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal((await mock.model('emb-flaky-up')).failed, 1);
  assert.equal((await mock.model('emb-backup-up')).succeeded, 1);
  assert.equal(await mockBillNanos(mock, 'emb-flaky-up', PRICES), 0);
  const bill = await mockBillNanos(mock, 'emb-backup-up', PRICES);
  assert.ok(bill > 0);
  await expectSpend(gw, k.key, bill);
});

e2e('usage missing from the answer: the reservation is charged, marked unknown', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('text-embedding-3-small', [{ usage_style: 'omit' }]);
  const input = 'twelve bytes';
  const r = await embed(gw, k.key, { model: 'emb', input, encoding_format: 'float' });
  assert.equal(r.status, 200);
  const reserved = costNanos(utf8(input), 0, IN_PRICE, '0');  // the input bound: one token per byte
  await expectSpend(gw, k.key, reserved);
  assert.ok(await mockBillNanos(mock, 'text-embedding-3-small', PRICES) <= reserved);
  const row = await spendLogOf(gw, r.headers);
  assert.ok(row.decision.steps.some((s) => s.step === 'attempt' && s.evidence === 'unreadable'));
});

e2e('over the context limit: token arrays are refused before sending, text is sent and classified context_overflow', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const long = Array.from({ length: 8192 }, (_, i) => i % 100);  // text-embedding-3-small: 8,191 tokens
  const refused = await embed(gw, k.key, { model: 'emb', input: long });
  assert.equal(refused.status, 400);
  assert.equal(refused.error.code, 'context_length_exceeded');
  assert.equal((await mock.model('text-embedding-3-small')).requests, 0, 'nothing sent');
  const text = 'word '.repeat(8000);  // 40,000 bytes: the mock counts 10,000 tokens > 8,192
  const sent = await embed(gw, k.key, { model: 'emb', input: text });
  assert.equal(sent.status, 400);
  assert.match(sent.error.message, /maximum context length/);
  assert.equal((await mock.model('text-embedding-3-small')).requests, 1);
  const row = await spendLogOf(gw, sent.headers);
  assert.ok(row.decision.steps.some((s) => s.step === 'attempt' && s.class === 'context_overflow'));
  assert.equal(await spendNanos(gw, k.key), 0, 'an error answer is unbilled');
});

e2e('bad input and unsupported deployments are OpenAI-shaped 400s with nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const cases = [
    [{ model: 'emb' }, 'input'],
    [{ model: 'emb', input: '' }, 'input'],
    [{ model: 'emb', input: [] }, 'input'],
    [{ model: 'emb', input: 42 }, 'input'],
    [{ model: 'emb', input: ['a', 1] }, 'input'],
    [{ model: 'emb', input: 'a', encoding_format: 'int8' }, 'encoding_format'],
    [{ model: 'emb', input: 'a', dimensions: -1 }, 'dimensions'],
    [{ model: 'emb', input: Array(2049).fill('a') }, 'input'],
  ];
  for (const [body, param] of cases) {
    const r = await gw.fetch('/v1/embeddings', { body });
    assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(r.json.error.type, 'invalid_request_error');
    assert.equal(r.json.error.param, param);
  }
  const claude = await gw.fetch('/v1/embeddings', { body: { model: 'claude', input: 'hi' } });
  assert.equal(claude.status, 400);
  assert.equal(claude.json.error.code, 'operation_not_supported');
  assert.match(claude.json.error.message, /\(anthropic\).*does not support embeddings/);
  const chatOnEmb = await gw.fetch('/v1/chat/completions', { body: { model: 'emb', messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(chatOnEmb.status, 400);
  assert.match(chatOnEmb.json.error.message, /does not support chat completions \(model_info.mode: embedding\)/);
  const notJson = await gw.fetch('/embeddings', { body: 'not json' });
  assert.equal(notJson.status, 400);
  const s = await mock.stats();
  assert.equal(Object.values(s.models ?? {}).reduce((a, m) => a + (m.requests ?? 0), 0), 0, 'nothing reached the mock');
});

e2e('Azure: embeddings go to the deployment URL; spend == the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [{
      model_name: 'azure-emb',
      litellm_params: { model: 'azure/emb-deployment', api_base: mock.url, api_key: UPSTREAM_KEY, api_version: '2024-10-21', ...priced },
      model_info: { id: 'azure-emb.1', mode: 'embedding' },
    }],
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const r = await embed(gw, k.key, { model: 'azure-emb', input: ['a b c', 'd e f'] });
  assert.equal(r.status, 200);
  assert.equal(r.data.data.length, 2);
  assert.equal((await mock.model('emb-deployment')).succeeded, 1);
  await expectSpend(gw, k.key, await mockBillNanos(mock, 'emb-deployment', PRICES));
});
