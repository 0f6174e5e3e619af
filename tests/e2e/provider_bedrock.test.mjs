// Amazon Bedrock (Converse / ConverseStream, SigV4, AWS event-stream) through the official SDKs,
// against the simulator's Bedrock endpoints: text and tool calls, streaming and not; spend ==
// the simulator's bill (cache reads and writes priced as such); AWS errors classified as
// docs/failure_policy.md says; missing credentials refused with nothing sent; budgets refuse
// before anything is sent.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, toYaml, MASTER_KEY } from './harness.mjs';
import { spendLogRow, billNanos, mockBillNanos, spendNanos, expectSpend, dollars, unknownCharges } from './budget_helpers.mjs';

const state = useMock();
for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION', 'AWS_DEFAULT_REGION',
  'AWS_REGION_NAME', 'AWS_BEDROCK_RUNTIME_ENDPOINT']) delete process.env[k];

const MODEL = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
const PRICES = { input: '0.000003', output: '0.000015', cached: '0.0000003', cache_write: '0.00000375' };
const priced = {
  input_cost_per_token: PRICES.input, output_cost_per_token: PRICES.output,
  cache_read_input_token_cost: PRICES.cached, cache_creation_input_token_cost: PRICES.cache_write,
};
const AWS = { aws_access_key_id: 'AKIDEXAMPLE', aws_secret_access_key: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', aws_region_name: 'us-east-1' };

/// A bedrock/ deployment on the simulator (LiteLLM's bedrock/converse/ form when `converse`).
function bedrock(mock, group, upstream = MODEL, { converse = false, creds = AWS, ...params } = {}) {
  return {
    model_name: group,
    litellm_params: {
      model: `bedrock/${converse ? 'converse/' : ''}${upstream}`, aws_bedrock_runtime_endpoint: mock.url, ...creds, ...priced, ...params,
    },
    model_info: { id: `${group}.bedrock` },
  };
}

const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
const ARGS = { city: 'Paris' };

async function billed(mock, upstream) {
  const s = await mock.stats();
  return (s.bills ?? []).filter((b) => b.model === upstream);
}

e2e('non-streaming chat (openai SDK): Converse answer translated, cache usage priced, spend == the simulator bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [bedrock(mock, 'claude-br')] }));
  await mock.script(MODEL, [{ content: 'alpha beta gamma', completion_tokens: 3, cached_tokens: 40, cache_write_tokens: 25, prompt_tokens: 100 }]);
  const key = await gw.generateKey({ max_budget: 1 });
  const client = gw.openai({ apiKey: key.key });
  const { data, response } = await client.chat.completions.create({
    model: 'claude-br', max_tokens: 50, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'Tell me about gateways.' }],
  }).withResponse();
  assert.equal(response.status, 200);
  assert.equal(data.choices[0].message.content, 'alpha beta gamma');
  assert.equal(data.choices[0].finish_reason, 'stop');
  assert.equal(data.usage.prompt_tokens, 100);
  assert.equal(data.usage.completion_tokens, 3);
  assert.equal(data.usage.prompt_tokens_details.cached_tokens, 40);
  const bills = await billed(mock, MODEL);
  assert.equal(bills.length, 1);
  assert.equal(bills[0].family, 'bedrock');
  assert.equal(bills[0].cached_tokens, 40);
  assert.equal(bills[0].cache_write_tokens, 25);
  const bill = billNanos(bills[0], PRICES);
  // 35 × $3/M + 40 × $0.30/M + 25 × $3.75/M + 3 × $15/M = 105,000 + 12,000 + 93,750 + 45,000 nanos.
  assert.equal(bill, 255_750);
  await expectSpend(gw, key.key, bill);
  const row = await spendLogRow(gw, response);
  assert.equal(row.decision.steps.find((s) => s.step === 'attempt').evidence, 'answered');
});

e2e('streaming chat with a tool call (openai SDK): ConverseStream event-stream decoded, tool call reassembled, spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [bedrock(mock, 'claude-br', MODEL, { converse: true })] }));
  await mock.script(MODEL, [{ content: 'let me check', completion_tokens: 3, tool_call: 'get_weather', tool_arguments: ARGS, cache_write_tokens: 10, prompt_tokens: 40 }]);
  const key = await gw.generateKey({ max_budget: 1 });
  const client = gw.openai({ apiKey: key.key });
  const stream = await client.chat.completions.create({
    model: 'claude-br', max_tokens: 60, stream: true, stream_options: { include_usage: true }, tools: TOOLS,
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
  });
  let text = '';
  const calls = {};
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.delta?.content ?? '';
    for (const tc of c.delta?.tool_calls ?? []) {
      calls[tc.index] ??= { id: '', name: '', args: '' };
      if (tc.id) calls[tc.index].id = tc.id;
      if (tc.function?.name) calls[tc.index].name = tc.function.name;
      calls[tc.index].args += tc.function?.arguments ?? '';
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  assert.equal(text, 'let me check');
  assert.equal(finish, 'tool_calls');
  assert.equal(calls[0].name, 'get_weather');
  assert.match(calls[0].id, /^tooluse_/);
  assert.deepEqual(JSON.parse(calls[0].args), ARGS);
  assert.ok(usage && usage.completion_tokens === 3, `usage ${JSON.stringify(usage)}`);
  const m = await mock.model(MODEL);
  assert.equal(m.streams, 1);
  const bill = await mockBillNanos(mock, MODEL, PRICES);
  assert.ok(bill > 0);
  await expectSpend(gw, key.key, bill);
});

e2e('Anthropic SDK through a bedrock deployment: tool_use non-streaming and streaming, spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [bedrock(mock, 'claude-br', `us.${MODEL}`)] }));
  const upstream = `us.${MODEL}`;
  await mock.script(upstream, [{ content: 'checking', completion_tokens: 1, tool_call: 'get_weather', tool_arguments: ARGS, cached_tokens: 8, prompt_tokens: 30 }]);
  const key = await gw.generateKey({ max_budget: 1 });
  const client = gw.anthropic({ apiKey: key.key });
  const tools = [{ name: 'get_weather', description: 'Weather', input_schema: TOOLS[0].function.parameters }];
  const msg = await client.messages.create({ model: 'claude-br', max_tokens: 64, tools, messages: [{ role: 'user', content: 'Weather in Paris?' }] });
  assert.equal(msg.stop_reason, 'tool_use');
  const use = msg.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, ARGS);
  assert.equal(msg.usage.output_tokens, 1);

  const s = client.messages.stream({ model: 'claude-br', max_tokens: 64, tools, messages: [{ role: 'user', content: 'Weather in Paris?' }] });
  const final = await s.finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  assert.deepEqual(final.content.find((b) => b.type === 'tool_use').input, ARGS);
  const m = await mock.model(upstream);
  assert.equal(m.requests, 2);
  assert.equal(m.streams, 1);
  await expectSpend(gw, key.key, await mockBillNanos(mock, upstream, PRICES));
});

e2e('AWS errors are classified (429 throttling, 503, 500, 403 auth, 404, context overflow), unbilled, and answered with their status', async (ctx) => {
  const { mock } = state;
  const cases = [
    ['rate_limit_exceeded', 429, 'retryable_capacity'],
    ['overloaded', 503, 'retryable_capacity'],
    ['server_error', 500, 'transient_provider_error'],
    // A timeout status says the answer was not waited for: its outcome (and bill) is unknown.
    ['timeout', 408, 'retryable_capacity', 'unreadable'],
    ['invalid_api_key', 403, 'deployment_misconfigured'],
    ['not_found', 404, 'deployment_misconfigured'],
    ['context_length_exceeded', 400, 'context_overflow'],
    ['invalid_request', 400, 'caller_fix_required'],
  ];
  // One deployment (and upstream model) per case: a misconfigured one opens its own circuit only.
  const gw = await ctx.gateway(gatewayConfig({ model_list: cases.map((c, i) => bedrock(mock, `br-${i}`, `${MODEL}-e${i}`)) }));
  const key = await gw.generateKey({ max_budget: 1 });
  let unknown = 0;
  for (const [i, [error, status, cls, evidence = 'error_response']] of cases.entries()) {
    await mock.script(`${MODEL}-e${i}`, [{ error }]);
    const r = await gw.fetch('/v1/chat/completions', { auth: key.key, body: { model: `br-${i}`, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(r.status, status, `${error}: ${r.text}`);
    assert.ok(r.json?.error?.message, `${error}: an OpenAI-shaped error body`);
    const row = await spendLogRow(gw, r);
    const attempt = row.decision.steps.find((s) => s.step === 'attempt');
    assert.equal(attempt.class, cls, `${error}: class`);
    assert.equal(attempt.evidence, evidence, `${error}: evidence`);
    unknown += unknownCharges(row);
    assert.equal((await mock.model(`${MODEL}-e${i}`)).requests, 1, `${error}: sent once`);
  }
  // The simulator billed nothing; only the timeout's reservation was charged (marked unknown).
  const s = await mock.stats();
  assert.equal((s.bills ?? []).length, 0);
  assert.ok(unknown > 0);
  await expectSpend(gw, key.key, unknown);
});

e2e('missing AWS credentials: config check warns; a call is 401 deployment_misconfigured, nothing sent, nothing charged', async (ctx) => {
  const { mock } = state;
  const cfg = gatewayConfig({ model_list: [bedrock(mock, 'claude-nocreds', MODEL, { creds: {} })] });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-bedrock-'));
  const file = path.join(dir, 'config.yaml');
  writeFileSync(file, toYaml(cfg));
  const check = spawnSync(path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate'), ['config', 'check', file], { encoding: 'utf8' });
  const out = `${check.stdout}${check.stderr}`;
  assert.match(out, /AWS credentials missing: aws_access_key_id/, out);
  assert.match(out, /401 deployment_misconfigured/, out);

  const gw = await ctx.gateway(cfg);
  const r = await gw.fetch('/v1/chat/completions', { body: { model: 'claude-nocreds', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(r.status, 401, r.text);
  assert.equal(r.json.error.code, 'deployment_misconfigured');
  assert.match(r.json.error.message, /aws_secret_access_key/);
  assert.equal((await mock.model(MODEL)).requests, 0, 'nothing was sent');
  const circuits = await gw.admin('/tollgate/circuits');
  const c = circuits.deployments.find((x) => x.id === 'claude-nocreds.bedrock');
  assert.ok(c && c.state === 'open', `the deployment is cooled down: ${JSON.stringify(circuits.deployments)}`);
  assert.equal(nanosOf(await gw.admin('/global/spend')), 0);
});

function nanosOf(g) {
  return Math.round(Number(g?.spend ?? g?.total_spend ?? 0) * 1e9);
}

e2e('the simulator demands a SigV4 Authorization: unsigned → 403 UnrecognizedClientException, garbled → InvalidSignatureException', async () => {
  const { mock } = state;
  const body = { messages: [{ role: 'user', content: [{ text: 'hi' }] }] };
  const p = `/model/${encodeURIComponent(MODEL)}/converse`;
  const unsigned = await fetch(mock.url + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(unsigned.status, 403);
  assert.match(unsigned.headers.get('x-amzn-errortype'), /^UnrecognizedClientException/);
  const garbled = await fetch(mock.url + p, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'AWS4-HMAC-SHA256 nonsense', 'x-amz-date': '20260101T000000Z' }, body: JSON.stringify(body) });
  assert.equal(garbled.status, 403);
  assert.match(garbled.headers.get('x-amzn-errortype'), /^InvalidSignatureException/);
  assert.equal((await mock.model(MODEL)).requests, 0);
});

e2e('a request past the key budget is refused before anything is sent to Bedrock', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [bedrock(mock, 'claude-br')] }));
  const key = await gw.generateKey({ max_budget: dollars(100_000) });  // $0.0001: 1000 output tokens cost $0.015
  const r = await gw.fetch('/v1/chat/completions', { auth: key.key, body: { model: 'claude-br', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(r.status, 429, r.text);
  assert.equal(r.json.error.type, 'budget_exceeded');
  assert.equal((await mock.model(MODEL)).requests, 0);
  assert.equal(await spendNanos(gw, key.key), 0);
});

e2e('a corrupt event-stream frame (CRC mismatch) mid-stream ends the stream with an error; the attempt is charged its reservation, marked unknown', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [bedrock(mock, 'claude-br')] }));
  await mock.script(MODEL, [{ completion_tokens: 8, fault: 'malformed_event' }]);
  const key = await gw.generateKey({ max_budget: 1 });
  const client = gw.openai({ apiKey: key.key });
  const { data: stream, response } = await client.chat.completions.create({ model: 'claude-br', max_tokens: 40, stream: true, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
  let text = '';
  let failed = null;
  try {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  } catch (e) { failed = e; }
  assert.ok(failed, 'the stream ends with an error');
  assert.ok(text.length > 0, 'the frames before the corrupt one were relayed');
  const row = await spendLogRow(gw, response);
  const attempt = row.decision.steps.find((s) => s.step === 'attempt');
  assert.notEqual(attempt.evidence, 'answered');
  const recorded = await spendNanos(gw, key.key);
  const bill = await mockBillNanos(mock, MODEL, PRICES);
  assert.ok(recorded >= bill, `recorded ${recorded} covers the bill ${bill}`);
  assert.ok(recorded > 0);
});

// ---------------------------------------------------------------- SageMaker

function sagemaker(mock, group, endpoint, { chat = false, ...params } = {}) {
  return {
    model_name: group,
    litellm_params: { model: `${chat ? 'sagemaker_chat' : 'sagemaker'}/${endpoint}`, api_base: mock.url, ...AWS, ...priced, ...params },
    model_info: { id: `${group}.sagemaker` },
  };
}

async function streamText(client, body) {
  const { data: stream, response } = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }).withResponse();
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    text += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  return { text, finish, usage, response };
}

e2e('sagemaker_chat/ (OpenAI-compatible container, SigV4 service sagemaker): non-streaming and InvokeEndpointWithResponseStream, spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [sagemaker(mock, 'sm-chat', 'chat-endpoint', { chat: true })] }));
  await mock.script('chat-endpoint', [{ content: 'one two three', completion_tokens: 3 }]);
  const key = await gw.generateKey({ max_budget: 1 });
  const client = gw.openai({ apiKey: key.key });
  const body = { model: 'sm-chat', max_tokens: 30, messages: [{ role: 'user', content: 'count' }] };
  const r = await client.chat.completions.create(body);
  assert.equal(r.choices[0].message.content, 'one two three');
  assert.equal(r.usage.completion_tokens, 3);
  const s = await streamText(client, body);
  assert.equal(s.text, 'one two three');
  assert.equal(s.finish, 'stop');
  assert.equal(s.usage?.completion_tokens, 3);
  const m = await mock.model('chat-endpoint');
  assert.equal(m.requests, 2);
  assert.equal(m.streams, 1);
  await expectSpend(gw, key.key, await mockBillNanos(mock, 'chat-endpoint', PRICES));
});

e2e('sagemaker/ (TGI container): generated_text and token stream relayed; TGI reports no usage, so each attempt is charged its reservation, marked unknown, covering the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [sagemaker(mock, 'sm-tgi', 'tgi-endpoint')] }));
  await mock.script('tgi-endpoint', [{ content: 'red green blue', completion_tokens: 3 }]);
  const key = await gw.generateKey({ max_budget: 1 });
  const client = gw.openai({ apiKey: key.key });
  const body = { model: 'sm-tgi', max_tokens: 30, messages: [{ role: 'user', content: 'colours' }] };
  const { data, response } = await client.chat.completions.create(body).withResponse();
  assert.equal(data.choices[0].message.content, 'red green blue');
  const row1 = await spendLogRow(gw, response);
  const s = await streamText(client, body);
  assert.equal(s.text, 'red green blue');
  assert.equal(s.finish, 'stop');
  const row2 = await spendLogRow(gw, s.response);
  for (const row of [row1, row2]) assert.equal(row.decision.steps.find((x) => x.step === 'attempt').evidence, 'unreadable');
  const unknown = unknownCharges(row1) + unknownCharges(row2);
  assert.ok(unknown > 0);
  const recorded = await expectSpend(gw, key.key, unknown);
  const bill = await mockBillNanos(mock, 'tgi-endpoint', PRICES);
  assert.ok(bill > 0 && recorded >= bill, `recorded ${recorded} covers the bill ${bill}`);
  const m = await mock.model('tgi-endpoint');
  assert.equal(m.requests, 2);
});

e2e('sagemaker errors are AWS errors: a 429 throttling is retryable capacity, unbilled', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [sagemaker(mock, 'sm-chat', 'chat-endpoint', { chat: true })] }));
  await mock.script('chat-endpoint', [{ error: 'rate_limit_exceeded' }]);
  const key = await gw.generateKey({ max_budget: 1 });
  const r = await gw.fetch('/v1/chat/completions', { auth: key.key, body: { model: 'sm-chat', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(r.status, 429, r.text);
  const row = await spendLogRow(gw, r);
  assert.equal(row.decision.steps.find((x) => x.step === 'attempt').class, 'retryable_capacity');
  await expectSpend(gw, key.key, 0);
});
