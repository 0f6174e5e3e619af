// Streams that move before the client sees anything (issue 13 §1, §2): a first-token limit that
// an early empty chunk does not defeat, an idle limit, a silent upstream that is not asked twice,
// LiteLLM's router_settings.timeout per call (not per request), and malformed events that are
// never relayed. Every case checks the client's whole answer (or a clean error), the wall time,
// the upstream's attempt counts and the money: the served attempt is charged its own bill, an
// attempt cut off unseen its reservation (never less than what the simulator billed).
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, spendLogOf, circuitOf } from './harness.mjs';
import { paidDeployment, paidAnthropicDeployment, spendNanos, mockBillNanos } from './budget_helpers.mjs';
import { MESSAGES, PRICES, words, openaiStream, checkMoney } from './stream_helpers.mjs';

const state = useMock();

e2e('a slow first token behind an early role chunk: first_token_timeout_ms moves the stream to the fallback, the client gets one whole answer', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'ft', 'ft-up'), paidDeployment(mock, 'ft-fb', 'ft-fb-up')],
    litellm_settings: { fallbacks: [{ ft: ['ft-fb'] }] },
    fallback_policy: { model_groups: { ft: { budgets: { first_token_timeout_ms: 800 } } } },
  }));
  await mock.script('ft-up', [{ first_token_ms: 20000, content: words(10) }]);
  await mock.script('ft-fb-up', [{ content: words(12) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'ft' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(12).split(' ').join(' '), 'the fallback\'s whole answer, nothing of the slow one');
  assert.equal(s.finish, 'stop');
  assert.ok(s.ms < 5000, `moved at the limit, not after 20 s: ${s.ms.toFixed(0)} ms`);
  assert.equal(s.response.headers.get('x-litellm-model-group'), 'ft-fb');
  assert.deepEqual(await mock.requests('ft-up', 'ft-fb-up'), { 'ft-up': 1, 'ft-fb-up': 1 }, 'the slow one is not asked again');
  const { attempts } = await checkMoney(gw, mock, key, s.response, 'ft-fb-up', 'ft-up');
  assert.equal(attempts[0].class, 'unknown_outcome');
  assert.equal(attempts[0].evidence, 'unreadable');
});

e2e('the per-request header x-tollgate-first-token-timeout-ms tightens the limit; a looser one is ignored', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'fh', 'fh-up'), paidDeployment(mock, 'fh', 'fh-up2')],
    router_settings: { num_retries: 2 },
    fallback_policy: { model_groups: { fh: { budgets: { first_token_timeout_ms: 60000 } } } },
  }));
  await mock.script('fh-up', [{ first_token_ms: 20000, content: words(5) }]);
  await mock.script('fh-up2', [{ first_token_ms: 20000, content: words(5) }]);
  const client = gw.openai();
  const s = await openaiStream(client, { model: 'fh' }, { 'x-tollgate-first-token-timeout-ms': '500' });
  // Both deployments are silent past 500 ms: each is tried once, then a clean 504 error.
  assert.ok(s.error, 'no answer presented as success');
  assert.equal(s.error.status, 504, String(s.error));
  assert.ok(s.ms < 5000, `${s.ms.toFixed(0)} ms`);
  assert.deepEqual(await mock.requests('fh-up', 'fh-up2'), { 'fh-up': 1, 'fh-up2': 1 }, 'each silent deployment asked once');
  const bad = await gw.fetch('/v1/chat/completions', { body: { model: 'fh', messages: MESSAGES }, headers: { 'x-tollgate-first-token-timeout-ms': 'soon' } });
  assert.equal(bad.status, 400, bad.text);
  assert.match(bad.json.error.message, /x-tollgate-first-token-timeout-ms/);
});

e2e('Anthropic SDK: a first token that does not come after message_start moves to the fallback unseen', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidAnthropicDeployment(mock, 'aft', 'aft-up'), paidAnthropicDeployment(mock, 'aft-fb', 'aft-fb-up')],
    litellm_settings: { fallbacks: [{ aft: ['aft-fb'] }] },
    fallback_policy: { defaults: { budgets: { first_token_timeout_ms: 800 } } },
  }));
  await mock.script('aft-up', [{ first_token_ms: 20000, content: words(8) }]);
  await mock.script('aft-fb-up', [{ content: words(6) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const t = performance.now();
  const { data: stream, response } = await gw.anthropic({ apiKey: key }).messages
    .create({ model: 'aft', max_tokens: 50, messages: MESSAGES, stream: true }).withResponse();
  let text = '';
  let stop = null;
  let starts = 0;
  for await (const ev of stream) {
    if (ev.type === 'message_start') starts += 1;
    if (ev.type === 'content_block_delta') text += ev.delta.text ?? '';
    if (ev.type === 'message_delta') stop = ev.delta.stop_reason;
  }
  assert.equal(text, words(6));
  assert.equal(stop, 'end_turn');
  assert.equal(starts, 1, 'one message, not the slow one\'s start and the fallback\'s');
  assert.ok(performance.now() - t < 5000);
  assert.deepEqual(await mock.requests('aft-up', 'aft-fb-up'), { 'aft-up': 1, 'aft-fb-up': 1 });
  await checkMoney(gw, mock, key, response, 'aft-fb-up', 'aft-up');
});

e2e('a stream that stalls after it reached the client ends at the idle limit with an error event, bounded and billed', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'st', 'st-up')],
    fallback_policy: { model_groups: { st: { budgets: { stream_idle_timeout_ms: 700 } } } },
  }));
  await mock.script('st-up', [{ fault: 'stall', content: words(12), stall_after_tokens: 5 }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'st' });
  assert.ok(s.error, 'a cut stream is never presented as a complete answer');
  assert.equal(s.text.trim(), words(5), 'the 5 tokens sent before the stall');
  assert.ok(s.ms < 5000, `ended at the idle limit: ${s.ms.toFixed(0)} ms`);
  const row = await spendLogOf(gw, s.response);
  const attempt = row.decision.steps.find((x) => x.step === 'attempt');
  assert.notEqual(attempt.evidence, 'answered');
  const spent = await spendNanos(gw, key);
  const bill = await mockBillNanos(mock, 'st-up', PRICES);
  assert.ok(spent >= bill && bill > 0, `spend ${spent} covers the bill ${bill}`);
});

e2e('LiteLLM settings only: router_settings.timeout bounds each call, a silent primary is not retried, the fallback answers', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'sl', 'sl-up'), paidDeployment(mock, 'sl-fb', 'sl-fb-up')],
    router_settings: { timeout: 1, num_retries: 2 },
    litellm_settings: { fallbacks: [{ sl: ['sl-fb'] }] },
  }));
  await mock.script('sl-up', [{ fault: 'hang' }]);
  await mock.script('sl-fb-up', [{ content: words(7) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'sl' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(7));
  assert.ok(s.ms < 4000, `one 1 s timeout, then the fallback: ${s.ms.toFixed(0)} ms`);
  assert.deepEqual(await mock.requests('sl-up', 'sl-fb-up'), { 'sl-up': 1, 'sl-fb-up': 1 }, 'the silent primary is asked once');
  await checkMoney(gw, mock, key, s.response, 'sl-fb-up', 'sl-up');

  // Non-streaming: the same per-call timeout, and each call gets its own: the request is not cut
  // at 1 s (a whole-request reading of `timeout` would leave the fallback no time).
  await mock.script('sl-up', [{ fault: 'hang' }]);
  await mock.script('sl-fb-up', [{ content: words(3), latency_ms: 600 }]);
  const t = performance.now();
  const r = await gw.fetch('/v1/chat/completions', { auth: key, body: { model: 'sl', messages: MESSAGES, max_tokens: 20 } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].message.content, words(3));
  assert.ok(performance.now() - t >= 1550, 'primary timeout (1 s) + fallback latency (0.6 s)');
  assert.deepEqual(await mock.requests('sl-up', 'sl-fb-up'), { 'sl-up': 2, 'sl-fb-up': 2 });
});

e2e('malformed events are never relayed: before the first token the attempt is retried unseen, after it the event is skipped and counted', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'mf', 'mf-up')], router_settings: { num_retries: 1 } }));
  // Mid-stream (after 3 of 6 tokens reached the client): skipped, the answer completes.
  await mock.script('mf-up', [{ fault: 'malformed_event', content: words(6) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const res = await gw.fetch('/v1/chat/completions', { auth: key, body: { model: 'mf', messages: MESSAGES, max_tokens: 20, stream: true } });
  assert.equal(res.status, 200);
  const events = res.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
  for (const e of events) if (e !== '[DONE]') assert.doesNotThrow(() => JSON.parse(e), `relayed event is JSON: ${e}`);
  assert.equal(events.at(-1), '[DONE]');
  const text = events.filter((e) => e !== '[DONE]').map((e) => JSON.parse(e).choices?.[0]?.delta?.content ?? '').join('');
  assert.equal(text, words(6));
  const row = await spendLogOf(gw, res);
  const attempt = row.decision.steps.find((x) => x.step === 'attempt');
  assert.equal(attempt.skipped_events, 1);
  assert.equal(attempt.evidence, 'answered', 'a stream that stayed consistent is billed by its usage');
  assert.equal(await spendNanos(gw, key), await mockBillNanos(mock, 'mf-up', PRICES));

  // Before the first token (a one-token answer: the bad event comes first): retried unseen.
  await mock.reset();
  await mock.script('mf-up', [{ fault: 'malformed_event', content: 'only' }, { content: words(4) }]);
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'mf' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(4));
  assert.equal((await mock.model('mf-up')).requests, 2);
});

e2e('no response head at all: a stream\'s first-token limit bounds the wait for it too, and the silent primary is not asked again', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'nh', 'nh-up'), paidDeployment(mock, 'nh-fb', 'nh-fb-up')],
    router_settings: { num_retries: 2 },
    litellm_settings: { fallbacks: [{ nh: ['nh-fb'] }] },
    fallback_policy: { model_groups: { nh: { budgets: { first_token_timeout_ms: 800 } } } },
  }));
  await mock.script('nh-up', [{ latency_ms: 20000 }]);
  await mock.script('nh-fb-up', [{ content: words(5) }]);
  const s = await openaiStream(gw.openai(), { model: 'nh' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(5));
  assert.ok(s.ms < 5000, `${s.ms.toFixed(0)} ms`);
  assert.deepEqual(await mock.requests('nh-up', 'nh-fb-up'), { 'nh-up': 1, 'nh-fb-up': 1 });
});

e2e('a stream that closes after its role chunk, before any output, is retried unseen', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'rc', 'rc-up')], router_settings: { num_retries: 1 } }));
  await mock.script('rc-up', [{ fault: 'truncate', content: words(6), truncate_after_tokens: 0 }, { content: words(6) }]);
  const s = await openaiStream(gw.openai(), { model: 'rc' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(6));
  assert.equal((await mock.model('rc-up')).requests, 2);
});

e2e('a caller\'s own tight first-token limit does not open the deployment\'s circuit for everyone', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'cc', 'cc-up', { id: 'cc-a' })],
    fallback_policy: { defaults: { circuit: { consecutive_failures: 2, cooldown_ms: 60000 } } },
  }));
  await mock.script('cc-up', [{ first_token_ms: 600, content: words(4) }]);
  for (let i = 0; i < 3; i++) {
    const s = await openaiStream(gw.openai(), { model: 'cc' }, { 'x-tollgate-first-token-timeout-ms': '100' });
    assert.ok(s.error, 'the caller\'s own limit ends its request');
  }
  assert.equal((await circuitOf(gw, 'deployments', 'cc-a')).state, 'closed', 'one caller\'s limit is not the deployment\'s failure');
  const ok = await openaiStream(gw.openai(), { model: 'cc' });
  assert.equal(ok.error, null, String(ok.error));
  assert.equal(ok.text, words(4));
});
