// The cap holds on the wire (issue 8): the output bound admission reserves is the one written into
// the upstream request, and what is charged follows what was sent and what came back. Every case
// holds recorded spend against the simulator's bill, request by request: recorded == bill for
// answers whose usage was read, and recorded - bill == exactly the reservations of the attempts
// whose usage could not be read (marked unknown), each of which covers what the provider billed.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, runPool, waitFor } from './harness.mjs';
import {
  chat, nanos, dollars, spendNanos, spendLogRow, billNanos, mockBillNanos, unknownCharges, IN_PRICE, OUT_PRICE,
  expectSpend,
} from './budget_helpers.mjs';
import { png, dataUrl } from './media_fixtures.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: OUT_PRICE };
const priced = (extra = {}) => ({ input_cost_per_token: IN_PRICE, output_cost_per_token: OUT_PRICE, ...extra });
const ask = (model, extra = {}) => ({ model, messages: [{ role: 'user', content: 'Tell me about gateways.' }], ...extra });

/// One chat completion through the official OpenAI SDK with `key`: {status, headers, json}
/// (an APIError is returned the same way, its body as `json`).
async function sdkChat(gw, key, body) {
  const client = gw.openai({ apiKey: key });
  try {
    if (body.stream) {
      const { data: stream, response } = await client.chat.completions.create(body).withResponse();
      const chunks = [];
      let streamError = null;  // an error event ends a stream that did not complete
      try {
        for await (const chunk of stream) chunks.push(chunk);
      } catch (e) {
        streamError = e;
      }
      return { status: response.status, headers: response.headers, json: null, chunks, streamError };
    }
    const { data, response } = await client.chat.completions.create(body).withResponse();
    return { status: response.status, headers: response.headers, json: data };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError) || e.status === undefined) throw e;
    const headers = e.headers instanceof Headers ? e.headers : new Headers(e.headers ?? {});
    return { status: e.status, headers, json: { error: e.error }, text: e.message };
  }
}

/// Sends `body` through the SDK, the upstream model `upstream` scripted to behave as `behavior`
/// (the gateway does not forward client headers upstream); returns {r, row, unknown} once logged.
async function send(gw, key, body, behavior, upstream) {
  await state.mock.script(upstream, behavior ? [behavior] : []);
  const r = await sdkChat(gw, key, body);
  const row = await spendLogRow(gw, r);
  return { r, row, unknown: unknownCharges(row) };
}

/// The money check of one case (one upstream model, one key): when every attempt's usage was
/// read, recorded spend == the provider's bill; when every one was unreadable, recorded == the
/// sum of their reservations, which covers the bill. Also spend <= max_budget when given.
async function assertMoney(gw, key, mock, upstream, rows, prices = PRICES, maxBudget) {
  const unknown = rows.reduce((a, x) => a + x.unknown, 0);
  const bill = await mockBillNanos(mock, upstream, prices);
  const recorded = await spendNanos(gw, key);
  if (unknown === 0) assert.equal(recorded, bill, `recorded ${recorded} != bill ${bill}`);
  else {
    assert.ok(rows.every((x) => x.unknown > 0), 'a case mixes read and unreadable attempts');
    assert.equal(recorded, unknown, `recorded ${recorded} != the unknown reservations ${unknown}`);
    assert.ok(bill <= recorded, `bill ${bill} > recorded ${recorded}`);
  }
  if (maxBudget !== undefined) assert.ok(recorded <= maxBudget, `recorded ${recorded} > max_budget ${maxBudget}`);
  return { recorded, bill, unknown };
}

e2e('no caller max_tokens: the bound the budget pays for is written upstream; a verbose model fills it and spend never passes the cap', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [{ ...openaiDeployment(mock, 'paid', 'verbose', priced()), model_info: { id: 'verbose-1', max_output_tokens: 4000 } }],
  }));
  const budget = 2_000_000; // $0.002: the model's 4,000-token worst case ($0.008) does not fit
  const k = await gw.generateKey({ max_budget: dollars(budget) });
  const rows = [];
  for (let i = 0; i < 30; i++) {
    const x = await send(gw, k.key, ask('paid'), { fill_max_tokens: true }, 'verbose');
    if (x.r.status === 429) break;
    assert.equal(x.r.status, 200, x.r.text);
    const capped = Number(x.r.headers.get('x-tollgate-output-capped'));
    assert.ok(capped >= 16 && capped < 4000, `capped ${capped}`);
    // The provider produced exactly the bound it was sent: the contract held.
    assert.equal(x.r.json.usage.completion_tokens, capped);
    rows.push(x);
  }
  assert.ok(rows.length >= 3, `${rows.length} capped answers before the cap`);
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'verbose', rows, PRICES, budget);
  assert.equal(recorded, bill);
  ctx.t.diagnostic(`no max_tokens: ${rows.length} answers, spend ${recorded} of ${budget} nanos, bill ${bill}`);
});

e2e('max_tokens above the model maximum is sent as the maximum; both max_tokens and max_completion_tokens: one limit goes upstream', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [{ ...openaiDeployment(mock, 'paid', 'capped-model', priced()), model_info: { id: 'cm', max_output_tokens: 50 } }],
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const over = await send(gw, k.key, ask('paid', { max_tokens: 100_000 }), { fill_max_tokens: true }, 'capped-model');
  assert.equal(over.r.status, 200, over.r.text);
  assert.equal(over.r.json.usage.completion_tokens, 50);
  assert.equal(over.r.headers.get('x-tollgate-output-capped'), null);  // the model's own limit is not a budget cap
  const both = await send(gw, k.key, ask('paid', { max_tokens: 40, max_completion_tokens: 20 }), { fill_max_tokens: true }, 'capped-model');
  assert.equal(both.r.status, 200, both.r.text);
  assert.equal(both.r.json.usage.completion_tokens, 20);
  assert.equal(both.row.decision.steps.find((s) => s.step === 'attempt').max_tokens, 20);
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'capped-model', [over, both]);
  assert.equal(recorded, bill);
});

e2e('a 200 whose body is oversized or garbage is charged its whole reservation (marked unknown), never $0', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'paid', 'garbled', priced())],
    tollgate_settings: { max_upstream_body_bytes: 1_048_576 },
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const rows = [];
  for (const fault of ['oversized', 'garbage']) {
    const x = await send(gw, k.key, ask('paid', { max_tokens: 100 }), { fault }, 'garbled');
    assert.ok(x.r.status >= 500, x.r.text);
    assert.equal(x.row.unknown_outcome, true);
    const step = x.row.decision.steps.find((s) => s.step === 'attempt');
    assert.equal(step.evidence, 'unreadable');
    assert.equal(nanos(step.charged), nanos(step.reserved));
    assert.ok(x.unknown > 0);
    rows.push(x);
  }
  const s = await mock.stats();
  const bills = s.bills.filter((b) => b.model === 'garbled');
  assert.equal(bills.length, 2, 'the provider billed both answers');
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'garbled', rows);
  assert.ok(recorded >= bill);
  for (const [i, b] of bills.entries()) assert.ok(billNanos(b, PRICES) <= rows[i].unknown, 'the reservation covers the bill');
});

// Issue 14 §3, upstream side: a response framed two ways at once (Content-Length and chunked)
// is unreadable — a transient failure charged its reservation, marked unknown — and a response
// followed by bytes nobody asked for is used, but its connection is never pooled, so those bytes
// can never become the answer to the next request.
e2e('an upstream that frames its response badly: conflicting framing is unreadable (charged its reservation); unsolicited bytes after an answer never reach another request', async (ctx) => {
  const { mock } = state;
  // One worker thread: one upstream pool, so connection reuse is deterministic.
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'paid', 'framed', priced())],
    tollgate_settings: { worker_threads: 1 },
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const x = await send(gw, k.key, ask('paid', { max_tokens: 100 }), { fault: 'conflicting_framing' }, 'framed');
  assert.ok(x.r.status >= 500, `${x.r.status}`);
  assert.equal(x.row.unknown_outcome, true);
  const step = x.row.decision.steps.find((st) => st.step === 'attempt');
  assert.equal(nanos(step.charged), nanos(step.reserved));
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'framed', [x]);
  assert.ok(bill > 0 && bill <= recorded, `the reservation ${recorded} covers the bill ${bill}`);

  // Extra bytes: the first answer is served and billed by its usage; the next requests, on new
  // connections, get their own answers, never the unsolicited `{}`.
  const k2 = await gw.generateKey({ max_budget: 1 });
  const conns = async () => {
    const t = await (await gw.fetch('/metrics', { method: 'GET' })).text;
    const m = t.match(/^tollgate_upstream_connections_opened_total (\d+)/m);
    return Number(m?.[1] ?? NaN);
  };
  const before = await conns();
  const billBefore = await mockBillNanos(mock, 'framed', PRICES);
  await mock.script('framed', [{ fault: 'extra_bytes', content: 'first answer' }, { content: 'second answer' }, { content: 'third answer' }]);
  const texts = [];
  for (let i = 0; i < 3; i++) {
    const r = await sdkChat(gw, k2.key, ask('paid', { max_tokens: 50 }));
    assert.equal(r.status, 200, JSON.stringify(r.json));
    texts.push(r.json.choices[0].message.content);
  }
  assert.deepEqual(texts, ['first answer', 'second answer', 'third answer']);
  // The connection that carried extra bytes was closed: the second request opened a new one,
  // which the third reused.
  assert.equal((await conns()) - before, 2, 'the connection with unsolicited bytes was not pooled');
  await expectSpend(gw, k2.key, (await mockBillNanos(mock, 'framed', PRICES)) - billBefore, 'spend == the bill of the three answers');
});

e2e('a timeout after the send is charged its reservation whatever class the table puts it in', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'paid', 'slow', priced({ timeout: 0.3 }))],
    // An operator moved the transport timeout into a class that fails fast: what is charged does
    // not follow the class.
    fallback_policy: { defaults: { classes: { caller_fix_required: { transport: ['timeout_after_send'], action: 'fail_fast' } } } },
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const x = await send(gw, k.key, ask('paid', { max_tokens: 50 }), { latency_ms: 1500, bill_on_cancel: true }, 'slow');
  assert.equal(x.r.status, 504, x.r.text);
  const step = x.row.decision.steps.find((s) => s.step === 'attempt');
  assert.equal(step.class, 'caller_fix_required');
  assert.equal(step.evidence, 'no_answer');
  assert.equal(nanos(step.charged), nanos(step.reserved));
  await expectSpend(gw, k.key, nanos(step.reserved));
  // The provider kept generating and billed it: the reservation covers that bill.
  const bill = await mockBillNanos(mock, 'slow', PRICES);
  assert.ok(bill > 0 && bill <= nanos(step.reserved), `bill ${bill}, reserved ${step.reserved}`);
});

e2e('a stream cut before its usage is charged its reservation and logged unknown_outcome, never success', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'paid', 'cut', priced())] }));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('cut', [{ fault: 'truncate_before_usage' }]);
  const r = await sdkChat(gw, k.key, ask('paid', { max_tokens: 40, stream: true, stream_options: { include_usage: true } }));
  assert.equal(r.status, 200);
  assert.ok(r.chunks.some((ch) => ch.choices?.[0]?.delta?.content), 'the answer was relayed');
  assert.ok(!r.chunks.some((ch) => ch.usage), 'no usage reached the client');
  assert.ok(r.streamError, 'the client is told the stream did not complete');
  const row = await spendLogRow(gw, r);
  assert.equal(row.status, 'unknown_outcome');
  assert.ok(row.completionStartTime, 'the first byte time is logged');
  const step = row.decision.steps.find((s) => s.step === 'attempt');
  assert.equal(step.evidence, 'unreadable');
  await expectSpend(gw, k.key, nanos(step.reserved));
  const bill = await mockBillNanos(mock, 'cut', PRICES);
  assert.ok(bill > 0 && bill <= nanos(step.reserved), `bill ${bill}, reserved ${step.reserved}`);
});

// An upstream that ignores max_tokens and reports its usage on every chunk (vLLM's continuous
// usage stats), then cuts the stream: the cut attempt is charged what it reported, which is more
// than its reservation, not the reservation (the evidence wins), and the spend matches the bill.
e2e('a stream cut after its upstream ignored max_tokens is charged the partial usage it reported when that is more than the reservation', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'paid', 'runaway', priced())] }));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('runaway', [
    { ignore_max_tokens: true, completion_tokens: 400, usage_style: 'every_chunk', fault: 'truncate', truncate_after_tokens: 300 },
    {},
  ]);
  const r = await sdkChat(gw, k.key, ask('paid', { max_tokens: 20, stream: true, stream_options: { include_usage: true } }));
  assert.equal(r.status, 200);
  const row = await spendLogRow(gw, r);
  const attempts = row.decision.steps.filter((s) => s.step === 'attempt');
  const cut = attempts[0];
  assert.equal(cut.evidence, 'unreadable');
  const bills = (await mock.stats()).bills.filter((b) => b.model === 'runaway');
  assert.equal(bills[0].completion_tokens, 300, 'the provider billed the 300 tokens it sent');
  assert.ok(nanos(cut.charged) > nanos(cut.reserved), `charged ${cut.charged}, reserved ${cut.reserved}`);
  assert.equal(nanos(cut.charged), billNanos(bills[0], PRICES), 'the cut attempt is charged its reported usage: the bill');
  const total = attempts.reduce((a, s) => a + nanos(s.charged), 0);
  await expectSpend(gw, k.key, total);
  assert.equal(total, await mockBillNanos(mock, 'runaway', PRICES), 'every attempt charged its bill');
});

e2e('reasoning tokens reported beside the completion tokens (xAI) are billed, and recorded spend equals the bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'grok', 'grok-like', priced())] }));
  const k = await gw.generateKey({ max_budget: 1 });
  const x = await send(gw, k.key, ask('grok', { max_tokens: 2000 }),
    { completion_tokens: 143, reasoning_tokens: 760, reasoning_outside: true }, 'grok-like');
  assert.equal(x.r.status, 200, x.r.text);
  const items = x.row.line_items;
  assert.equal(items.find((i) => i.kind === 'reasoning').count, 760);
  assert.equal(items.find((i) => i.kind === 'output').count, 143);
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'grok-like', [x]);
  assert.equal(recorded, bill);
});

// Usage as real servers get it wrong (the simulator's `usage` behaviour reports it verbatim): the
// parts are fitted to the prompt (cached first, then audio; the rest is text) and priced so;
// a count that is not a count (negative, beyond 10^15) leaves the usage unread: the attempt
// is charged its whole reservation, marked unknown. The header, the spend log and the key's
// spend agree with the price of what the provider reported, request by request.
e2e('usage reported in odd shapes (cached beyond the prompt, audio beyond it, float counts, a stream) is charged as fitted; a count that is not one is charged the reservation', async (ctx) => {
  const { mock } = state;
  const prices = { input: IN_PRICE, output: OUT_PRICE, cached: '0.0000001', audio_input: '0.00001' };
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'odd', 'odd-usage', priced({
      cache_read_input_token_cost: prices.cached, input_cost_per_audio_token: prices.audio_input,
    }))],
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const counted = (c) => ({
    prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0,
    audio_input_tokens: 0, audio_output_tokens: 0, ...c,
  });
  const cases = [
    // [usage reported, the fitted counts it is priced as (null: unread)]
    [{ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 50 } },
      counted({ prompt_tokens: 10, cached_tokens: 10, completion_tokens: 5 })],
    [{ prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4, audio_tokens: 100 } },
      counted({ prompt_tokens: 10, cached_tokens: 4, audio_input_tokens: 6, completion_tokens: 5 })],
    // Text, so that the counts stay JSON floats (JSON.stringify writes 12.0 as 12).
    ['{"prompt_tokens":12.0,"completion_tokens":7.0,"total_tokens":19.0}', counted({ prompt_tokens: 12, completion_tokens: 7 })],
    [{ prompt_tokens: -3, completion_tokens: 5, total_tokens: 2 }, null],
    [{ prompt_tokens: 1e30, completion_tokens: 5 }, null],
  ];
  let expected = 0;
  for (const [usage, fitted] of cases) {
    const x = await send(gw, k.key, ask('odd', { max_tokens: 50 }), { usage }, 'odd-usage');
    assert.equal(x.r.status, 200, x.r.text);
    const step = x.row.decision.steps.find((st) => st.step === 'attempt');
    const charged = nanos(x.r.headers.get('x-litellm-response-cost'));
    if (fitted) {
      assert.equal(step.evidence, 'answered', JSON.stringify(usage));
      assert.equal(charged, billNanos(fitted, prices), `charge for ${JSON.stringify(usage)}`);
      assert.equal(x.row.unknown_outcome, false);
    } else {
      assert.equal(step.evidence, 'unreadable', JSON.stringify(usage));
      assert.equal(x.row.unknown_outcome, true);
      assert.equal(charged, nanos(step.reserved), `unread usage ${JSON.stringify(usage)} is charged its reservation`);
      assert.ok(charged > 0);
    }
    assert.equal(nanos(x.row.spend), charged, 'the spend log row says what the header said');
    expected += charged;
  }
  // A stream whose usage chunk claims cached tokens beyond the prompt: fitted the same way.
  const streamed = await send(gw, k.key, ask('odd', { max_tokens: 50, stream: true, stream_options: { include_usage: true } }),
    { usage: cases[0][0] }, 'odd-usage');
  assert.equal(streamed.r.status, 200);
  assert.equal(streamed.r.streamError, null);
  assert.equal(nanos(streamed.row.spend), billNanos(cases[0][1], prices));
  expected += nanos(streamed.row.spend);
  await expectSpend(gw, k.key, expected);
});

e2e('images with and without dimensions and a PDF: the reservation covers what the provider bills for them', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'vision', 'gpt-4o', priced())] }));
  const k = await gw.generateKey({ max_budget: 1 });
  const pdf = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj\n3 0 obj << /Type /Page >> endobj\n4 0 obj << /Type /Page >> endobj\n5 0 obj << /Type /Page >> endobj\n%%EOF\n').toString('base64');
  const parts = {
    known: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: dataUrl('image/png', png(1024, 1024)), detail: 'high' } }],
    unknown: [{ type: 'text', text: 'And this?' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }],
    pdf: [{ type: 'text', text: 'Summarise.' }, { type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${pdf}` } }],
  };
  const rows = [];
  for (const [name, content] of Object.entries(parts)) {
    const x = await send(gw, k.key, { model: 'vision', max_tokens: 20, messages: [{ role: 'user', content }] }, undefined, 'gpt-4o');
    assert.equal(x.r.status, 200, `${name}: ${x.r.text}`);
    const step = x.row.decision.steps.find((s) => s.step === 'attempt');
    assert.ok(nanos(step.charged) <= nanos(step.reserved), `${name}: charged ${step.charged} > reserved ${step.reserved}`);
    rows.push(x);
  }
  const s = await mock.stats();
  const bills = s.bills.filter((b) => b.model === 'gpt-4o');
  assert.equal(bills[0].image_input_tokens, 765);  // 1024² high detail: 4 tiles
  assert.ok(bills[1].image_input_tokens > 0);
  assert.equal(bills[2].pdf_pages, 3);
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'gpt-4o', rows);
  assert.equal(recorded, bill);
});

e2e('Anthropic cache writes with both TTLs, a custom cache-read price from the config, and service_tier priority are billed at their prices', async (ctx) => {
  const { mock } = state;
  const claudePrices = {
    input: '0.000003', output: '0.000015', cached: '0.0000003', cache_write: '0.00000375', cache_write_1h: '0.000006',
  };
  const tierPrices = { input: '0.0000025', output: '0.00001', priority: { input: '0.000005', output: '0.00002' } };
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      anthropicDeployment(mock, 'claude', 'claude-x', {
        input_cost_per_token: claudePrices.input, output_cost_per_token: claudePrices.output,
        cache_read_input_token_cost: claudePrices.cached, cache_creation_input_token_cost: claudePrices.cache_write,
        cache_creation_input_token_cost_above_1hr: claudePrices.cache_write_1h,
      }),
      openaiDeployment(mock, 'tiered', 'tiered-model', {
        input_cost_per_token: tierPrices.input, output_cost_per_token: tierPrices.output,
        input_cost_per_token_priority: tierPrices.priority.input, output_cost_per_token_priority: tierPrices.priority.output,
      }),
    ],
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const long = 'All work and no play makes a gateway dull. '.repeat(200);
  const x = await send(gw, k.key, { model: 'claude', max_tokens: 30, messages: [{ role: 'user', content: long }] },
    { cache_write_tokens: 900, cache_write_1h_tokens: 700, cached_tokens: 300 }, 'claude-x');
  assert.equal(x.r.status, 200, x.r.text);
  const items = Object.fromEntries(x.row.line_items.map((i) => [i.kind, i]));
  assert.equal(items.cache_write.count, 900);
  assert.equal(items.cache_write_1h.count, 700);
  assert.equal(items.cached_input.count, 300);
  assert.equal(items.cached_input.price, claudePrices.cached);
  const claude = await assertMoney(gw, k.key, mock, 'claude-x', [x], claudePrices);
  assert.equal(claude.recorded, claude.bill);

  const k2 = await gw.generateKey({ max_budget: 1 });
  const p = await send(gw, k2.key, ask('tiered', { max_tokens: 30, service_tier: 'priority' }), undefined, 'tiered-model');
  assert.equal(p.r.status, 200, p.r.text);
  assert.equal(p.r.json.service_tier, 'priority');
  const d = await send(gw, k2.key, ask('tiered', { max_tokens: 30 }), undefined, 'tiered-model');
  const tier = await assertMoney(gw, k2.key, mock, 'tiered-model', [p, d], tierPrices);
  assert.equal(tier.recorded, tier.bill);
  const bills = (await mock.stats()).bills.filter((b) => b.model === 'tiered-model');
  assert.ok(billNanos(bills[0], tierPrices) > billNanos(bills[1], tierPrices), 'priority costs more than default');
});

e2e('an upstream that ignores max_tokens is charged what it billed (the overshoot is recorded, never hidden) and the next request is refused', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'paid', 'rogue', priced())] }));
  const body = ask('paid', { max_tokens: 20 });
  const k = await gw.generateKey({ max_budget: dollars(200_000) });
  const x = await send(gw, k.key, body, { completion_tokens: 300, ignore_max_tokens: true }, 'rogue');
  assert.equal(x.r.status, 200, x.r.text);
  assert.equal(x.r.json.usage.completion_tokens, 300);
  const step = x.row.decision.steps.find((s) => s.step === 'attempt');
  assert.ok(nanos(step.charged) > nanos(step.reserved), 'the bill is above the reservation: the provider broke the contract');
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'rogue', [x]);
  assert.equal(recorded, bill);
  assert.ok(recorded > 200_000, 'the one documented way past a cap');
  assert.equal((await chat(gw, k.key, body)).status, 429);
});

e2e('$0.03 left, gpt-4o, no max_tokens: 200 with x-tollgate-output-capped, spend ≤ $0.03 (no false refusal)', async (ctx) => {
  const { mock } = state;
  // gpt-4o at the bundled table's price ($2.50 / $10 per million, 16,384 output tokens).
  const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'gpt-4o', 'gpt-4o')] }));
  const k = await gw.generateKey({ max_budget: 0.03 });
  const table = { input: '0.0000025', output: '0.00001', cached: '0.00000125' };
  const rows = [];
  for (let i = 0; i < 12; i++) {
    const x = await send(gw, k.key, ask('gpt-4o'), { fill_max_tokens: true }, 'gpt-4o');
    if (x.r.status === 429) break;
    assert.equal(x.r.status, 200, x.r.text);
    assert.ok(Number(x.r.headers.get('x-tollgate-output-capped')) > 0);
    rows.push(x);
  }
  assert.ok(rows.length >= 1);
  const { recorded, bill } = await assertMoney(gw, k.key, mock, 'gpt-4o', rows, table, 30_000_000);
  assert.equal(recorded, bill);
  ctx.t.diagnostic(`$0.03 on gpt-4o: ${rows.length} capped answers (first ${rows[0].r.headers.get('x-tollgate-output-capped')} tokens), spend $${dollars(recorded)}`);
});

e2e('8 concurrent first requests on an end-user budget that fits 4 answers: at least 3 served, spend ≤ the budget', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'paid', 'eu-model', priced())],
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const body = ask('paid', { max_tokens: 200, user: 'customer-42' });
  // One actual answer (the mock's 100 tokens): priced from a probe with another end user.
  const probe = await send(gw, k.key, { ...body, user: 'probe' }, { completion_tokens: 100, latency_ms: 200 }, 'eu-model');
  const answer = nanos(probe.r.headers.get('x-litellm-response-cost'));
  const budget = 4 * answer;
  await gw.admin('/customer/new', { user_id: 'customer-42', max_budget: Number(dollars(budget)) });
  const results = await Promise.all(Array.from({ length: 8 }, () => sdkChat(gw, k.key, body)));
  const served = results.filter((r) => r.status === 200).length;
  for (const r of results) assert.ok(r.status === 200 || r.status === 429, r.text);
  assert.ok(served >= 3, `${served} of 8 served (budget ${budget} nanos = 4 answers of ${answer})`);
  const eu = (await mock.stats()).bills.filter((b) => b.model === 'eu-model').slice(1);  // without the probe
  const euBill = eu.reduce((a, b) => a + billNanos(b, PRICES), 0);
  assert.ok(euBill <= budget, `end-user spend ${euBill} > budget ${budget}`);
  // The key paid for the probe and every served answer: recorded == the provider's bill.
  await waitFor(async () => nanos((await gw.keyInfo(k.key)).reserved_spend) === 0, { what: 'every reservation settled' });
  assert.equal(await spendNanos(gw, k.key), answer + euBill);
  ctx.t.diagnostic(`end-user budget of 4 answers: ${served}/8 concurrent served, billed ${euBill} of ${budget} nanos`);
});

e2e('a provider that answers in the priority tier unasked cannot push spend past the cap (no tier asked reserves at priority prices)', async (ctx) => {
  const { mock } = state;
  const tierPrices = { input: '0.0000025', output: '0.00001', priority: { input: '0.000005', output: '0.00002' } };
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'tiered', 'prio-model', {
      input_cost_per_token: tierPrices.input, output_cost_per_token: tierPrices.output,
      input_cost_per_token_priority: tierPrices.priority.input, output_cost_per_token_priority: tierPrices.priority.output,
    })],
  }));
  const budget = 20_000_000;  // $0.02
  const k = await gw.generateKey({ max_budget: dollars(budget) });
  await mock.script('prio-model', [{ fill_max_tokens: true, service_tier: 'priority', latency_ms: 100 }]);
  const results = await runPool(40, 20, () => sdkChat(gw, k.key, ask('tiered', { max_tokens: 200 })));
  const served = results.filter((r) => r.status === 200).length;
  assert.ok(served > 0);
  await waitFor(async () => nanos((await gw.keyInfo(k.key)).reserved_spend) === 0, { what: 'every reservation settled' });
  const recorded = await spendNanos(gw, k.key);
  const bill = await mockBillNanos(mock, 'prio-model', tierPrices);
  assert.equal(recorded, bill);
  assert.ok(recorded <= budget, `recorded ${recorded} > budget ${budget}`);
});

e2e('/v1/messages through the Anthropic SDK: cache_control marks reach the provider and its 1-hour cache writes are billed at their price', async (ctx) => {
  const { mock } = state;
  const prices = { input: '0.000003', output: '0.000015', cached: '0.0000003', cache_write: '0.00000375', cache_write_1h: '0.000006' };
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [anthropicDeployment(mock, 'claude', 'claude-cache', {
      input_cost_per_token: prices.input, output_cost_per_token: prices.output,
      cache_read_input_token_cost: prices.cached, cache_creation_input_token_cost: prices.cache_write,
      cache_creation_input_token_cost_above_1hr: prices.cache_write_1h,
    })],
  }));
  const k = await gw.generateKey({ max_budget: 1 });
  const client = gw.anthropic({ apiKey: k.key });
  const long = 'The gateway keeps the cap. '.repeat(300);
  const { data, response } = await client.messages.create({
    model: 'claude', max_tokens: 30,
    system: [{ type: 'text', text: long, cache_control: { type: 'ephemeral', ttl: '1h' } }],
    messages: [{ role: 'user', content: 'Summarise the rule.' }],
  }).withResponse();
  assert.ok(data.usage.cache_creation_input_tokens > 0, `the provider wrote the marked prefix: ${JSON.stringify(data.usage)}`);
  const row = await spendLogRow(gw, { headers: response.headers });
  const items = Object.fromEntries(row.line_items.map((i) => [i.kind, i]));
  assert.ok(items.cache_write_1h?.count > 0, `line items: ${JSON.stringify(row.line_items)}`);
  assert.equal(items.cache_write_1h.price, prices.cache_write_1h);
  const bill = await mockBillNanos(mock, 'claude-cache', prices);
  await expectSpend(gw, k.key, bill);
});
