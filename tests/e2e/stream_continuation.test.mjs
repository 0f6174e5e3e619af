// Mid-stream failover with continuation (issue 13 §3, §5): a stream cut or stalled after text
// reached the client is continued by the next target that accepts an assistant prefill, in the
// same client stream, so the client reads one whole answer; a target that rejects the prefill
// (or cannot take one) never becomes the client's error. Every case checks the client's whole
// text against the canonical answer, the upstream's attempt counts, the decision trace and the
// money: the continuation is charged its own bill, the cut attempt its reservation (never less
// than what the simulator billed it), both under one request.
import assert from 'node:assert/strict';
import http from 'node:http';
import { useMock, e2e, gatewayConfig, spendLogOf } from './harness.mjs';
import { paidDeployment, paidAnthropicDeployment, spendNanos, mockBillNanos, unknownCharges, nanos } from './budget_helpers.mjs';
import { MESSAGES, PRICES, words, openaiStream, anthropicStream, checkMoney as checkStreamMoney } from './stream_helpers.mjs';

const state = useMock();

/// The request's money (stream_helpers.checkMoney): spend == the continuation's bill + the cut
/// attempt's charge, which covers what the simulator billed the cut attempt (never nothing).
async function checkMoney(gw, mock, key, response, served, cut) {
  const r = await checkStreamMoney(gw, mock, key, response, served, cut);
  assert.ok(r.otherBill > 0, 'the cut attempt was billed by the provider');
  return r;
}

e2e('OpenAI SDK: a stream cut after 40 of 60 tokens is continued by the fallback from a prefill; one answer, one id, both attempts paid', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'cut', 'cut-up'), paidAnthropicDeployment(mock, 'cut-fb', 'cut-fb-up')],
    litellm_settings: { fallbacks: [{ cut: ['cut-fb'] }] },
  }));
  await mock.script('cut-up', [{ fault: 'truncate', content: words(60), truncate_after_tokens: 40 }]);
  await mock.script('cut-fb-up', [{ content: words(60) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'cut' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(60), 'the whole canonical answer, nothing repeated or lost');
  assert.equal(s.finish, 'stop');
  assert.equal(s.ids.size, 1, 'one stream id');
  assert.equal(s.roles, 1, 'one role preamble');
  assert.deepEqual(await mock.requests('cut-up', 'cut-fb-up'), { 'cut-up': 1, 'cut-fb-up': 1 });
  const bills = (await mock.stats()).bills.filter((b) => b.model === 'cut-fb-up');
  assert.equal(bills.at(-1).completion_tokens, 20, 'the fallback generated only the rest');
  const { row, attempts } = await checkMoney(gw, mock, key, s.response, 'cut-fb-up', 'cut-up');
  assert.equal(attempts[0].continuation, 'cut');
  assert.equal(attempts[1].continuation, 'continued');
  assert.ok(attempts[1].prefill_bytes > 100, 'the delivered text went as the prefill');
  assert.match(row.decision.continued_by, /./, 'the trace names who continued the answer');
  assert.equal(row.decision.continuations, 1);
});

e2e('Anthropic SDK (native stream): a cut answer is continued in the same message and text block', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidAnthropicDeployment(mock, 'acut', 'acut-up'), paidAnthropicDeployment(mock, 'acut-fb', 'acut-fb-up')],
    litellm_settings: { fallbacks: [{ acut: ['acut-fb'] }] },
  }));
  await mock.script('acut-up', [{ fault: 'truncate', content: words(60), truncate_after_tokens: 40 }]);
  await mock.script('acut-fb-up', [{ content: words(60) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await anthropicStream(gw.anthropic({ apiKey: key }), { model: 'acut' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(60));
  assert.equal(s.starts, 1, 'one message_start');
  assert.equal(s.stops, 1, 'one message_stop');
  assert.deepEqual(s.blockStarts, [0], 'one text block');
  assert.deepEqual([...s.textIndices], [0], 'the continuation writes into the client\'s open text block');
  assert.equal(s.stopReason, 'end_turn');
  assert.deepEqual(await mock.requests('acut-up', 'acut-fb-up'), { 'acut-up': 1, 'acut-fb-up': 1 });
  await checkMoney(gw, mock, key, s.response, 'acut-fb-up', 'acut-up');
});

e2e('a fallback that rejects the prefill: the client gets the original cut\'s error event, never the 400', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'rj', 'rj-up'), paidAnthropicDeployment(mock, 'rj-fb', 'rj-fb-up')],
    litellm_settings: { fallbacks: [{ rj: ['rj-fb'] }] },
  }));
  await mock.script('rj-up', [{ fault: 'truncate', content: words(60), truncate_after_tokens: 40 }]);
  await mock.script('rj-fb-up', [{ reject_prefill: true, content: words(60) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'rj' });
  assert.ok(s.error, 'a cut answer is never presented as complete');
  assert.doesNotMatch(String(s.error.message), /prefill/i, 'the prefill rejection is not the client\'s error');
  assert.match(String(s.error.message), /stream broke|ended before/, String(s.error.message));
  assert.equal(s.text, words(40) + ' ', 'the 40 tokens delivered before the cut');
  assert.deepEqual(await mock.requests('rj-up', 'rj-fb-up'), { 'rj-up': 1, 'rj-fb-up': 1 });
  const row = await spendLogOf(gw, s.response);
  const attempts = row.decision.steps.filter((x) => x.step === 'attempt');
  assert.equal(attempts[1].class, 'caller_fix_required');
  assert.equal(nanos(attempts[1].charged), 0, 'a refused prefill is not billed');
  const spent = await spendNanos(gw, key);
  assert.ok(spent >= await mockBillNanos(mock, 'rj-up', PRICES), 'the cut attempt is paid');
  assert.equal(row.status, 'failure');
  // The gateway is healthy afterwards.
  const after = await openaiStream(gw.openai({ apiKey: key }), { model: 'rj-fb' });
  assert.equal(after.error, null);
  assert.equal(after.text, words(60));
});

e2e('a fallback that rejects the prefill is passed over: the next one continues the answer, the refusal billed nothing', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'rk', 'rk-up'), paidAnthropicDeployment(mock, 'rk-fb', 'rk-fb-up'),
      paidAnthropicDeployment(mock, 'rk-fb2', 'rk-fb2-up')],
    litellm_settings: { fallbacks: [{ rk: ['rk-fb', 'rk-fb2'] }] },
  }));
  await mock.script('rk-up', [{ fault: 'truncate', content: words(60), truncate_after_tokens: 40 }]);
  await mock.script('rk-fb-up', [{ reject_prefill: true, content: words(60) }]);
  await mock.script('rk-fb2-up', [{ content: words(60) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'rk' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(60), 'the whole answer, continued past the refusal');
  assert.deepEqual(await mock.requests('rk-up', 'rk-fb-up', 'rk-fb2-up'), { 'rk-up': 1, 'rk-fb-up': 1, 'rk-fb2-up': 1 });
  const row = await spendLogOf(gw, s.response);
  const attempts = row.decision.steps.filter((x) => x.step === 'attempt');
  assert.equal(attempts.length, 3, JSON.stringify(attempts));
  assert.equal(attempts[1].class, 'caller_fix_required');
  assert.equal(attempts[1].decision, 'fallback', 'a refused prefill does not end the walk: its group had no other deployment');
  assert.equal(nanos(attempts[1].charged), 0);
  assert.equal(attempts[2].continuation, 'continued');
  const spent = await spendNanos(gw, key);
  const served = await mockBillNanos(mock, 'rk-fb2-up', PRICES);
  assert.equal(spent, served + unknownCharges(row), 'the refusal adds nothing to the spend');
  // No circuit opened on the deployment that refused a prefill: it still serves ordinary calls.
  const after = await openaiStream(gw.openai({ apiKey: key }), { model: 'rk-fb' });
  assert.equal(after.error, null);
  assert.equal(after.text, words(60));
});

e2e('the caller\'s own final assistant message: the delivered text continues it in one message; after a deployment that answered it as a turn, nothing is joined', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidAnthropicDeployment(mock, 'own', 'own-up'), paidAnthropicDeployment(mock, 'own-fb', 'own-fb-up'),
      paidDeployment(mock, 'turn', 'turn-up'), paidAnthropicDeployment(mock, 'turn-fb', 'turn-fb-up')],
    litellm_settings: { fallbacks: [{ own: ['own-fb'] }, { turn: ['turn-fb'] }] },
  }));
  const messages = [...MESSAGES, { role: 'assistant', content: 'w0 w1' }];
  await mock.script('own-up', [{ fault: 'truncate', content: words(60), truncate_after_tokens: 20 }]);
  await mock.script('own-fb-up', [{ content: words(60) }]);
  const s = await openaiStream(gw.openai(), { model: 'own', messages });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(60).slice('w0 w1'.length), 'the answer after the caller\'s own prefill, whole');
  const sent = (await mock.received()).filter((r) => r.model === 'own-fb-up').at(-1).body;
  assert.equal(sent.messages.length, messages.length, 'one final assistant message, not a second one');
  const last = sent.messages.at(-1);
  const text = typeof last.content === 'string' ? last.content : last.content.map((b) => b.text ?? '').join('');
  assert.equal(last.role, 'assistant');
  assert.ok(text.startsWith('w0 w1 w2') && text.endsWith('w21'), text);

  // An OpenAI primary reads the caller's final assistant message as an earlier turn and answers
  // anew: its text does not continue that message, so it is not continued from a prefill.
  await mock.script('turn-up', [{ fault: 'truncate', content: words(60), truncate_after_tokens: 20 }]);
  await mock.script('turn-fb-up', [{ content: words(60) }]);
  const t = await openaiStream(gw.openai(), { model: 'turn', messages: [...MESSAGES, { role: 'assistant', content: 'Done.' }] });
  assert.ok(t.error, 'the cut\'s error');
  assert.deepEqual(await mock.requests('turn-up', 'turn-fb-up'), { 'turn-up': 1, 'turn-fb-up': 0 });
});

e2e('the HTTP trailers of a continued stream name who continued it', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'tr', 'tr-up'), paidAnthropicDeployment(mock, 'tr-fb', 'tr-fb-up')],
    litellm_settings: { fallbacks: [{ tr: ['tr-fb'] }] },
  }));
  await mock.script('tr-up', [{ fault: 'truncate', content: words(30), truncate_after_tokens: 10 }]);
  await mock.script('tr-fb-up', [{ content: words(30) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const body = JSON.stringify({ model: 'tr', messages: MESSAGES, max_tokens: 100, stream: true });
  const res = await new Promise((resolve, reject) => {
    const req = http.request(gw.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', te: 'trailers' },
    }, (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (d) => { text += d; });
      r.on('end', () => resolve({ headers: r.headers, trailers: r.trailers, text }));
      r.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.match(res.headers.trailer ?? '', /x-tollgate-continued-by/, 'announced in the head');
  assert.ok(res.text.trimEnd().endsWith('data: [DONE]'), res.text.slice(-200));
  const row = await spendLogOf(gw, res.headers['x-litellm-call-id']);
  assert.equal(res.trailers['x-tollgate-continued-by'], row.decision.continued_by);
  assert.equal(res.trailers['x-tollgate-continuations'], '1');
});

e2e('a fallback that cannot take a prefill (OpenAI) is skipped with its reason; the client gets the cut\'s error', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidAnthropicDeployment(mock, 'np', 'np-up'), paidDeployment(mock, 'np-fb', 'np-fb-up')],
    litellm_settings: { fallbacks: [{ np: ['np-fb'] }] },
  }));
  await mock.script('np-up', [{ fault: 'truncate', content: words(60), truncate_after_tokens: 40 }]);
  const s = await openaiStream(gw.openai(), { model: 'np' });
  assert.ok(s.error);
  assert.equal(s.text, words(40) + ' ');
  assert.deepEqual(await mock.requests('np-up', 'np-fb-up'), { 'np-up': 1, 'np-fb-up': 0 }, 'nothing sent to a target that cannot continue');
  const row = await spendLogOf(gw, s.response);
  const skip = row.decision.steps.find((x) => x.step === 'skip' && x.group === 'np-fb');
  assert.ok(skip, JSON.stringify(row.decision.steps));
  assert.match(skip.reason, /no_assistant_prefill/);
});

e2e('a model_info.supports_assistant_prefill OpenAI-compatible deployment continues with continue_final_message', async (ctx) => {
  const { mock } = state;
  const fb = paidDeployment(mock, 'vl-fb', 'vl-fb-up');
  fb.model_info = { ...(fb.model_info ?? {}), supports_assistant_prefill: true };
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'vl', 'vl-up'), fb],
    litellm_settings: { fallbacks: [{ vl: ['vl-fb'] }] },
  }));
  await mock.script('vl-up', [{ fault: 'truncate', content: words(30), truncate_after_tokens: 10 }]);
  await mock.script('vl-fb-up', [{ content: words(30) }]);
  const s = await openaiStream(gw.openai(), { model: 'vl' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(30));
  const bills = (await mock.stats()).bills.filter((b) => b.model === 'vl-fb-up');
  assert.equal(bills.at(-1).completion_tokens, 20);
});

e2e('LiteLLM settings only: a stream that stalls after 20 tokens is continued by the fallback within the per-call timeout', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'ls', 'ls-up'), paidAnthropicDeployment(mock, 'ls-fb', 'ls-fb-up')],
    router_settings: { timeout: 2, num_retries: 2 },
    litellm_settings: { fallbacks: [{ ls: ['ls-fb'] }] },
  }));
  await mock.script('ls-up', [{ fault: 'stall', content: words(60), stall_after_tokens: 20 }]);
  await mock.script('ls-fb-up', [{ content: words(60) }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await openaiStream(gw.openai({ apiKey: key }), { model: 'ls' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(60));
  assert.ok(s.ms < 8000, `continued after the 2 s per-call limit: ${s.ms.toFixed(0)} ms`);
  await checkMoney(gw, mock, key, s.response, 'ls-fb-up', 'ls-up');
});

e2e('hold-back: x-tollgate-stream-holdback holds the first tokens, so a cut within them is retried unseen on the fallback', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'hb', 'hb-up'), paidDeployment(mock, 'hb-fb', 'hb-fb-up')],
    litellm_settings: { fallbacks: [{ hb: ['hb-fb'] }] },
  }));
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const client = gw.openai({ apiKey: key });
  // Without hold-back the cut after 5 tokens reaches the client (no target here takes a prefill).
  await mock.script('hb-up', [{ fault: 'truncate', content: words(30), truncate_after_tokens: 5 }]);
  const plain = await openaiStream(client, { model: 'hb' });
  assert.ok(plain.error, 'a cut stream is never presented as complete');
  assert.equal(plain.text, words(5) + ' ');
  // With it, nothing reached the client before the cut: the fallback answers the whole.
  await mock.script('hb-up', [{ fault: 'truncate', content: words(30), truncate_after_tokens: 5 }]);
  await mock.script('hb-fb-up', [{ content: words(30) }]);
  const t = performance.now();
  const { data, response } = await client.chat.completions
    .create({ model: 'hb', messages: MESSAGES, max_tokens: 100, stream: true, stream_options: { include_usage: true } },
      { headers: { 'x-tollgate-stream-holdback': '10' } })
    .withResponse();
  let text = '';
  for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, words(30), 'the fallback\'s whole answer, nothing of the cut one');
  assert.ok(performance.now() - t < 5000);
  assert.equal(response.headers.get('x-litellm-model-group'), 'hb-fb');
  const row = await spendLogOf(gw, response);
  const attempts = row.decision.steps.filter((s) => s.step === 'attempt');
  assert.equal(attempts.length, 2);
  assert.equal(attempts[1].class, null);
  assert.equal(nanos(attempts[1].charged), await mockBillNanos(mock, 'hb-fb-up', PRICES));
  // A bad value is the caller's 400, nothing sent.
  const before = await mock.requests('hb-up', 'hb-fb-up');
  const bad = await gw.fetch('/v1/chat/completions', { auth: key, body: { model: 'hb', messages: MESSAGES, stream: true }, headers: { 'x-tollgate-stream-holdback': 'lots' } });
  assert.equal(bad.status, 400);
  assert.match(bad.json.error.message, /x-tollgate-stream-holdback/);
  assert.deepEqual(await mock.requests('hb-up', 'hb-fb-up'), before);
});

e2e('hold-back per group (budgets.stream_holdback_tokens: all): the whole answer is held, a stall near its end is retried unseen', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'ha', 'ha-up'), paidDeployment(mock, 'ha-fb', 'ha-fb-up')],
    litellm_settings: { fallbacks: [{ ha: ['ha-fb'] }] },
    fallback_policy: { model_groups: { ha: { budgets: { stream_holdback_tokens: 'all', stream_idle_timeout_ms: 700 } } } },
  }));
  await mock.script('ha-up', [{ fault: 'stall', content: words(20), stall_after_tokens: 18 }]);
  await mock.script('ha-fb-up', [{ content: words(20) }]);
  const s = await openaiStream(gw.openai(), { model: 'ha' });
  assert.equal(s.error, null, String(s.error));
  assert.equal(s.text, words(20));
  const row = await spendLogOf(gw, s.response);
  assert.equal(row.decision.steps.filter((x) => x.step === 'attempt').length, 2, 'one unseen stall, one answer');
  assert.deepEqual(await mock.requests('ha-up', 'ha-fb-up'), { 'ha-up': 1, 'ha-fb-up': 1 });
});
