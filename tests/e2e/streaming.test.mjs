// Streaming edge cases: client disconnect cancels the upstream, an upstream that dies
// mid-stream ends the client's stream with an error (never a hang), fallback before the
// first byte, and a hanging upstream bounded by the timeout.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, openaiDeployment, chatBody, rejectsWith, waitFor } from './harness.mjs';

const state = useMock();

e2e('a client disconnect mid-stream cancels the upstream request', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'slow', 'slow-model')],
  }));
  // 100 tokens at 10/s: a 10 s stream we abandon after a few chunks.
  await mock.script('slow-model', [{ tokens_per_second: 10, completion_tokens: 100 }]);

  const controller = new AbortController();
  const stream = await gw.openai().chat.completions.create(
    chatBody('slow', { stream: true, max_tokens: 200 }), { signal: controller.signal });
  let contentChunks = 0;
  const t0 = performance.now();
  try {
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) contentChunks++;
      if (contentChunks === 3) controller.abort();
    }
  } catch (e) {
    // The SDK ends the iteration quietly on abort, or throws an abort error.
    if (!/abort/i.test(`${e?.name} ${e?.message}`)) throw e;
  }
  assert.equal(contentChunks, 3, 'stopped after 3 content chunks');
  assert.ok(performance.now() - t0 < 3000, 'chunks were relayed as they came, not buffered');

  const m = await waitFor(async () => {
    const s = await mock.model('slow-model');
    return s.cancelled === 1 ? s : null;
  }, { timeoutMs: 4000, what: 'the mock to count slow-model as cancelled' });
  assert.equal(m.requests, 1);
  assert.equal(m.streams, 1);
  assert.equal(m.succeeded, 0);
  assert.ok(m.completion_tokens < 100, `the upstream stopped early (${m.completion_tokens} tokens sent)`);
  assert.equal((await mock.stats()).cancelled_total, 1);

  // The gateway is still serving.
  await mock.script('slow-model', [{ content: 'still here', completion_tokens: 2 }]);
  const after = await gw.openai().chat.completions.create(chatBody('slow'));
  assert.equal(after.choices[0].message.content, 'still here');
}, { timeout: 20000 });

e2e('streams are relayed event by event, not buffered', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'paced', 'paced-model')] }));
  // 6 tokens at 5/s: about 1.2 s for the whole stream.
  await mock.script('paced-model', [{ tokens_per_second: 5, completion_tokens: 6 }]);
  const t0 = performance.now();
  const stream = await gw.openai().chat.completions.create(chatBody('paced', { stream: true, max_tokens: 50 }));
  let firstContentAt = null;
  let tokens = 0;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) {
      tokens++;
      firstContentAt ??= performance.now() - t0;
    }
  }
  const total = performance.now() - t0;
  assert.equal(tokens, 6);
  assert.ok(total >= 900, `the stream took the mock's pace (${total.toFixed(0)} ms)`);
  assert.ok(firstContentAt < total - 600,
    `the first token arrived well before the end (first ${firstContentAt.toFixed(0)} ms, end ${total.toFixed(0)} ms)`);
});

e2e('an upstream that dies mid-stream ends the client stream with an error, never a hang', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'trunc', 'trunc-model')] }));
  await mock.script('trunc-model', [{ fault: 'truncate', completion_tokens: 20 }]);
  const t0 = performance.now();
  let text = '';
  let sawDone = false;
  const err = await rejectsWith((async () => {
    const stream = await gw.openai().chat.completions.create(chatBody('trunc', { stream: true }));
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.choices[0]?.finish_reason) sawDone = true;
    }
  })());
  assert.ok(performance.now() - t0 < 8000, 'ended promptly');
  assert.ok(err instanceof OpenAI.APIError,
    `an error event in the stream (the SDK raises APIError), not a torn connection: ${err?.constructor?.name}: ${err}`);
  assert.ok(typeof err.error?.message === 'string' && err.error.message.length > 0, JSON.stringify(err.error));
  assert.ok(text.length > 0, 'the tokens before the break were relayed');
  assert.equal(sawDone, false, 'no fake finish_reason for a truncated stream');
  assert.equal((await mock.model('trunc-model')).requests, 1);
}, { timeout: 15000 });

e2e('a streaming request whose primary fails before the first byte is served by the fallback', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'sfb-primary', 'sfb-primary-model'),
      openaiDeployment(mock, 'sfb-backup', 'sfb-backup-model', { id: 'sfb-backup-1' }),
    ],
    litellm_settings: { fallbacks: [{ 'sfb-primary': ['sfb-backup'] }] },
  }));
  await mock.script('sfb-primary-model', [{ error: 'server_error' }]);
  await mock.script('sfb-backup-model', [{ content: 'streamed by the backup', completion_tokens: 4 }]);
  const { data: stream, response } = await gw.openai().chat.completions
    .create(chatBody('sfb-primary', { stream: true, stream_options: { include_usage: true } }))
    .withResponse();
  assert.equal(response.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal(response.headers.get('x-litellm-model-id'), 'sfb-backup-1');
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'streamed by the backup');
  assert.equal(usage?.completion_tokens, 4);
  assert.deepEqual(await mock.requests('sfb-primary-model', 'sfb-backup-model'), { 'sfb-primary-model': 1, 'sfb-backup-model': 1 });
});

e2e('a hanging upstream is cut off by the deployment timeout', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'hang', 'hang-model', { timeout: 1, stream_timeout: 1 })],
  }));
  await mock.script('hang-model', [{ fault: 'hang' }]);
  for (const stream of [false, true]) {
    const t0 = performance.now();
    const err = await rejectsWith((async () => {
      const r = await gw.openai({ timeout: 6000 }).chat.completions.create(chatBody('hang', { stream }));
      if (stream) for await (const _ of r) { /* drain */ }
    })());
    const elapsed = performance.now() - t0;
    assert.ok(elapsed >= 900 && elapsed < 4000, `stream=${stream}: timed out after ~1 s (elapsed ${elapsed.toFixed(0)} ms)`);
    assert.ok([408, 504].includes(err.status), `stream=${stream}: a timeout status (408/504), got ${err.status}: ${err}`);
  }
  assert.equal((await mock.model('hang-model')).requests, 2);
}, { timeout: 20000 });

e2e('a client disconnect during a non-streaming request cancels the upstream too', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'slowns', 'slowns-model')] }));
  await mock.script('slowns-model', [{ latency_ms: 5000 }]);
  const controller = new AbortController();
  const pending = gw.openai().chat.completions.create(chatBody('slowns'), { signal: controller.signal });
  await waitFor(async () => (await mock.model('slowns-model')).requests === 1, { what: 'the upstream request to start' });
  controller.abort();
  await rejectsWith(pending);
  const m = await waitFor(async () => {
    const s = await mock.model('slowns-model');
    return s.cancelled === 1 ? s : null;
  }, { timeoutMs: 3000, what: 'the mock to count slowns-model as cancelled' });
  assert.equal(m.succeeded, 0);
}, { timeout: 15000 });

e2e('20 concurrent streams all complete with their own content', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'many', 'many-model')] }));
  await mock.script('many-model', [{ tokens_per_second: 50, completion_tokens: 10 }]);
  const client = gw.openai();
  const results = await Promise.all(Array.from({ length: 20 }, async () => {
    const stream = await client.chat.completions.create(
      chatBody('many', { stream: true, stream_options: { include_usage: true }, max_tokens: 50 }));
    let text = '';
    let usage = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    return { words: text.trim().split(/\s+/).length, completion: usage?.completion_tokens };
  }));
  for (const r of results) assert.deepEqual(r, { words: 10, completion: 10 });
  const m = await mock.model('many-model');
  assert.equal(m.requests, 20);
  assert.equal(m.streams, 20);
  assert.equal(m.succeeded, 20);
  assert.equal(m.completion_tokens, 200);
});

e2e('an HTTP/1.0 client gets its stream without chunked framing, ended by the close', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'gpt-4o', 'gpt-4o')] }));
  const { default: net } = await import('node:net');
  const url = new URL(gw.url);
  const body = JSON.stringify(chatBody('gpt-4o', { stream: true }));
  const raw = await new Promise((resolve, reject) => {
    const sock = net.connect(Number(url.port), url.hostname, () => {
      sock.write(`POST /v1/chat/completions HTTP/1.0\r\nHost: ${url.host}\r\nAuthorization: Bearer sk-tollgate-e2e-master-key\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    let data = '';
    sock.setEncoding('utf8');
    sock.on('data', (d) => { data += d; });
    sock.on('end', () => resolve(data));
    sock.on('error', reject);
    sock.setTimeout(10000, () => { sock.destroy(); reject(new Error(`no close: ${data}`)); });
  });
  const [head, payload] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
  assert.match(head, /^HTTP\/1\.0 200/, head);
  assert.doesNotMatch(head, /transfer-encoding/i, 'HTTP/1.0 has no chunked coding');
  assert.doesNotMatch(head, /connection: keep-alive/i);
  assert.match(payload, /^data: \{/, 'the events themselves, no chunk sizes');
  assert.ok(payload.trimEnd().endsWith('data: [DONE]'), payload.slice(-100));
});
