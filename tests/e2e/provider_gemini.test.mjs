// gemini/ (Google AI Studio generateContent) and vertex_ai/ (the same API on Vertex AI, with an
// OAuth token minted from a service-account key) through the official openai and
// @anthropic-ai/sdk SDKs, against the simulator's Google wire format. Every test holds the
// gateway's recorded spend against the simulator's bill (cached and thinking tokens included,
// at the bundled gemini-2.5-flash prices), and errors are classified as
// docs/failure_policy.md's "Gemini and Vertex AI" table says.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, sleep, waitFor, toYaml, circuitOf, metricsText, metricValue } from './harness.mjs';
import { billNanos, expectSpend, spendLogRow, spendNanos, dollars } from './budget_helpers.mjs';

const state = useMock();
const MODEL = 'gemini-2.5-flash';
// data/prices.yaml gemini-2.5-flash (Gemini API; Vertex lists the same).
const PRICES = { input: '0.0000003', output: '0.0000025', cached: '0.00000003' };
const TOOLS = [{ type: 'function', function: { name: 'lookup', description: 'Looks a word up', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } } }];

// A service-account key made for this run (RSA 2048 by Node's OpenSSL), its token_uri on the mock.
const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-gemini-'));
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
function keyFile(mock, name, query = '') {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({
    type: 'service_account', project_id: 'proj-e2e', private_key_id: 'kid-e2e', private_key: privateKey,
    client_email: `${name}@proj-e2e.iam.gserviceaccount.com`, token_uri: `${mock.url}/token${query}`,
  }));
  return file;
}

const gemini = (mock, group, { id, upstream = MODEL, ...params } = {}) => ({
  model_name: group,
  litellm_params: { model: `gemini/${upstream}`, api_base: mock.url, api_key: 'gm-e2e-key', ...params },
  model_info: { id: id ?? `${group}.gemini`, base_model: MODEL },
});
const vertex = (mock, group, { id, upstream = MODEL, ...params } = {}) => ({
  model_name: group,
  litellm_params: { model: `vertex_ai/${upstream}`, api_base: mock.url, vertex_project: 'proj-e2e', vertex_location: 'us-central1', ...params },
  model_info: { id: id ?? `${group}.vertex`, base_model: MODEL },
});

const tokens = async (mock) => (await fetch(`${mock.url}/mock/google/tokens`)).json();
const bills = async (mock) => (await state.mock.stats()).bills ?? [];
async function billOf(mock) { return (await bills(mock)).reduce((a, b) => a + billNanos(b, PRICES), 0); }
const classes = (row) => row.decision.steps.filter((s) => s.step === 'attempt').map((s) => s.class ?? null);

/// spend of `key` == the mock's bill, and > 0.
async function assertSpendIsBill(gw, key, mock) {
  const bill = await billOf(mock);
  assert.ok(bill > 0, 'something was billed');
  await expectSpend(gw, key, bill, 'key spend == the mock bill');
  return bill;
}

async function sdkError(promise) {
  try { await promise; } catch (e) { if (e instanceof OpenAI.APIError) return e; throw e; }
  assert.fail('expected an error');
}

for (const kind of ['gemini', 'vertex']) {
  const deploy = (mock, group, params) => (kind === 'gemini' ? gemini(mock, group, params) : vertex(mock, group, { vertex_credentials: keyFile(mock, 'sa-' + group), ...params }));

  e2e(`${kind}: non-streaming and streaming text through the openai SDK; cached and thinking tokens priced; spend == bill`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(gatewayConfig({ model_list: [deploy(mock, 'g')] }));
    const { key } = await gw.generateKey({});
    const client = gw.openai({ apiKey: key });
    await mock.script(MODEL, [{ content: 'alpha beta gamma', completion_tokens: 3, cached_tokens: 5, reasoning_tokens: 7 }]);
    const r = await client.chat.completions.create({ model: 'g', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say three words please, thanks.' }], max_tokens: 50 });
    assert.equal(r.choices[0].message.content, 'alpha beta gamma');
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.usage.completion_tokens, 10, 'candidates + thoughts');
    assert.equal(r.usage.completion_tokens_details.reasoning_tokens, 7);
    assert.equal(r.usage.prompt_tokens_details.cached_tokens, 5);
    const [b] = await bills(mock);
    assert.equal(r.usage.prompt_tokens, b.prompt_tokens, 'the gateway read the bill the upstream reported');
    const first = await assertSpendIsBill(gw, key, mock);

    const stream = await client.chat.completions.create({ model: 'g', messages: [{ role: 'user', content: 'Stream it.' }], max_tokens: 50, stream: true, stream_options: { include_usage: true } });
    let text = ''; let usage = null; let finish = null;
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      usage = c.usage ?? usage;
    }
    assert.equal(text, 'alpha beta gamma');
    assert.equal(finish, 'stop');
    assert.equal(usage.completion_tokens, 10);
    const second = await assertSpendIsBill(gw, key, mock);
    assert.ok(second > first);
    assert.equal((await mock.model(MODEL)).streams, 1);
  });

  e2e(`${kind}: a forced tool call, non-streaming and streaming (openai SDK); spend == bill`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(gatewayConfig({ model_list: [deploy(mock, 'g')] }));
    const { key } = await gw.generateKey({});
    const client = gw.openai({ apiKey: key });
    await mock.script(MODEL, [{ content: 'gateway', completion_tokens: 1 }]);
    const body = { model: 'g', messages: [{ role: 'user', content: 'Look up "gateway".' }], tools: TOOLS, tool_choice: 'required', max_tokens: 40 };
    const r = await client.chat.completions.create(body);
    const call = r.choices[0].message.tool_calls?.[0];
    assert.equal(call?.function.name, 'lookup');
    assert.deepEqual(JSON.parse(call.function.arguments), { text: 'gateway' });
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    const s = await client.chat.completions.create({ ...body, stream: true });
    const calls = []; let finish = null;
    for await (const c of s) {
      for (const t of c.choices[0]?.delta?.tool_calls ?? []) calls.push(t);
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(calls.length, 1);
    assert.equal(calls[0].function.name, 'lookup');
    assert.equal(finish, 'tool_calls');
    // The tool result goes back as a functionResponse; the model answers in text.
    await mock.script(MODEL, [{ content: 'found it', completion_tokens: 2 }]);
    const follow = await client.chat.completions.create({ model: 'g', max_tokens: 40, tools: TOOLS, messages: [
      ...body.messages, r.choices[0].message, { role: 'tool', tool_call_id: call.id, content: '{"definition":"a toll booth"}' }] });
    assert.equal(follow.choices[0].message.content, 'found it');
    await assertSpendIsBill(gw, key, mock);
  });

  e2e(`${kind}: the Anthropic Messages API (@anthropic-ai/sdk), text and tool_use, streaming and not; spend == bill`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(gatewayConfig({ model_list: [deploy(mock, 'g')] }));
    const { key } = await gw.generateKey({});
    const client = gw.anthropic({ apiKey: key });
    await mock.script(MODEL, [{ content: 'one two', completion_tokens: 2, reasoning_tokens: 3 }]);
    const m = await client.messages.create({ model: 'g', max_tokens: 30, messages: [{ role: 'user', content: 'Two words.' }] });
    assert.equal(m.content[0].text, 'one two');
    assert.equal(m.stop_reason, 'end_turn');
    assert.equal(m.usage.output_tokens, 5);
    const events = await client.messages.create({ model: 'g', max_tokens: 30, stream: true, messages: [{ role: 'user', content: 'Two words.' }] });
    let text = '';
    for await (const e of events) if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
    assert.equal(text, 'one two');
    const tool = await client.messages.create({ model: 'g', max_tokens: 30, tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'Look up x.' }],
      tools: [{ name: 'lookup', description: 'Looks a word up', input_schema: TOOLS[0].function.parameters }] });
    const use = tool.content.find((c) => c.type === 'tool_use');
    assert.equal(use?.name, 'lookup');
    assert.equal(tool.stop_reason, 'tool_use');
    const ts = await client.messages.create({ model: 'g', max_tokens: 30, stream: true, tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'Look up x.' }],
      tools: [{ name: 'lookup', description: 'Looks a word up', input_schema: TOOLS[0].function.parameters }] });
    let stop = null; let started = null;
    for await (const e of ts) {
      if (e.type === 'content_block_start' && e.content_block.type === 'tool_use') started = e.content_block.name;
      if (e.type === 'message_delta') stop = e.delta.stop_reason;
    }
    assert.equal(started, 'lookup');
    assert.equal(stop, 'tool_use');
    await assertSpendIsBill(gw, key, mock);
  });

  e2e(`${kind}: 429 RESOURCE_EXHAUSTED is retried (retryable_capacity), unbilled; a key past its budget is refused with nothing sent`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(gatewayConfig({ model_list: [deploy(mock, 'g')], router_settings: { num_retries: 1 } }));
    const { key } = await gw.generateKey({});
    await mock.script(MODEL, [{ error: 'rate_limit_exceeded' }, { completion_tokens: 4 }]);
    const { data, response } = await gw.openai({ apiKey: key }).chat.completions.create({ model: 'g', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }).withResponse();
    assert.equal(data.usage.completion_tokens, 4);
    assert.equal(response.headers.get('x-litellm-attempted-retries'), '1');
    const row = await spendLogRow(gw, response);
    assert.deepEqual(classes(row), ['retryable_capacity', null]);
    assert.equal((await mock.model(MODEL)).requests, 2);
    await assertSpendIsBill(gw, key, mock);
    // Past the budget: refused before anything reaches the upstream.
    const poor = await gw.generateKey({ max_budget: dollars(1000) });  // $0.000001 < one attempt's worst case
    const before = (await mock.model(MODEL)).requests;
    const e = await sdkError(gw.openai({ apiKey: poor.key }).chat.completions.create({ model: 'g', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }));
    assert.equal(e.status, 429);
    assert.equal(e.error?.type, 'budget_exceeded');
    assert.equal((await mock.model(MODEL)).requests, before, 'nothing sent');
    assert.equal(await spendNanos(gw, poor.key), 0);
  });

  e2e(`${kind}: 503 UNAVAILABLE and 500 INTERNAL, auth and context-overflow errors are classified as documented and fall back`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [deploy(mock, 'g'), deploy(mock, 'backup', { id: 'backup.1', upstream: 'backup-model' })],
      litellm_settings: { fallbacks: [{ g: ['backup'] }], context_window_fallbacks: [{ g: ['backup'] }] },
    }));
    const { key } = await gw.generateKey({});
    const client = gw.openai({ apiKey: key });
    const cases = [
      ['overloaded', 'retryable_capacity'],
      ['server_error', 'transient_provider_error'],
      ['context_length_exceeded', 'context_overflow'],
      ['invalid_api_key', 'deployment_misconfigured'],  // last: it opens the deployment's circuit
    ];
    for (const [error, cls] of cases) {
      await mock.script(MODEL, [{ error }]);
      await mock.script('backup-model', [{ completion_tokens: 2 }]);
      const { data, response } = await client.chat.completions.create({ model: 'g', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }).withResponse();
      assert.equal(data.usage.completion_tokens, 2, error);
      const row = await spendLogRow(gw, response);
      assert.equal(classes(row)[0], cls, `${error}: ${JSON.stringify(row.decision.steps)}`);
      assert.equal(response.headers.get('x-litellm-model-id'), 'backup.1');
    }
    // The failed attempts were Google error answers: unbilled; only the fallback's answers cost.
    await assertSpendIsBill(gw, key, mock);
  });
}

e2e('gemini: an error with no fallback reaches the openai SDK in OpenAI\'s error shape', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [gemini(mock, 'g')] }));
  await mock.script(MODEL, [{ error: 'context_length_exceeded' }]);
  const e = await sdkError(gw.openai().chat.completions.create({ model: 'g', messages: [{ role: 'user', content: 'hi' }], max_tokens: 10 }));
  assert.equal(e.status, 400);
  assert.equal(e.code, 'context_length_exceeded');
  assert.match(e.message, /exceeds the maximum number of tokens/);
});

e2e('vertex: the OAuth token is minted once and reused, then refreshed once it nears expiry', async (ctx) => {
  const { mock } = state;
  // expires_in=2: the token is reused for 1 s (refreshed min(60 s, half its lifetime) early).
  const gw = await ctx.gateway(gatewayConfig({ model_list: [vertex(mock, 'v', { vertex_credentials: keyFile(mock, 'refresh', '?expires_in=2') })] }));
  const { key } = await gw.generateKey({});
  const client = gw.openai({ apiKey: key });
  const ask = () => client.chat.completions.create({ model: 'v', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
  await ask();
  await ask();
  await ask();
  assert.deepEqual(await tokens(mock), { minted: 1, rejected: 0 }, 'one token for three calls');
  await sleep(1500);
  await ask();
  assert.deepEqual(await tokens(mock), { minted: 2, rejected: 0 }, 'refreshed after it neared expiry');
  assert.equal((await mock.model(MODEL)).succeeded, 4);
  await assertSpendIsBill(gw, key, mock);
});

e2e('vertex: missing credentials → a config check warning, and 401 deployment_misconfigured at call time (nothing sent, circuit opened, alerted)', async (ctx) => {
  const { mock } = state;
  const env = { ...process.env };
  delete env.GOOGLE_APPLICATION_CREDENTIALS;
  delete env.VERTEXAI_PROJECT;
  const cfg = gatewayConfig({ model_list: [vertex(mock, 'v', { vertex_project: undefined })] });
  const cfgFile = path.join(dir, 'nocreds.yaml');
  writeFileSync(cfgFile, toYaml(cfg));
  const check = spawnSync(path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate'), ['config', 'check', cfgFile], { env, encoding: 'utf8' });
  const out = `${check.stdout}\n${check.stderr}`;
  assert.equal(check.status, 0, out);
  assert.match(out, /vertex_credentials.*no service-account credentials.*deployment_misconfigured/);
  assert.match(out, /vertex_project.*no project.*deployment_misconfigured/);

  const gw = await ctx.gateway(cfg);
  const e = await sdkError(gw.openai().chat.completions.create({ model: 'v', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }));
  assert.equal(e.status, 401);
  assert.equal(e.code, 'deployment_misconfigured');
  assert.match(e.message, /vertex_ai needs a project|no service-account credentials/);
  assert.equal((await mock.model(MODEL)).requests, 0, 'nothing sent upstream');
  assert.deepEqual(await tokens(mock), { minted: 0, rejected: 0 });
  assert.equal((await circuitOf(gw, 'deployments', 'v.vertex'))?.state, 'open', JSON.stringify(await gw.admin('/tollgate/circuits')));
  await waitFor(async () => metricValue(await metricsText(gw), 'tollgate_alerts_total', { kind: 'deployment_misconfigured' }) >= 1,
    { what: 'a deployment_misconfigured alert' });
});

e2e('vertex: a token endpoint refusing the assertion → 401 deployment_misconfigured, nothing sent upstream', async (ctx) => {
  const { mock } = state;
  const bad = path.join(dir, 'bad-key.json');
  // A well-formed key whose token_uri answers 400 invalid_grant (the mock's grant_type check).
  writeFileSync(bad, JSON.stringify({ type: 'service_account', private_key: privateKey, client_email: 'x@p.iam.gserviceaccount.com', token_uri: `${mock.url}/token?grant_type=wrong` }));
  const gw = await ctx.gateway(gatewayConfig({ model_list: [vertex(mock, 'v', { vertex_credentials: bad })] }));
  const e = await sdkError(gw.openai().chat.completions.create({ model: 'v', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }));
  assert.equal(e.status, 401);
  assert.equal(e.code, 'deployment_misconfigured');
  assert.equal((await mock.model(MODEL)).requests, 0);
});

e2e('vertex: a token Vertex refuses (401) is dropped: after the cooldown the probe mints a fresh one', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [vertex(mock, 'v', { vertex_credentials: keyFile(mock, 'revoked') })] }));
  const ask = () => gw.openai().chat.completions.create({ model: 'v', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
  await ask();
  await mock.script(MODEL, [{ error: 'invalid_api_key' }, {}]);
  const e = await sdkError(ask());
  assert.equal(e.status, 401);
  assert.equal((await tokens(mock)).minted, 1);
  await sleep(1200);  // cooldown_time 1 s: the deployment is half-open again
  await ask();
  assert.equal((await tokens(mock)).minted, 2, 'a fresh token after the refusal');
});

e2e('gemini: a stream cut before its finish reason, or stalled, is settled at the reservation (never under the bill)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [gemini(mock, 'g')], router_settings: { timeout: 2 } }));
  const { key } = await gw.generateKey({});
  const client = gw.openai({ apiKey: key });
  let recordedUnknown = 0;
  for (const fault of [{ fault: 'truncate', truncate_after_tokens: 3 }, { fault: 'stall', stall_after_tokens: 2 }]) {
    await mock.script(MODEL, [{ completion_tokens: 8, ...fault }]);
    const { data: s, response } = await client.chat.completions.create({ model: 'g', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, stream: true }).withResponse();
    let text = '';
    try { for await (const c of s) text += c.choices[0]?.delta?.content ?? ''; } catch { /* the cut ends the stream */ }
    assert.ok(text.length > 0, `${fault.fault}: some text was relayed`);
    const row = await spendLogRow(gw, response);
    const att = row.decision.steps.filter((x) => x.step === 'attempt');
    assert.ok(['unreadable', 'no_answer'].includes(att[0].evidence), JSON.stringify(att));
    recordedUnknown += Math.round(Number(att[0].charged) * 1e9);
  }
  const bill = await billOf(mock);
  const spent = await spendNanos(gw, key);
  assert.equal(spent, recordedUnknown, 'each cut stream is charged its reservation');
  assert.ok(bill <= spent, `bill ${bill} > recorded ${spent}`);
});

e2e('gemini: a prompt blocked before generation (promptFeedback.blockReason) is a content_policy failure: content_policy_fallbacks serves, spend == both bills; without a fallback a 400', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [gemini(mock, 'g'), gemini(mock, 'strict', { upstream: 'strict-model' }), gemini(mock, 'backup', { id: 'backup.1', upstream: 'backup-model' })],
    litellm_settings: { content_policy_fallbacks: [{ g: ['backup'] }] },
  }));
  const body = { model: 'g', messages: [{ role: 'user', content: 'something the filter blocks' }], max_tokens: 10 };
  for (const stream of [false, true]) {
    await mock.reset();
    const { key } = await gw.generateKey({ max_budget: 1 });
    const client = gw.openai({ apiKey: key, maxRetries: 0 });
    await mock.script(MODEL, [{ block_reason: 'SAFETY' }]);
    await mock.script('backup-model', [{ content: 'a safe answer', completion_tokens: 3 }]);
    let text = '', response;
    if (stream) {
      const s = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }).withResponse();
      response = s.response;
      for await (const c of s.data) text += c.choices[0]?.delta?.content ?? '';
    } else {
      const r = await client.chat.completions.create(body).withResponse();
      response = r.response;
      text = r.data.choices[0].message.content;
    }
    assert.equal(text, 'a safe answer', `stream ${stream}`);
    assert.equal(response.headers.get('x-litellm-model-id'), 'backup.1');
    const row = await spendLogRow(gw, response);
    assert.equal(classes(row)[0], 'content_policy', JSON.stringify(row.decision.steps));
    assert.equal(row.decision.steps.find((s) => s.step === 'attempt').evidence, 'answered', 'the blocked prompt is billed by its usageMetadata');
    const all = await bills(mock);
    const blocked = all.filter((b) => b.model === MODEL);
    assert.equal(blocked.length, 1, 'the blocked prompt is billed (Gemini bills its prompt tokens)');
    assert.ok(blocked[0].prompt_tokens > 0);
    assert.equal(blocked[0].completion_tokens, 0);
    assert.equal(all.filter((b) => b.model === 'backup-model').length, 1);
    await assertSpendIsBill(gw, key, mock);  // == the blocked prompt's bill + the fallback's
  }
  // No content-policy fallback for the group: the caller gets OpenAI's 400, and pays the prompt.
  await mock.reset();
  const { key } = await gw.generateKey({ max_budget: 1 });
  await mock.script('strict-model', [{ block_reason: 'PROHIBITED_CONTENT' }]);
  const e = await sdkError(gw.openai({ apiKey: key, maxRetries: 0 }).chat.completions.create({ ...body, model: 'strict' }));
  assert.equal(e.status, 400);
  assert.equal(e.code, 'content_policy_violation');
  assert.match(e.message, /PROHIBITED_CONTENT/);
  assert.equal((await mock.model('strict-model')).requests, 1, 'not retried');
  await assertSpendIsBill(gw, key, mock);
});
