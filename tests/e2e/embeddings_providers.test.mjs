// POST /v1/embeddings routed to gemini/ (:embedContent, :batchEmbedContents), vertex_ai/
// (:predict, OAuth token), ollama/ (/api/embed) and cohere/ (/v2/embed) through the official
// OpenAI SDK (issue 12 item 1), against the simulator's native wire formats. For each provider:
// one input, a batch and base64 vectors come back in OpenAI's shape; the recorded spend == the
// simulator's bill at the bundled price, except on the Gemini API, which reports no usage for
// embeddings, where it is exactly the reservation (the input bound), marked unreadable; a key
// that cannot pay for the input is refused with nothing sent (Ollama is free: always admitted);
// token-array inputs are refused before sending; a 429 on one deployment is served by the
// group's other one, the 429 unbilled.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, spendLogOf, UPSTREAM_KEY } from './harness.mjs';
import { mockBillNanos, spendNanos, expectSpend, dollars, costNanos, IN_PRICE } from './budget_helpers.mjs';

const state = useMock();
const utf8 = (s) => Buffer.byteLength(s, 'utf8');
/// The mock's token count of one text input: ceil(bytes / 4).
const tokensOf = (s) => Math.ceil(utf8(s) / 4);
/// The gateway's input bound of an embeddings request: one token per UTF-8 byte of its texts.
const boundOf = (input) => [input].flat().reduce((a, s) => a + utf8(s), 0);

// A service-account key for vertex_ai/ (its token_uri on the mock).
const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-embg-'));
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
function keyFile(mock, name) {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({
    type: 'service_account', project_id: 'proj-e2e', private_key_id: 'kid-e2e', private_key: privateKey,
    client_email: `${name}@proj-e2e.iam.gserviceaccount.com`, token_uri: `${mock.url}/token`,
  }));
  return file;
}

/// Per provider: the upstream model, its bundled input price (data/prices.yaml), whether its
/// answer reports usage, the deployment, and the native paths one input / a batch go to.
const KINDS = {
  gemini: {
    upstream: 'gemini-embedding-001', price: '0.00000015', usage: false, one: ':embedContent', many: ':batchEmbedContents',
    params: (mock) => ({ model: 'gemini/', api_base: mock.url, api_key: 'gm-e2e-key' }),
  },
  vertex: {
    upstream: 'gemini-embedding-001', price: '0.00000015', usage: true, one: ':predict', many: ':predict',
    params: (mock, id) => ({ model: 'vertex_ai/', api_base: mock.url, vertex_project: 'proj-e2e', vertex_location: 'us-central1', vertex_credentials: keyFile(mock, `sa-${id}`) }),
  },
  ollama: {
    upstream: 'nomic-embed-text', price: '0', usage: true, one: '/api/embed', many: '/api/embed',
    params: (mock) => ({ model: 'ollama/', api_base: mock.url }),
  },
  cohere: {
    upstream: 'embed-v4.0', price: '0.00000012', usage: true, one: '/v2/embed', many: '/v2/embed',
    params: (mock) => ({ model: 'cohere/', api_base: mock.url, api_key: UPSTREAM_KEY }),
  },
};

function deployment(kind, mock, group, upstream, { id, ...extra } = {}) {
  const k = KINDS[kind];
  const depId = id ?? `${group}.${kind}`;
  const params = k.params(mock, depId);
  params.model += upstream;
  return { model_name: group, litellm_params: { ...params, ...extra }, model_info: { id: depId } };
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

const recorded = async (mock) => (await (await fetch(`${mock.url}/mock/requests`)).json()).requests;

for (const kind of Object.keys(KINDS)) {
  const K = KINDS[kind];
  const PRICES = { input: K.price, output: '0' };
  /// What the gateway charges one answered request of `input`: the bill of the tokens the
  /// provider reports, or (no usage reported) the reservation of the input bound.
  const charge = (input) => (K.usage ? costNanos([input].flat().reduce((a, s) => a + tokensOf(s), 0), 0, K.price, '0')
    : costNanos(boundOf(input), 0, K.price, '0'));

  e2e(`${kind}: one input, a batch and base64 through the SDK, in OpenAI's shape; spend == ${K.usage ? 'the bill' : 'the reservation (no usage reported)'}`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(gatewayConfig({ model_list: [deployment(kind, mock, 'e', K.upstream)] }));
    const k = await gw.generateKey({ max_budget: 1 });
    const one = 'The quick brown fox jumps over the lazy dog.';
    const r1 = await embed(gw, k.key, { model: 'e', input: one, encoding_format: 'float', dimensions: 8 });
    assert.equal(r1.status, 200, JSON.stringify(r1.error));
    assert.equal(r1.data.object, 'list');
    assert.equal(r1.data.model, K.upstream);
    assert.deepEqual(r1.data.data.map((d) => [d.object, d.index, d.embedding.length]), [['embedding', 0, 8]]);
    assert.ok(r1.data.data[0].embedding.every((x) => typeof x === 'number' && x >= -1 && x < 1));
    // No usage reported: the answer has none either (no number is made up).
    assert.deepEqual(r1.data.usage, K.usage ? { prompt_tokens: tokensOf(one), total_tokens: tokensOf(one) } : undefined);

    const batch = ['alpha', 'beta gamma', 'alpha'];
    const r2 = await embed(gw, k.key, { model: 'e', input: batch, encoding_format: 'float', dimensions: 8 });
    assert.equal(r2.status, 200);
    assert.deepEqual(r2.data.data.map((d) => d.index), [0, 1, 2]);
    assert.ok(r2.data.data.every((d) => d.embedding.length === 8));
    assert.deepEqual(r2.data.data[0].embedding, r2.data.data[2].embedding, 'same input, same vector');
    assert.notDeepEqual(r2.data.data[0].embedding, r2.data.data[1].embedding);

    // base64: explicitly, and as the SDK asks by default (it decodes the float32 bytes itself).
    const b64 = await embed(gw, k.key, { model: 'e', input: 'hello world', encoding_format: 'base64', dimensions: 16 });
    assert.equal(b64.status, 200);
    assert.equal(typeof b64.data.data[0].embedding, 'string');
    const floats = await embed(gw, k.key, { model: 'e', input: 'hello world', encoding_format: 'float', dimensions: 16 });
    assert.deepEqual(fromBase64(b64.data.data[0].embedding), floats.data.data[0].embedding.map((x) => Math.fround(x)));
    const byDefault = await embed(gw, k.key, { model: 'e', input: 'hello world', dimensions: 16 });
    assert.deepEqual(byDefault.data.data[0].embedding, fromBase64(b64.data.data[0].embedding));

    // The provider's own endpoints were called, with the dimensions in its own field.
    const sent = (await recorded(mock)).filter((q) => q.model === K.upstream);
    assert.equal(sent.length, 5);
    assert.ok(sent[0].path.endsWith(K.one), sent[0].path);
    assert.ok(sent[1].path.endsWith(K.many), sent[1].path);
    const dimsOf = { gemini: (b) => b.outputDimensionality ?? b.requests?.[0]?.outputDimensionality,
      vertex: (b) => b.parameters?.outputDimensionality, ollama: (b) => b.dimensions, cohere: (b) => b.output_dimension }[kind];
    assert.deepEqual(sent.map((q) => dimsOf(q.body)), [8, 8, 16, 16, 16]);
    if (kind === 'cohere') assert.deepEqual([sent[1].body.texts, sent[1].body.input_type, sent[1].body.embedding_types], [batch, 'search_document', ['float']]);

    // Money: the bill of what the provider reported, or the reservations.
    const inputs = [one, batch, 'hello world', 'hello world', 'hello world'];
    const expected = inputs.reduce((a, i) => a + charge(i), 0);
    const bill = await mockBillNanos(mock, K.upstream, PRICES);
    if (K.usage) assert.equal(expected, bill, 'the gateway read the tokens the simulator billed');
    else assert.ok(expected >= bill, `the reservation (${expected}) covers the unreported bill (${bill})`);
    if (K.price !== '0') assert.ok(expected > 0);
    await expectSpend(gw, k.key, expected);
    const row = await spendLogOf(gw, r1.headers);
    assert.equal(row.call_type, 'aembedding');
    assert.equal(row.prompt_tokens, K.usage ? tokensOf(one) : 0);
    const evidence = row.decision.steps.filter((s) => s.step === 'attempt').map((s) => s.evidence);
    assert.deepEqual(evidence, [K.usage ? 'answered' : 'unreadable']);
  });

  e2e(`${kind}: ${K.price === '0' ? 'free (self-hosted): a key with a 1-nano budget is served at 0' : 'a key that cannot pay for the input is refused with nothing sent'}; token arrays are refused before sending`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(gatewayConfig({ model_list: [deployment(kind, mock, 'e', K.upstream)] }));
    const input = 'x'.repeat(2000);
    const reserve = costNanos(boundOf(input), 0, K.price, '0');
    const k = await gw.generateKey({ max_budget: dollars(Math.max(reserve - 1, 1)) });
    const r = await embed(gw, k.key, { model: 'e', input, encoding_format: 'float' });
    if (K.price === '0') {
      assert.equal(r.status, 200);
      assert.equal((await mock.model(K.upstream)).requests, 1);
      await expectSpend(gw, k.key, 0);
    } else {
      assert.equal(r.status, 429);
      assert.equal(r.error.type, 'budget_exceeded');
      assert.equal((await mock.model(K.upstream)).requests, 0, 'nothing sent upstream');
      assert.equal(await spendNanos(gw, k.key), 0);
      const ok = await embed(gw, k.key, { model: 'e', input: 'short', encoding_format: 'float' });
      assert.equal(ok.status, 200);
      await expectSpend(gw, k.key, charge('short'));
    }
    const before = (await mock.model(K.upstream)).requests;
    const tokens = await embed(gw, k.key, { model: 'e', input: [[1, 2, 3], [4, 5]], encoding_format: 'float' });
    assert.equal(tokens.status, 400);
    assert.equal(tokens.error.code, 'unsupported_parameter');
    assert.equal(tokens.error.param, 'input');
    assert.match(tokens.error.message, /^deployment e\.\w+: token-array input/);
    assert.equal((await mock.model(K.upstream)).requests, before, 'nothing sent');
  });

  e2e(`${kind}: a 429 on one deployment is served by the group's other one; the 429 is unbilled`, async (ctx) => {
    const { mock } = state;
    const a = `${kind}-emb-a`;
    const b = `${kind}-emb-b`;
    const priced = K.price === '0' ? {} : { input_cost_per_token: IN_PRICE, output_cost_per_token: 0 };
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [
        // simple-shuffle weighs by rpm when every deployment declares one: a first.
        deployment(kind, mock, 'pair', a, { id: 'pair-a', rpm: 1000000000000, ...priced }),
        deployment(kind, mock, 'pair', b, { id: 'pair-b', rpm: 1000, ...priced }),
      ],
      fallback_policy: { defaults: { budgets: { max_retries: 1, max_fallbacks: 1 } } },
    }));
    const k = await gw.generateKey({ max_budget: 1 });
    await mock.script(a, [{ error: 'rate_limit_exceeded' }]);
    const input = ['one', 'two'];
    const r = await embed(gw, k.key, { model: 'pair', input, encoding_format: 'float' });
    assert.equal(r.status, 200, JSON.stringify(r.error));
    assert.equal(r.data.data.length, 2);
    assert.equal((await mock.model(a)).failed, 1);
    assert.equal((await mock.model(b)).succeeded, 1);
    const P = { input: K.price === '0' ? '0' : IN_PRICE, output: '0' };
    assert.equal(await mockBillNanos(mock, a, P), 0, 'a 429 is not billed');
    const expected = K.price === '0' ? 0 : K.usage ? await mockBillNanos(mock, b, P) : costNanos(boundOf(input), 0, IN_PRICE, '0');
    if (K.price !== '0') assert.ok(expected > 0);
    await expectSpend(gw, k.key, expected);
    const row = await spendLogOf(gw, r.headers);
    const steps = row.decision.steps.filter((s) => s.step === 'attempt');
    assert.deepEqual(steps.map((s) => [s.deployment, s.class ?? null]), [['pair-a', 'retryable_capacity'], ['pair-b', null]]);
  });
}
