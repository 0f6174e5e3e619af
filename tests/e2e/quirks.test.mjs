// Issue 12 item 6: the quirks of OpenAI-compatible servers (Ollama's /v1, vLLM, SGLang, LM Studio,
// TGI, llama.cpp), each reproduced by the simulator (tools/mock/README.md "Quirks catalogue", with
// sources) and checked through the official SDKs in both endpoint families: the OpenAI SDK
// (chat.completions non-streaming, streaming, and the SDK's own stream accumulator) and the
// Anthropic SDK (/v1/messages to the same OpenAI-compatible deployment, translated). Each case:
// the client gets the correct answer; the Anthropic view tells the truth about what was delivered
// (tool calls → stop_reason "tool_use" whatever finish reason the server sent; tool input JSON
// intact across split characters); the recorded spend equals the simulator's bill.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, openaiDeployment } from './harness.mjs';
import { IN_PRICE, OUT_PRICE, spendNanos, mockBillNanos } from './budget_helpers.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: OUT_PRICE };
const UP = 'oss-up';

/// The arguments the simulator's get_weather call k carries (multibyte characters on purpose).
const ARGS = (k) => ({ city: 'Zürich', sky: '☀ 晴 🌤', n: k });
const TOOLS = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
const ANTHROPIC_TOOLS = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
const ask = { messages: [{ role: 'user', content: 'Weather in Zürich?' }], max_tokens: 200 };

async function setup(ctx, behavior) {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [openaiDeployment(mock, 'oss', UP, { id: 'oss-1', input_cost_per_token: IN_PRICE, output_cost_per_token: OUT_PRICE })],
  }));
  await mock.script(UP, [behavior]);
  const k = await gw.generateKey({ max_budget: 1 });
  return { gw, key: k.key, openai: gw.openai({ apiKey: k.key }), anthropic: gw.anthropic({ apiKey: k.key }) };
}

/// The OpenAI stream's chunks, with tool calls assembled by index as OpenAI documents them.
async function openaiStream(client, body) {
  const stream = await client.chat.completions.create({ model: 'oss', stream: true, stream_options: { include_usage: true }, ...body });
  const calls = [];
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices ?? []) {
      if (c.delta?.content) text += c.delta.content;
      for (const t of c.delta?.tool_calls ?? []) {
        assert.equal(typeof t.index, 'number', `a tool call delta without index: ${JSON.stringify(t)}`);
        calls[t.index] ??= { id: '', name: '', args: '' };
        if (t.id) calls[t.index].id = t.id;
        if (t.function?.name) calls[t.index].name = t.function.name;
        calls[t.index].args += t.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { calls, text, finish, usage };
}

/// Every view of one answer: OpenAI non-stream, stream, the SDK's stream accumulator; Anthropic
/// non-stream and stream (the SDK's finalMessage). Returns them for the case's assertions.
async function allViews(s, { tools = true } = {}) {
  const o = tools ? { tools: TOOLS } : {};
  const a = tools ? { tools: ANTHROPIC_TOOLS } : {};
  const plain = await s.openai.chat.completions.create({ model: 'oss', ...ask, ...o });
  const streamed = await openaiStream(s.openai, { ...ask, ...o });
  const accumulated = await s.openai.chat.completions.stream({ model: 'oss', ...ask, ...o }).finalChatCompletion();
  const msg = await s.anthropic.messages.create({ model: 'oss', ...ask, ...a });
  const events = [];
  const astream = s.anthropic.messages.stream({ model: 'oss', ...ask, ...a });
  astream.on('streamEvent', (e) => events.push(e));
  const final = await astream.finalMessage();
  return { plain, streamed, accumulated, msg, final, events };
}

function assertToolViews(v, n) {
  const want = Array.from({ length: n }, (_, k) => ARGS(k));
  // OpenAI, non-streaming.
  const pc = v.plain.choices[0].message.tool_calls;
  assert.deepEqual(pc.map((c) => JSON.parse(c.function.arguments)), want);
  // OpenAI, streaming: one call per index, distinct ids, arguments intact.
  assert.deepEqual(v.streamed.calls.map((c) => JSON.parse(c.args)), want);
  assert.equal(new Set(v.streamed.calls.map((c) => c.id)).size, n);
  assert.ok(v.streamed.calls.every((c) => c.name === 'get_weather'));
  // The SDK's own accumulator (it indexes calls by `index`).
  assert.deepEqual(v.accumulated.choices[0].message.tool_calls.map((c) => JSON.parse(c.function.arguments)), want);
  // Anthropic view: one tool_use block per call, input intact, stop_reason tool_use.
  for (const m of [v.msg, v.final]) {
    const uses = m.content.filter((b) => b.type === 'tool_use');
    assert.deepEqual(uses.map((b) => b.input), want);
    assert.ok(uses.every((b) => b.name === 'get_weather' && b.id));
    assert.equal(m.stop_reason, 'tool_use');
  }
  const delta = v.events.find((e) => e.type === 'message_delta');
  assert.equal(delta?.delta?.stop_reason, 'tool_use');
  assert.ok(v.events.some((e) => e.type === 'message_stop'), 'the Anthropic stream ended with message_stop');
}

async function assertMoney(s, ctx, what) {
  const bill = await mockBillNanos(state.mock, UP, PRICES);
  const spent = await spendNanos(s.gw, s.key);
  assert.ok(bill > 0);
  assert.equal(spent, bill, `${what}: spend ${spent} != bill ${bill}`);
  ctx.t.diagnostic(`${what}: spend == bill == ${bill} nanos over 5 calls`);
}

e2e('vLLM/mlx: tool calls answered with finish_reason "stop" — Anthropic view says tool_use', async (ctx) => {
  const s = await setup(ctx, { tool_calls: 1, quirks: ['finish_stop'] });
  const v = await allViews(s);
  assertToolViews(v, 1);
  // The OpenAI view passes the server's finish reason through (OpenAI itself answers a named
  // tool_choice with "stop"); the tool calls are the truth it carries.
  assert.equal(v.plain.choices[0].finish_reason, 'stop');
  assert.equal(v.streamed.finish, 'stop');
  await assertMoney(s, ctx, 'finish_stop');
});

e2e('Ollama: parallel tool calls all with index 0, each whole in one chunk — one call each, in both views', async (ctx) => {
  const s = await setup(ctx, { tool_calls: 2, quirks: ['same_index', 'args_one_chunk'] });
  const v = await allViews(s);
  assertToolViews(v, 2);
  assert.equal(v.streamed.finish, 'tool_calls');
  await assertMoney(s, ctx, 'same_index');
});

e2e('Ollama < 0.4.7: tool call deltas without index — indexed for OpenAI clients, one block per call for Anthropic', async (ctx) => {
  const s = await setup(ctx, { tool_calls: 2, quirks: ['no_index'] });
  const v = await allViews(s);
  assertToolViews(v, 2);
  await assertMoney(s, ctx, 'no_index');
});

e2e('tool-call arguments split inside a UTF-8 character across reads, with finish "stop" — input intact', async (ctx) => {
  const s = await setup(ctx, { tool_calls: 1, quirks: ['split_utf8', 'finish_stop'] });
  const v = await allViews(s);
  assertToolViews(v, 1);
  await assertMoney(s, ctx, 'split_utf8');
});

e2e('TGI/llama.cpp: no data: [DONE] after the finish and usage — a complete answer, [DONE]/message_stop to the client, spend = usage', async (ctx) => {
  const s = await setup(ctx, { content: 'fine and sunny today', fault: 'no_done' });
  const v = await allViews(s, { tools: false });
  assert.equal(v.streamed.text, 'fine and sunny today');
  assert.equal(v.streamed.finish, 'stop');
  assert.equal(v.streamed.usage?.completion_tokens, 4);
  assert.equal(v.accumulated.choices[0].message.content, 'fine and sunny today');
  assert.equal(v.final.content[0].text, 'fine and sunny today');
  assert.equal(v.final.stop_reason, 'end_turn');
  assert.equal(v.final.usage.output_tokens, 4);
  assert.ok(v.events.some((e) => e.type === 'message_stop'));
  // Recorded as a complete answer: its usage, not the reservation.
  const rows = await s.gw.admin('/spend/logs');
  const ours = rows.filter((r) => r.model_group === 'oss');
  assert.equal(ours.length, 5);
  assert.ok(ours.every((r) => r.unknown_outcome !== true), JSON.stringify(ours.map((r) => r.unknown_outcome)));
  await assertMoney(s, ctx, 'no_done');
});

e2e('no [DONE] after tool calls with finish "stop" — Anthropic stream still ends tool_use + message_stop', async (ctx) => {
  const s = await setup(ctx, { tool_calls: 1, fault: 'no_done', quirks: ['finish_stop'] });
  const v = await allViews(s);
  assertToolViews(v, 1);
  await assertMoney(s, ctx, 'no_done + finish_stop');
});

e2e('vLLM: usage on the finish chunk (non-empty choices) and usage on every chunk — read once, billed once', async (ctx) => {
  for (const style of ['with_finish', 'every_chunk']) {
    await state.mock.reset();
    const s = await setup(ctx, { content: 'one two three', usage_style: style });
    const v = await allViews(s, { tools: false });
    assert.equal(v.streamed.text, 'one two three');
    assert.equal(v.streamed.usage?.completion_tokens, 3, style);
    assert.equal(v.final.usage.output_tokens, 3, style);
    assert.equal(v.final.stop_reason, 'end_turn');
    await assertMoney(s, ctx, style);
  }
});

e2e('null vs absent: role absent in the first delta, "content": null and "tool_calls": null in deltas — text intact', async (ctx) => {
  const s = await setup(ctx, { content: 'null fields are fine', quirks: ['no_role', 'nulls'] });
  const v = await allViews(s, { tools: false });
  assert.equal(v.plain.choices[0].message.content, 'null fields are fine');
  assert.equal(v.streamed.text, 'null fields are fine');
  assert.equal(v.accumulated.choices[0].message.content, 'null fields are fine');
  assert.equal(v.msg.content[0].text, 'null fields are fine');
  assert.equal(v.final.content[0].text, 'null fields are fine');
  await assertMoney(s, ctx, 'nulls');
});

e2e('tool calls with content null, role absent and null fields (Ollama/LM Studio style) — both views', async (ctx) => {
  const s = await setup(ctx, { tool_calls: 2, quirks: ['no_role', 'nulls', 'finish_stop'] });
  const v = await allViews(s);
  assertToolViews(v, 2);
  await assertMoney(s, ctx, 'nulls + tools');
});
