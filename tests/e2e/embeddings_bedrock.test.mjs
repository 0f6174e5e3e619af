// POST /v1/embeddings to bedrock/ embedding models through the official OpenAI SDK (issue 12):
// Amazon Titan Text Embeddings (InvokeModel, one text per call) and Cohere Embed on Bedrock
// (batches, no usage reported), SigV4-signed, against the simulator's /model/{id}/invoke.
// Spend == the simulator's bill where the provider reports usage (Titan), == the reservation
// (the input bound, marked unknown) where it does not (Cohere); inputs the model cannot take
// are 400s with nothing sent; a key past its budget is refused with nothing sent; a 429 falls
// back to the fallback group.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, spendLogOf } from './harness.mjs';
import { mockBillNanos, spendNanos, expectSpend, dollars, costNanos, IN_PRICE } from './budget_helpers.mjs';

const state = useMock();
for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION', 'AWS_DEFAULT_REGION',
  'AWS_REGION_NAME', 'AWS_BEDROCK_RUNTIME_ENDPOINT']) delete process.env[k];

const TITAN = 'amazon.titan-embed-text-v2:0';
const TITAN_V1 = 'amazon.titan-embed-text-v1';
const COHERE = 'cohere.embed-english-v3';
const PRICES = { input: IN_PRICE, output: '0' };
const AWS = { aws_access_key_id: 'AKIDEXAMPLE', aws_secret_access_key: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', aws_region_name: 'us-east-1' };
const utf8 = (s) => Buffer.byteLength(s, 'utf8');
/// The mock's token count of one text input: ceil(bytes / 4).
const tokensOf = (s) => Math.ceil(utf8(s) / 4);

/// A bedrock/ embedding deployment on the simulator (model_info.mode: embedding).
function bedrockEmbedding(mock, group, upstream) {
  return {
    model_name: group,
    litellm_params: { model: `bedrock/${upstream}`, aws_bedrock_runtime_endpoint: mock.url, ...AWS,
      input_cost_per_token: IN_PRICE, output_cost_per_token: 0 },
    model_info: { id: `${group}.bedrock`, mode: 'embedding' },
  };
}

function config(mock) {
  return gatewayConfig({
    model_list: [
      bedrockEmbedding(mock, 'titan', TITAN),
      bedrockEmbedding(mock, 'cohere', COHERE),
      bedrockEmbedding(mock, 'titan-flaky', TITAN),
      bedrockEmbedding(mock, 'titan-backup', TITAN_V1),
    ],
    litellm_settings: { fallbacks: [{ 'titan-flaky': ['titan-backup'] }] },
  });
}

/// `embeddings.create` with `key`: {status, headers, data} or {status, error} for an APIError.
async function embed(gw, key, body) {
  try {
    const { data, response } = await gw.openai({ apiKey: key, maxRetries: 0 }).embeddings.create(body).withResponse();
    return { status: response.status, headers: response.headers, data };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError) || e.status === undefined) throw e;
    return { status: e.status, error: e.error, headers: e.headers instanceof Headers ? e.headers : new Headers(e.headers ?? {}) };
  }
}

const fromBase64 = (b64) => {
  const buf = Buffer.from(b64, 'base64');
  return Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4));
};

const totalRequests = async (mock) => Object.values((await mock.stats()).models ?? {}).reduce((a, m) => a + (m.requests ?? 0), 0);

e2e('Titan v2, one input: the SDK (base64 by default) gets a 1024-float vector; usage = inputTextTokenCount; spend == the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const input = 'The quick brown fox jumps over the lazy dog.';
  const r = await embed(gw, k.key, { model: 'titan', input });
  assert.equal(r.status, 200);
  assert.equal(r.data.object, 'list');
  assert.equal(r.data.data.length, 1);
  assert.equal(r.data.data[0].index, 0);
  assert.equal(r.data.data[0].embedding.length, 1024);  // Titan v2's default size, decoded from base64
  assert.ok(r.data.data[0].embedding.every((x) => typeof x === 'number' && x >= -1 && x < 1));
  assert.equal(r.data.usage.prompt_tokens, tokensOf(input));
  assert.equal(r.data.model, TITAN);
  const bill = await mockBillNanos(mock, TITAN, PRICES);
  assert.equal(bill, costNanos(tokensOf(input), 0, IN_PRICE, '0'));
  await expectSpend(gw, k.key, bill);
  const row = await spendLogOf(gw, r.headers);
  assert.equal(row.call_type, 'aembedding');
  assert.equal(row.prompt_tokens, tokensOf(input));
  assert.ok(row.decision.steps.some((s) => s.step === 'attempt' && s.evidence === 'answered'));
});

e2e('Titan v2: a one-item array and dimensions 512 are sent; several inputs, other dimensions and token ids are 400s naming the limit, nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const one = await embed(gw, k.key, { model: 'titan', input: ['alpha beta'], encoding_format: 'float', dimensions: 512 });
  assert.equal(one.status, 200);
  assert.equal(one.data.data[0].embedding.length, 512);
  assert.equal((await mock.model(TITAN)).requests, 1);
  const cases = [
    [{ model: 'titan', input: ['a', 'b'] }, 'input', /one text per call: send at most 1 input per request \(got 2\)/],
    [{ model: 'titan', input: 'a', dimensions: 300 }, 'dimensions', /256, 512 or 1024 \(got 300\)/],
    [{ model: 'titan', input: [1, 2, 3] }, 'input', /text only, not token ids/],
  ];
  for (const [body, param, message] of cases) {
    const r = await embed(gw, k.key, body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.error.type, 'invalid_request_error');
    assert.equal(r.error.param, param);
    assert.match(r.error.message, message);
    const row = await spendLogOf(gw, r.headers);
    assert.ok(row.decision.steps.some((s) => s.step === 'attempt' && s.class === 'caller_fix_required' && s.evidence === 'not_sent'));
  }
  assert.equal((await mock.model(TITAN)).requests, 1, 'nothing more was sent');
  await expectSpend(gw, k.key, await mockBillNanos(mock, TITAN, PRICES));
});

e2e('explicit base64 from Titan: little-endian float32, equal to the float answer of the same input', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const b64 = await embed(gw, k.key, { model: 'titan', input: 'hello world', encoding_format: 'base64', dimensions: 256 });
  assert.equal(b64.status, 200);
  assert.equal(typeof b64.data.data[0].embedding, 'string');
  const floats = await embed(gw, k.key, { model: 'titan', input: 'hello world', encoding_format: 'float', dimensions: 256 });
  assert.equal(floats.data.data[0].embedding.length, 256);
  assert.deepEqual(fromBase64(b64.data.data[0].embedding), floats.data.data[0].embedding.map((x) => Math.fround(x)));
  const bill = await mockBillNanos(mock, TITAN, PRICES);
  assert.equal(bill, 2 * costNanos(tokensOf('hello world'), 0, IN_PRICE, '0'));
  await expectSpend(gw, k.key, bill);
});

e2e('Cohere Embed batch: one vector per text in order; no usage reported, so the charge is the reservation (input bound), marked unknown, covering the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const inputs = ['alpha', 'beta gamma', 'alpha'];
  const r = await embed(gw, k.key, { model: 'cohere', input: inputs, encoding_format: 'float' });
  assert.equal(r.status, 200);
  assert.deepEqual(r.data.data.map((d) => d.index), [0, 1, 2]);
  assert.ok(r.data.data.every((d) => d.embedding.length === 1024));
  assert.deepEqual(r.data.data[0].embedding, r.data.data[2].embedding, 'same text, same vector');
  assert.notDeepEqual(r.data.data[0].embedding, r.data.data[1].embedding);
  assert.equal(r.data.usage, undefined, 'no usage is made up');
  const reserved = costNanos(inputs.reduce((a, s) => a + utf8(s), 0), 0, IN_PRICE, '0');  // one token per byte
  await expectSpend(gw, k.key, reserved);
  const bill = await mockBillNanos(mock, COHERE, PRICES);
  assert.ok(bill > 0 && bill <= reserved, `bill ${bill} <= reservation ${reserved}`);
  const row = await spendLogOf(gw, r.headers);
  assert.ok(row.decision.steps.some((s) => s.step === 'attempt' && s.evidence === 'unreadable'));
  // The SDK's default (base64) works for Cohere too.
  const b64 = await embed(gw, k.key, { model: 'cohere', input: ['alpha'] });
  assert.equal(b64.status, 200);
  assert.deepEqual(b64.data.data[0].embedding, r.data.data[0].embedding.map((x) => Math.fround(x)));
});

e2e('a key whose budget cannot pay for the input is refused with nothing sent to Bedrock', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const input = 'x'.repeat(2000);  // bound: 2,000 tokens = 2,000,000 nanos at $1/M
  const k = await gw.generateKey({ max_budget: dollars(1_500_000) });
  for (const model of ['titan', 'cohere']) {
    const r = await embed(gw, k.key, { model, input });
    assert.equal(r.status, 429);
    assert.equal(r.error.type, 'budget_exceeded');
  }
  assert.equal(await totalRequests(mock), 0, 'nothing sent upstream');
  assert.equal(await spendNanos(gw, k.key), 0);
  const ok = await embed(gw, k.key, { model: 'titan', input: 'short' });
  assert.equal(ok.status, 200);
  await expectSpend(gw, k.key, await mockBillNanos(mock, TITAN, PRICES));
});

e2e('a 429 ThrottlingException falls back to the fallback group (Titan v1); the 429 is unbilled, spend == the backup bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script(TITAN, [{ error: 'rate_limit_exceeded' }]);
  const r = await embed(gw, k.key, { model: 'titan-flaky', input: 'one two' });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal(r.data.data[0].embedding.length, 1536);  // Titan v1's size
  assert.ok((await mock.model(TITAN)).failed >= 1);
  assert.equal((await mock.model(TITAN_V1)).succeeded, 1);
  assert.equal(await mockBillNanos(mock, TITAN, PRICES), 0);
  const bill = await mockBillNanos(mock, TITAN_V1, PRICES);
  assert.equal(bill, costNanos(tokensOf('one two'), 0, IN_PRICE, '0'));
  await expectSpend(gw, k.key, bill);
  const row = await spendLogOf(gw, r.headers);
  assert.ok(row.decision.steps.some((s) => s.step === 'attempt' && s.class === 'retryable_capacity'));
});

e2e('Bedrock errors on embeddings: context overflow is classified, unbilled; missing credentials are 401 deployment_misconfigured, nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      bedrockEmbedding(mock, 'titan', TITAN),
      { ...bedrockEmbedding(mock, 'no-creds', TITAN),
        litellm_params: { model: `bedrock/${TITAN}`, aws_bedrock_runtime_endpoint: mock.url, aws_region_name: 'us-east-1', input_cost_per_token: IN_PRICE } },
    ],
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const long = 'word '.repeat(8000);  // 40,000 bytes: the mock counts 10,000 tokens > Titan's 8,192
  const over = await embed(gw, k.key, { model: 'titan', input: long });
  assert.equal(over.status, 400);
  assert.match(over.error.message, /too long|too many input tokens/i);
  const row = await spendLogOf(gw, over.headers);
  assert.ok(row.decision.steps.some((s) => s.step === 'attempt' && s.class === 'context_overflow'));
  const before = await totalRequests(mock);
  const nc = await embed(gw, k.key, { model: 'no-creds', input: 'hi' });
  assert.equal(nc.status, 401);
  assert.equal(nc.error.code, 'deployment_misconfigured');
  assert.equal(await totalRequests(mock), before, 'nothing sent without credentials');
  assert.equal(await spendNanos(gw, k.key), 0, 'errors are unbilled');
});
