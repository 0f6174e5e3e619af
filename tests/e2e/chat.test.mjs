// OpenAI chat completions through the gateway with the official `openai` SDK:
// non-streaming and streaming, usage, finish_reason, LiteLLM response headers,
// /v1/models and the health endpoints.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, openaiDeployment, chatBody, MASTER_KEY } from './harness.mjs';

const state = useMock();

const CONTENT = 'alpha beta gamma delta';
const WORDS = 4;
// content plus an explicit token count, so the mock's answer is exact either way.
const REPLY = { content: CONTENT, completion_tokens: WORDS };

function config(mock) {
  return gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'chat-basic', 'basic-model', { id: 'basic-deployment-1' }),
      openaiDeployment(mock, 'chat-other', 'other-model', { id: 'other-deployment-1' }),
    ],
  });
}

function assertLitellmHeaders(headers, { group, id, mockUrl, retries = '0', fallbacks = '0' }) {
  assert.equal(headers.get('x-litellm-model-group'), group, 'x-litellm-model-group');
  assert.equal(headers.get('x-litellm-model-id'), id, 'x-litellm-model-id');
  const apiBase = headers.get('x-litellm-model-api-base');
  assert.ok(apiBase && apiBase.startsWith(mockUrl), `x-litellm-model-api-base ${apiBase} should point at the mock ${mockUrl}`);
  assert.equal(headers.get('x-litellm-attempted-retries'), retries, 'x-litellm-attempted-retries');
  assert.equal(headers.get('x-litellm-attempted-fallbacks'), fallbacks, 'x-litellm-attempted-fallbacks');
  assert.match(headers.get('x-litellm-call-id') ?? '', /\S{8,}/, 'x-litellm-call-id');
  assert.match(headers.get('x-litellm-response-duration-ms') ?? '', /^\d+(\.\d+)?$/, 'x-litellm-response-duration-ms');
  assert.match(headers.get('x-litellm-overhead-duration-ms') ?? '', /^\d+(\.\d+)?$/, 'x-litellm-overhead-duration-ms');
}

e2e('non-streaming chat: content, usage, finish_reason, headers, mock bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('basic-model', [REPLY]);
  const client = gw.openai();

  const { data, response } = await client.chat.completions
    .create(chatBody('chat-basic', { max_tokens: 50 }))
    .withResponse();

  assert.equal(response.status, 200);
  assert.equal(data.object, 'chat.completion');
  assert.equal(data.choices.length, 1);
  assert.equal(data.choices[0].message.role, 'assistant');
  assert.equal(data.choices[0].message.content, CONTENT);
  assert.equal(data.choices[0].finish_reason, 'stop');
  assert.equal(data.usage.completion_tokens, WORDS);
  assert.ok(data.usage.prompt_tokens > 0, 'prompt_tokens > 0');
  assert.equal(data.usage.total_tokens, data.usage.prompt_tokens + data.usage.completion_tokens);
  assertLitellmHeaders(response.headers, { group: 'chat-basic', id: 'basic-deployment-1', mockUrl: mock.url });

  const m = await mock.model('basic-model');
  assert.equal(m.requests, 1);
  assert.equal(m.succeeded, 1);
  assert.equal(m.streams, 0);
  assert.equal(m.completion_tokens, WORDS);
  assert.equal(m.prompt_tokens, data.usage.prompt_tokens, 'gateway usage matches the upstream bill');
  assert.equal((await mock.model('other-model')).requests, 0, 'the other group was not touched');

  const again = await client.chat.completions.create(chatBody('chat-basic')).withResponse();
  assert.notEqual(again.response.headers.get('x-litellm-call-id'), response.headers.get('x-litellm-call-id'),
    'every call has its own id');
});

e2e('max_tokens is passed through: finish_reason length', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const data = await gw.openai().chat.completions.create(chatBody('chat-basic', { max_tokens: 3 }));
  assert.equal(data.choices[0].finish_reason, 'length');
  assert.equal(data.usage.completion_tokens, 3);
  assert.equal(data.choices[0].message.content.trim().split(/\s+/).length, 3);
});

e2e('POST /chat/completions (no /v1 prefix) works too', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('other-model', [REPLY]);
  const r = await gw.fetch('/chat/completions', { body: chatBody('chat-other') });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].message.content, CONTENT);
  assert.equal(r.headers.get('x-litellm-model-group'), 'chat-other');
  assert.equal((await mock.model('other-model')).requests, 1);
});

e2e('streaming chat: deltas, finish_reason, no usage chunk unless asked', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('basic-model', [REPLY]);

  const { data: stream, response } = await gw.openai().chat.completions
    .create(chatBody('chat-basic', { stream: true }))
    .withResponse();
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  assertLitellmHeaders(response.headers, { group: 'chat-basic', id: 'basic-deployment-1', mockUrl: mock.url });

  let text = '';
  let finish = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    assert.ok(!chunk.usage, `no usage when include_usage was not asked: ${JSON.stringify(chunk)}`);
    assert.equal(chunk.choices.length, 1, `every chunk carries the choice: ${JSON.stringify(chunk)}`);
    text += chunk.choices[0].delta?.content ?? '';
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(text, CONTENT);
  assert.equal(finish, 'stop');
  assert.ok(chunks >= WORDS, `one chunk per token at least (${chunks})`);

  const m = await mock.model('basic-model');
  assert.equal(m.requests, 1);
  assert.equal(m.streams, 1);
  assert.equal(m.succeeded, 1);
  assert.equal(m.completion_tokens, WORDS);
});

e2e('streaming chat with stream_options.include_usage: final usage chunk', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('basic-model', [REPLY]);

  const stream = await gw.openai().chat.completions.create(
    chatBody('chat-basic', { stream: true, stream_options: { include_usage: true } }));
  let text = '';
  const usageChunks = [];
  let last = null;
  for await (const chunk of stream) {
    last = chunk;
    if (chunk.usage) usageChunks.push(chunk);
    for (const c of chunk.choices) text += c.delta?.content ?? '';
  }
  assert.equal(text, CONTENT);
  assert.equal(usageChunks.length, 1, 'exactly one usage chunk');
  assert.equal(last, usageChunks[0], 'the usage chunk is the last one');
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, WORDS);
  assert.ok(last.usage.prompt_tokens > 0);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + WORDS);
  assert.equal((await mock.model('basic-model')).prompt_tokens, last.usage.prompt_tokens);
});

e2e('GET /v1/models lists the model groups', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const page = await gw.openai().models.list();
  const ids = page.data.map((m) => m.id).sort();
  assert.deepEqual(ids, ['chat-basic', 'chat-other']);
  for (const m of page.data) assert.equal(m.object, 'model');

  const noKey = await gw.fetch('/v1/models', { method: 'GET', auth: false });
  assert.equal(noKey.status, 401, '/v1/models needs the key');
});

e2e('health endpoints', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const live = await gw.fetch('/health/liveliness', { method: 'GET', auth: false });
  assert.equal(live.status, 200, live.text);
  const ready = await gw.fetch('/health/readiness', { method: 'GET', auth: false });
  assert.equal(ready.status, 200, ready.text);
  assert.equal((await mock.stats()).requests_total, 0, 'health checks do not call the upstream');
});

e2e('the master key is accepted in Authorization, x-litellm-api-key and x-api-key', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  for (const headers of [
    { authorization: `Bearer ${MASTER_KEY}` },
    { 'x-litellm-api-key': MASTER_KEY },
    { 'x-api-key': MASTER_KEY },
  ]) {
    const r = await gw.fetch('/v1/chat/completions', { body: chatBody('chat-basic'), headers, auth: false });
    assert.equal(r.status, 200, `${JSON.stringify(headers)}: ${r.text}`);
  }
  assert.equal((await mock.model('basic-model')).requests, 3);
});

e2e('an azure/... deployment is reached at /openai/deployments/{name}/chat/completions', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [{
      model_name: 'azure-group',
      litellm_params: { model: 'azure/azure-dep', api_base: mock.url, api_key: 'azure-upstream-key', api_version: '2024-06-01' },
      model_info: { id: 'azure-1' },
    }],
  }));
  await mock.script('azure-dep', [REPLY]);
  const client = gw.openai();
  const { data, response } = await client.chat.completions.create(chatBody('azure-group')).withResponse();
  assert.equal(data.choices[0].message.content, CONTENT);
  assert.equal(response.headers.get('x-litellm-model-id'), 'azure-1');
  const stream = await client.chat.completions.create(chatBody('azure-group', { stream: true }));
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, CONTENT);
  const m = await mock.model('azure-dep');
  assert.equal(m.requests, 2);
  assert.equal(m.streams, 1);
});
