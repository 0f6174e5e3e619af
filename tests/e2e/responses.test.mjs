// The OpenAI Responses API (POST /v1/responses) through the official `openai` SDK
// (docs/responses_api.md): translated to chat for an Anthropic deployment (text, tool calls,
// streaming events), and every case held to money: the key's recorded spend == the simulator's
// bill, a request past the budget is refused with nothing sent, a feature the target cannot
// express is a 400 naming it with nothing sent.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, anthropicDeployment, openaiDeployment } from './harness.mjs';
import { IN_PRICE, OUT_PRICE, mockBillNanos, spendNanos, expectSpend, spendLogRow, dollars } from './budget_helpers.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: OUT_PRICE };
const priced = { input_cost_per_token: IN_PRICE, output_cost_per_token: OUT_PRICE };
const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

function config(mock) {
  return gatewayConfig({
    model_list: [
      anthropicDeployment(mock, 'resp-claude', 'claude-up', { id: 'claude-1', ...priced }),
      openaiDeployment(mock, 'resp-gpt', 'gpt-up', { id: 'gpt-1', ...priced }),
    ],
  });
}

/// The mock's received request bodies for an upstream model (GET /mock/requests).
async function received(mock, model) {
  const res = await fetch(`${mock.url}/mock/requests`);
  const all = (await res.json()).requests;
  return all.filter((r) => r.model === model);
}

/// Gateway spend of `key` equals the simulator's bill of `upstream` (nanos), and is not zero.
async function assertSpendIsBill(gw, key, mock, upstream) {
  const bill = await mockBillNanos(mock, upstream, PRICES);
  assert.ok(bill > 0, 'the simulator billed something');
  await expectSpend(gw, key, bill, `spend of ${upstream}`);
  return bill;
}

/// Collects a responses stream: its events (by type, in order) and the SDK's final response.
async function collect(stream) {
  const types = [];
  let lastSeq = -1;
  for await (const ev of stream) {
    types.push(ev.type);
    assert.ok(ev.sequence_number > lastSeq, `sequence_number increases (${ev.type})`);
    lastSeq = ev.sequence_number;
  }
  return { types, final: await stream.finalResponse() };
}

e2e('translated (Anthropic): text answer, usage, status, spend == bill, call_type aresponses', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('claude-up', [{ content: 'one two three four', completion_tokens: 4 }]);
  const client = gw.openai({ apiKey: k.key });
  const { data, response } = await client.responses
    .create({ model: 'resp-claude', instructions: 'Be brief.', input: 'Tell me about gateways.', max_output_tokens: 40 })
    .withResponse();
  assert.equal(response.status, 200);
  assert.equal(data.object, 'response');
  assert.match(data.id, /^resp_/);
  assert.equal(data.status, 'completed');
  assert.equal(data.model, 'resp-claude');
  assert.equal(data.output_text, 'one two three four');
  assert.equal(data.output[0].type, 'message');
  assert.equal(data.output[0].content[0].type, 'output_text');
  const m = await mock.model('claude-up');
  assert.equal(m.requests, 1);
  assert.equal(data.usage.input_tokens, m.prompt_tokens, 'input_tokens is what the upstream billed');
  assert.equal(data.usage.output_tokens, 4);
  assert.equal(data.usage.total_tokens, data.usage.input_tokens + 4);
  // What reached Anthropic: the translated request with the admission's bound.
  const [sent] = await received(mock, 'claude-up');
  assert.equal(sent.path, '/v1/messages');
  assert.equal(sent.body.max_tokens, 40, 'max_output_tokens is the bound written upstream');
  assert.equal(sent.body.system, 'Be brief.');
  await assertSpendIsBill(gw, k.key, mock, 'claude-up');
  const row = await spendLogRow(gw, response);
  assert.equal(row.call_type, 'aresponses');
});

e2e('translated (Anthropic): streaming text with the typed events; the final response carries the usage', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('claude-up', [{ content: 'alpha beta gamma', completion_tokens: 3 }]);
  const client = gw.openai({ apiKey: k.key });
  const stream = client.responses.stream({ model: 'resp-claude', input: 'Stream please.', max_output_tokens: 30 });
  const { types, final } = await collect(stream);
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added',
    'response.content_part.added']);
  assert.ok(types.filter((t) => t === 'response.output_text.delta').length >= 3, 'text deltas');
  assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done',
    'response.output_item.done', 'response.completed']);
  assert.equal(final.output_text, 'alpha beta gamma');
  assert.equal(final.status, 'completed');
  const m = await mock.model('claude-up');
  assert.equal(m.streams, 1);
  assert.equal(final.usage.input_tokens, m.prompt_tokens);
  assert.equal(final.usage.output_tokens, 3);
  await assertSpendIsBill(gw, k.key, mock, 'claude-up');
});

e2e('translated (Anthropic): a tool call, then its output sent back; streaming tool call too', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  const call = { completion_tokens: 0, tool_call: 'get_weather', tool_arguments: '{"city":"Paris"}' };
  await mock.script('claude-up', [call, { content: 'It is sunny', completion_tokens: 3 }, call]);
  const client = gw.openai({ apiKey: k.key });
  const first = await client.responses.create({ model: 'resp-claude', input: 'Weather in Paris?', tools: [WEATHER],
    max_output_tokens: 50 });
  const fc = first.output.find((o) => o.type === 'function_call');
  assert.ok(fc, `a function_call item in ${JSON.stringify(first.output)}`);
  assert.equal(fc.name, 'get_weather');
  assert.deepEqual(JSON.parse(fc.arguments), { city: 'Paris' });
  assert.match(fc.call_id, /^toolu_/);
  const [sent1] = await received(mock, 'claude-up');
  assert.equal(sent1.body.tools[0].name, 'get_weather', 'the function tool reached Anthropic as a tool');

  const second = await client.responses.create({
    model: 'resp-claude', tools: [WEATHER], max_output_tokens: 50,
    input: [{ role: 'user', content: 'Weather in Paris?' }, fc,
      { type: 'function_call_output', call_id: fc.call_id, output: '{"sky":"sunny"}' }],
  });
  assert.equal(second.output_text, 'It is sunny');
  const sent2 = (await received(mock, 'claude-up'))[1].body;
  const blocks = sent2.messages.flatMap((msg) => (Array.isArray(msg.content) ? msg.content : []));
  assert.ok(blocks.some((b) => b.type === 'tool_use' && b.id === fc.call_id), 'the call went back as tool_use');
  assert.ok(blocks.some((b) => b.type === 'tool_result' && b.tool_use_id === fc.call_id), 'its output as tool_result');

  const { types, final } = await collect(client.responses.stream({ model: 'resp-claude', input: 'Again?',
    tools: [WEATHER], max_output_tokens: 50 }));
  assert.ok(types.includes('response.function_call_arguments.delta'));
  assert.ok(types.includes('response.function_call_arguments.done'));
  assert.equal(types.at(-1), 'response.completed');
  const sfc = final.output.find((o) => o.type === 'function_call');
  assert.equal(sfc?.name, 'get_weather');
  assert.deepEqual(JSON.parse(sfc.arguments), { city: 'Paris' });
  assert.ok(final.usage.input_tokens > 0);
  await assertSpendIsBill(gw, k.key, mock, 'claude-up');
});

e2e('translated: max_output_tokens reached → status incomplete (max_output_tokens), billed as answered', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('claude-up', [{ completion_tokens: 50 }]);
  const client = gw.openai({ apiKey: k.key });
  const r = await client.responses.create({ model: 'resp-claude', input: 'Go on and on.', max_output_tokens: 5 });
  assert.equal(r.status, 'incomplete');
  assert.equal(r.incomplete_details?.reason, 'max_output_tokens');
  assert.equal(r.usage.output_tokens, 5);
  const { final } = await collect(client.responses.stream({ model: 'resp-claude', input: 'Again.', max_output_tokens: 5 }));
  assert.equal(final.status, 'incomplete');
  await assertSpendIsBill(gw, k.key, mock, 'claude-up');
});

e2e('past the budget: refused before anything is sent (429 budget_exceeded), nothing billed', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  // 500 input bound + 1000 output at the prices is more than $0.000001.
  const k = await gw.generateKey({ max_budget: dollars(1000) });
  const client = gw.openai({ apiKey: k.key, maxRetries: 0 });
  for (const stream of [false, true]) {
    await assert.rejects(
      client.responses.create({ model: 'resp-claude', input: 'x'.repeat(400), max_output_tokens: 1000, stream }),
      (e) => e instanceof OpenAI.APIError && e.status === 429 && e.error?.type === 'budget_exceeded',
    );
  }
  assert.equal((await mock.model('claude-up')).requests, 0, 'nothing was sent');
  assert.equal(await spendNanos(gw, k.key), 0);
});

e2e('a feature the translated target cannot express → 400 naming it, nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const client = gw.openai({ maxRetries: 0 });
  const cases = [
    [{ tools: [{ type: 'web_search_preview' }] }, /tools\[0\]\.type=web_search_preview/],
    [{ tools: [WEATHER, { type: 'file_search', vector_store_ids: ['vs_1'] }] }, /tools\[1\]\.type=file_search/],
    [{ tools: [{ type: 'code_interpreter', container: { type: 'auto' } }] }, /code_interpreter/],
    [{ previous_response_id: 'resp_123' }, /previous_response_id/],
    [{ background: true }, /background/],
  ];
  for (const [extra, pattern] of cases) {
    await assert.rejects(
      client.responses.create({ model: 'resp-claude', input: 'hi', ...extra }),
      (e) => e instanceof OpenAI.APIError && e.status === 400 && pattern.test(e.message),
      `${JSON.stringify(extra)} → 400 ${pattern}`,
    );
  }
  // Malformed input is the caller's 400 too.
  await assert.rejects(client.responses.create({ model: 'resp-claude' }),
    (e) => e.status === 400 && /input/.test(e.message));
  await assert.rejects(client.responses.create({ model: 'resp-claude', input: [{ type: 'bogus_item' }] }),
    (e) => e.status === 400 && /bogus_item/.test(e.message));
  assert.equal((await mock.model('claude-up')).requests, 0, 'nothing was sent');
});

e2e('native (OpenAI): the body passes through (model and max_output_tokens rewritten), the answer is relayed; spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('gpt-up', [{ content: 'native words here', completion_tokens: 3 }]);
  const client = gw.openai({ apiKey: k.key });
  const { data, response } = await client.responses.create({
    model: 'resp-gpt', input: 'Hello natively.', max_output_tokens: 40, store: true, metadata: { run: 'e2e' },
    truncation: 'auto', tools: [{ type: 'web_search_preview' }],
  }).withResponse();
  assert.equal(response.status, 200);
  assert.equal(data.object, 'response');
  assert.equal(data.model, 'gpt-up', "the upstream's own answer, relayed");
  assert.equal(data.output_text, 'native words here');
  const [sent] = await received(mock, 'gpt-up');
  assert.equal(sent.path, '/v1/responses');
  assert.equal(sent.body.model, 'gpt-up');
  assert.equal(sent.body.max_output_tokens, 40, 'the admission bound is the one written');
  assert.equal(sent.body.store, true);
  assert.deepEqual(sent.body.metadata, { run: 'e2e' });
  assert.equal(sent.body.truncation, 'auto');
  assert.deepEqual(sent.body.tools, [{ type: 'web_search_preview' }], 'a built-in tool reaches OpenAI');
  assert.equal(sent.body.input, 'Hello natively.');
  const m = await mock.model('gpt-up');
  assert.equal(data.usage.input_tokens, m.prompt_tokens);
  assert.equal(data.usage.output_tokens, 3);
  await assertSpendIsBill(gw, k.key, mock, 'gpt-up');
  assert.equal((await spendLogRow(gw, response)).call_type, 'aresponses');
});

e2e('native (OpenAI): streaming text and a tool call; events relayed; final usage from response.completed; spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('gpt-up', [{ content: 'let me check', completion_tokens: 3, tool_call: 'get_weather', tool_arguments: '{"city":"Oslo"}' }]);
  const client = gw.openai({ apiKey: k.key });
  const { types, final } = await collect(client.responses.stream({ model: 'resp-gpt', input: 'Weather in Oslo?',
    tools: [WEATHER], max_output_tokens: 60 }));
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.ok(types.includes('response.function_call_arguments.delta'));
  assert.equal(final.output_text, 'let me check');
  const fc = final.output.find((o) => o.type === 'function_call');
  assert.equal(fc?.name, 'get_weather');
  assert.deepEqual(JSON.parse(fc.arguments), { city: 'Oslo' });
  const m = await mock.model('gpt-up');
  assert.equal(m.streams, 1);
  assert.equal(final.usage.input_tokens, m.prompt_tokens);
  assert.equal(final.usage.output_tokens, 3);
  const [sent] = await received(mock, 'gpt-up');
  assert.equal(sent.body.stream, true);
  assert.equal(sent.body.max_output_tokens, 60);
  await assertSpendIsBill(gw, k.key, mock, 'gpt-up');
});

e2e('native: past the budget refused with nothing sent; a fallback from OpenAI to Anthropic translates', async (ctx) => {
  const { mock } = state;
  const cfg = config(mock);
  cfg.model_list.push(openaiDeployment(mock, 'resp-gpt-fb', 'gpt-broken', { id: 'gpt-broken-1', ...priced }));
  cfg.litellm_settings = { fallbacks: [{ 'resp-gpt-fb': ['resp-claude'] }] };
  const gw = await ctx.gateway(cfg);
  const poor = await gw.generateKey({ max_budget: dollars(1000) });
  await assert.rejects(gw.openai({ apiKey: poor.key }).responses.create({ model: 'resp-gpt', input: 'x'.repeat(400),
    max_output_tokens: 1000 }), (e) => e.status === 429 && e.error?.type === 'budget_exceeded');
  assert.equal((await mock.model('gpt-up')).requests, 0, 'nothing was sent');

  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('gpt-broken', [{ error: 'server_error' }]);
  await mock.script('claude-up', [{ content: 'from claude', completion_tokens: 2 }]);
  const r = await gw.openai({ apiKey: k.key }).responses.create({ model: 'resp-gpt-fb', input: 'hi', max_output_tokens: 20 });
  assert.equal(r.object, 'response');
  assert.equal(r.output_text, 'from claude');
  assert.equal((await received(mock, 'gpt-broken'))[0].path, '/v1/responses');
  assert.equal((await received(mock, 'claude-up'))[0].path, '/v1/messages');
  const bill = (await mockBillNanos(mock, 'gpt-broken', PRICES)) + (await mockBillNanos(mock, 'claude-up', PRICES));
  await expectSpend(gw, k.key, bill, 'spend == bill (the 500 is unbilled)');
});

e2e('GET and DELETE /v1/responses/{id} pass through to the OpenAI deployment, never charged', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock));
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('gpt-up', [{ content: 'stored answer', completion_tokens: 2 }]);
  const client = gw.openai({ apiKey: k.key });
  const created = await client.responses.create({ model: 'resp-gpt', input: 'Keep this.', store: true });
  await assertSpendIsBill(gw, k.key, mock, 'gpt-up');
  const spent = await spendNanos(gw, k.key);
  const requests = (await mock.stats()).requests_total;

  const got = await client.responses.retrieve(created.id, { model: 'resp-gpt' });
  assert.equal(got.id, created.id);
  assert.equal(got.output_text, 'stored answer');
  const again = await client.responses.retrieve(created.id);  // no group named: the first OpenAI deployment
  assert.equal(again.id, created.id);
  await client.responses.delete(created.id);
  await assert.rejects(client.responses.retrieve(created.id), (e) => e.status === 404);
  await assert.rejects(client.responses.retrieve(created.id, { model: 'resp-claude' }),
    (e) => e.status === 400 && /no OpenAI or Azure deployment/.test(e.message));
  assert.equal(await spendNanos(gw, k.key), spent, 'GET and DELETE are not charged');
  assert.equal((await mock.stats()).requests_total, requests, 'and are no model requests');
});

// Input the body does not show (docs/budgets.md "Input the body does not show"): OpenAI adds the
// stored conversation of previous_response_id / conversation, a stored prompt, a referenced item;
// Anthropic bills the tool definitions of mcp_servers. The body bounds none of it, so such a
// request is reserved at the model's context limit: a budget that cannot pay for that is refused
// with nothing sent (an attack reproduced $0.10 charged on a $0.01 cap with a stand-in upstream).
e2e('input the body does not show (previous_response_id, conversation, prompt, item_reference, mcp_servers) is reserved at the context limit; a native body is bounded by its own parts', async (ctx) => {
  const { mock } = state;
  const CONTEXT = 100_000;  // × $0.000001 = $0.10 of input at most
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      { ...openaiDeployment(mock, 'resp-gpt', 'gpt-up', priced), model_info: { id: 'gpt-1', max_input_tokens: CONTEXT } },
      { ...anthropicDeployment(mock, 'claude', 'claude-up', priced), model_info: { id: 'claude-1', max_input_tokens: CONTEXT } },
    ],
  }));
  const small = await gw.generateKey({ max_budget: 0.01 });
  const client = gw.openai({ apiKey: small.key, maxRetries: 0 });
  const hidden = [
    { previous_response_id: 'resp_abc' },
    { conversation: 'conv_123' },
    { prompt: { id: 'pmpt_1', version: '2' } },
    { input: [{ type: 'item_reference', id: 'msg_1' }, { role: 'user', content: 'and then?' }] },
  ];
  for (const extra of hidden) {
    await assert.rejects(
      client.responses.create({ model: 'resp-gpt', input: 'hi', max_output_tokens: 5, ...extra }),
      (e) => e instanceof OpenAI.APIError && e.status === 429 && e.error?.type === 'budget_exceeded',
      JSON.stringify(extra),
    );
  }
  const mcp = {
    model: 'claude', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }],
    mcp_servers: [{ type: 'url', url: 'https://mcp.example.com/sse', name: 'example' }],
  };
  // Parts of a native body its chat translation drops are bounded too: the Anthropic deployment
  // is sent the body itself (a document by URL: up to the context; a search result of 1 MB).
  const url = { type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } };
  const found = { type: 'search_result', source: 'https://example.com', title: 'r', content: [{ type: 'text', text: 'x'.repeat(1_000_000) }] };
  for (const body of [mcp, { ...mcp, mcp_servers: undefined, messages: [{ role: 'user', content: [url, { type: 'text', text: 'sum up' }] }] },
    { ...mcp, mcp_servers: undefined, messages: [{ role: 'user', content: [found, { type: 'text', text: 'sum up' }] }] }]) {
    const refused = await gw.fetch('/v1/messages', { auth: small.key, body, headers: { 'anthropic-version': '2023-06-01' } });
    assert.equal(refused.status, 429, `${JSON.stringify(body).slice(0, 120)}: ${refused.text}`);
  }
  assert.equal((await mock.model('gpt-up')).requests, 0, 'nothing was sent');
  assert.equal((await mock.model('claude-up')).requests, 0, 'nothing was sent');
  assert.equal(await spendNanos(gw, small.key), 0);
  // The same bodies without those fields fit the budget; with them, a budget of $1 admits the
  // request, reserving at least the context's input.
  const plain = await client.responses.create({ model: 'resp-gpt', input: 'hi', max_output_tokens: 5 });
  assert.equal(plain.object, 'response');
  const big = await gw.generateKey({ max_budget: 1 });
  const { response } = await gw.openai({ apiKey: big.key, maxRetries: 0 }).responses
    .create({ model: 'resp-gpt', input: 'hi', max_output_tokens: 5, previous_response_id: 'resp_abc' })
    .withResponse().catch((e) => ({ response: { headers: e.headers } }));
  const row = await spendLogRow(gw, { headers: response.headers instanceof Headers ? response.headers : new Headers(response.headers) });
  const step = row.decision.steps.find((s) => s.step === 'attempt');
  assert.ok(Number(step.reserved) >= CONTEXT * Number(IN_PRICE), `reserved ${step.reserved}`);
});
