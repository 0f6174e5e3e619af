// Anthropic: /v1/messages through @anthropic-ai/sdk (non-streaming and streaming, usage,
// Anthropic error bodies), and anthropic/... deployments reached through the OpenAI SDK
// (chat completions translated to the Messages API and back, streaming usage included).
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import {
  useMock, e2e, gatewayConfig, anthropicDeployment, openaiDeployment, chatBody, rejectsWith, MASTER_KEY,
} from './harness.mjs';

const state = useMock();

const CONTENT = 'hello from the claude mock';
const WORDS = 5;
const REPLY = { content: CONTENT, completion_tokens: WORDS };

function config(mock, extra = {}) {
  return gatewayConfig({
    model_list: [
      anthropicDeployment(mock, 'claude', 'claude-mock-model', { id: 'claude-1' }),
      anthropicDeployment(mock, 'claude-backup', 'claude-backup-model', { id: 'claude-backup-1' }),
      openaiDeployment(mock, 'gpt', 'gpt-mock-model', { id: 'gpt-1' }),
    ],
    ...extra,
  });
}

const messagesBody = (model, extra = {}) => ({
  model,
  max_tokens: 64,
  messages: [{ role: 'user', content: 'Say something short.' }],
  ...extra,
});

e2e('/v1/messages non-streaming via the Anthropic SDK', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [REPLY]);
  const { data: msg, response } = await gw.anthropic().messages.create(messagesBody('claude')).withResponse();
  assert.equal(response.status, 200);
  assert.equal(msg.type, 'message');
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.content.length, 1);
  assert.equal(msg.content[0].type, 'text');
  assert.equal(msg.content[0].text, CONTENT);
  assert.equal(msg.stop_reason, 'end_turn');
  assert.equal(msg.usage.output_tokens, WORDS);
  assert.ok(msg.usage.input_tokens > 0);
  assert.equal(response.headers.get('x-litellm-model-group'), 'claude');
  assert.equal(response.headers.get('x-litellm-model-id'), 'claude-1');
  const m = await mock.model('claude-mock-model');
  assert.equal(m.requests, 1);
  assert.equal(m.succeeded, 1);
  assert.equal(m.completion_tokens, WORDS);
  assert.equal(m.prompt_tokens, msg.usage.input_tokens);
});

e2e('/v1/messages streaming via the Anthropic SDK: events, text and usage', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [REPLY]);
  const stream = await gw.anthropic().messages.create(messagesBody('claude', { stream: true }));
  const types = [];
  let text = '';
  let inputTokens = null;
  let outputTokens = null;
  let stopReason = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'message_start') inputTokens = ev.message.usage.input_tokens;
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') {
      outputTokens = ev.usage.output_tokens;
      stopReason = ev.delta.stop_reason;
    }
  }
  assert.equal(text, CONTENT);
  assert.ok(inputTokens > 0, 'message_start carries input_tokens');
  assert.equal(outputTokens, WORDS);
  assert.equal(stopReason, 'end_turn');
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.ok(types.includes('content_block_start') && types.includes('content_block_stop'), types.join(','));
  const m = await mock.model('claude-mock-model');
  assert.equal(m.streams, 1);
  assert.equal(m.completion_tokens, WORDS);
  assert.equal(m.prompt_tokens, inputTokens);
});

e2e('/v1/messages streaming helper: finalMessage() has the text and usage', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [REPLY]);
  const final = await gw.anthropic().messages.stream(messagesBody('claude')).finalMessage();
  assert.equal(final.content[0].text, CONTENT);
  assert.equal(final.usage.output_tokens, WORDS);
  assert.ok(final.usage.input_tokens > 0);
});

e2e('/v1/messages errors use the Anthropic error body', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));

  const unknown = await rejectsWith(gw.anthropic().messages.create(messagesBody('no-such-claude')));
  assert.equal(unknown.status, 400, String(unknown));
  assert.equal(unknown.error?.type, 'error');
  assert.equal(unknown.error?.error?.type, 'invalid_request_error');
  assert.match(unknown.error?.error?.message ?? '', /no-such-claude/);

  const badKey = await rejectsWith(gw.anthropic({ apiKey: 'sk-wrong' }).messages.create(messagesBody('claude')));
  assert.equal(badKey.status, 401, String(badKey));
  assert.equal(badKey.error?.type, 'error');
  assert.equal(badKey.error?.error?.type, 'authentication_error');

  // An upstream 529 overloaded (no fallback, no retries) reaches the client as Anthropic's 529.
  await mock.script('claude-mock-model', [{ error: 'overloaded_529' }]);
  const overloaded = await rejectsWith(gw.anthropic().messages.create(messagesBody('claude')));
  assert.equal(overloaded.status, 529, String(overloaded));
  assert.equal(overloaded.error?.type, 'error');
  assert.equal(overloaded.error?.error?.type, 'overloaded_error');
  assert.equal((await mock.model('claude-mock-model')).requests, 1);
});

e2e('/v1/messages: a 529 from the primary falls back to another Anthropic group', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock, { litellm_settings: { fallbacks: [{ claude: ['claude-backup'] }] } }));
  await mock.script('claude-mock-model', [{ error: 'overloaded_529' }]);
  await mock.script('claude-backup-model', [REPLY]);
  const { data: msg, response } = await gw.anthropic().messages.create(messagesBody('claude')).withResponse();
  assert.equal(msg.content[0].text, CONTENT);
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal(response.headers.get('x-litellm-model-id'), 'claude-backup-1');
  assert.deepEqual(await mock.requests('claude-mock-model', 'claude-backup-model'),
    { 'claude-mock-model': 1, 'claude-backup-model': 1 });
});

e2e('/v1/messages routed to an openai/... deployment is translated both ways', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('gpt-mock-model', [REPLY]);
  const msg = await gw.anthropic().messages.create(messagesBody('gpt'));
  assert.equal(msg.type, 'message');
  assert.equal(msg.content[0].text, CONTENT);
  assert.equal(msg.usage.output_tokens, WORDS);
  assert.ok(msg.usage.input_tokens > 0);
  assert.equal((await mock.model('gpt-mock-model')).requests, 1);
});

e2e('OpenAI SDK to an anthropic/... deployment: non-streaming translation', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [REPLY]);
  const { data, response } = await gw.openai().chat.completions.create(
    chatBody('claude', {
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say something short.' },
      ],
      max_tokens: 64,
    })).withResponse();
  assert.equal(data.object, 'chat.completion');
  assert.equal(data.choices[0].message.role, 'assistant');
  assert.equal(data.choices[0].message.content, CONTENT);
  assert.equal(data.choices[0].finish_reason, 'stop');
  assert.equal(data.usage.completion_tokens, WORDS);
  assert.ok(data.usage.prompt_tokens > 0);
  assert.equal(data.usage.total_tokens, data.usage.prompt_tokens + WORDS);
  assert.equal(response.headers.get('x-litellm-model-id'), 'claude-1');
  const m = await mock.model('claude-mock-model');
  assert.equal(m.requests, 1);
  assert.equal(m.prompt_tokens, data.usage.prompt_tokens);
});

e2e('OpenAI SDK to an anthropic/... deployment: max_tokens cap maps to finish_reason length', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const data = await gw.openai().chat.completions.create(chatBody('claude', { max_tokens: 3 }));
  assert.equal(data.choices[0].finish_reason, 'length');
  assert.equal(data.usage.completion_tokens, 3);
});

e2e('OpenAI SDK to an anthropic/... deployment: streaming with include_usage', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [REPLY]);
  const stream = await gw.openai().chat.completions.create(
    chatBody('claude', { stream: true, stream_options: { include_usage: true }, max_tokens: 64 }));
  let text = '';
  let finish = null;
  const usageChunks = [];
  let last = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    last = chunk;
    if (chunk.usage) usageChunks.push(chunk);
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, CONTENT);
  assert.equal(finish, 'stop');
  assert.equal(usageChunks.length, 1, 'one usage chunk');
  assert.equal(last, usageChunks[0], 'usage comes last');
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, WORDS);
  assert.ok(last.usage.prompt_tokens > 0);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + WORDS);
  const m = await mock.model('claude-mock-model');
  assert.equal(m.streams, 1);
  assert.equal(m.prompt_tokens, last.usage.prompt_tokens);
});

e2e('OpenAI SDK to an anthropic/... deployment: no usage chunk unless asked', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [REPLY]);
  const stream = await gw.openai().chat.completions.create(chatBody('claude', { stream: true, max_tokens: 64 }));
  let text = '';
  for await (const chunk of stream) {
    assert.ok(!chunk.usage, `no usage chunk: ${JSON.stringify(chunk)}`);
    assert.ok(chunk.choices.length === 1, `no empty-choices chunk: ${JSON.stringify(chunk)}`);
    text += chunk.choices[0].delta?.content ?? '';
  }
  assert.equal(text, CONTENT);
});

e2e('OpenAI SDK to an anthropic/... deployment: upstream errors map to OpenAI errors', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [{ error: 'invalid_request' }]);
  const err = await rejectsWith(gw.openai().chat.completions.create(chatBody('claude')));
  assert.equal(err.status, 400, String(err));
  assert.equal(err.error?.type, 'invalid_request_error', JSON.stringify(err.error));
  assert.equal(typeof err.error?.message, 'string');
  assert.ok(err.error.message.length > 0);
});

e2e('the Anthropic SDK key header (x-api-key) is what authenticates /v1/messages', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [REPLY]);
  const r = await gw.fetch('/v1/messages', {
    auth: false,
    headers: { 'x-api-key': MASTER_KEY, 'anthropic-version': '2023-06-01' },
    body: messagesBody('claude'),
  });
  assert.equal(r.status, 200, r.text);
  const none = await gw.fetch('/v1/messages', { auth: false, headers: { 'anthropic-version': '2023-06-01' }, body: messagesBody('claude') });
  assert.equal(none.status, 401, none.text);
  assert.equal(none.json?.type, 'error');
  assert.equal((await mock.model('claude-mock-model')).requests, 1);
});

e2e('/v1/messages: an upstream that dies mid-stream ends with an Anthropic error event', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [{ fault: 'truncate', completion_tokens: 20 }]);
  let text = '';
  let stopped = false;
  const t0 = performance.now();
  const err = await rejectsWith((async () => {
    const stream = await gw.anthropic().messages.create(messagesBody('claude', { stream: true }));
    for await (const ev of stream) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
      if (ev.type === 'message_stop') stopped = true;
    }
  })());
  assert.ok(performance.now() - t0 < 8000, 'ended promptly');
  assert.ok(err instanceof Anthropic.APIError,
    `an error event (the SDK raises APIError), not a torn connection: ${err?.constructor?.name}: ${err}`);
  assert.equal(stopped, false, 'no message_stop for a broken stream');
  assert.ok(text.length > 0, 'the text before the break was relayed');
}, { timeout: 15000 });

e2e('OpenAI SDK to an anthropic/... deployment: a broken upstream stream ends with an error', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('claude-mock-model', [{ fault: 'truncate', completion_tokens: 20 }]);
  let finish = null;
  const err = await rejectsWith((async () => {
    const stream = await gw.openai().chat.completions.create(chatBody('claude', { stream: true, max_tokens: 64 }));
    for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
  })());
  assert.ok(err instanceof OpenAI.APIError, `${err?.constructor?.name}: ${err}`);
  assert.equal(finish, null, 'no finish_reason for a broken stream');
}, { timeout: 15000 });

e2e('/v1/messages streaming routed to an openai/... deployment: Anthropic events, text and usage', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  await mock.script('gpt-mock-model', [REPLY]);
  const stream = await gw.anthropic().messages.create(messagesBody('gpt', { stream: true }));
  const types = [];
  let text = '';
  let outputTokens = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    if (ev.type === 'message_delta') outputTokens = ev.usage.output_tokens;
  }
  assert.equal(text, CONTENT);
  assert.equal(outputTokens, WORDS);
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  const m = await mock.model('gpt-mock-model');
  assert.equal(m.streams, 1);
  assert.equal(m.completion_tokens, WORDS);
});
