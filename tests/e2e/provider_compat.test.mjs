// Providers LiteLLM configs name beside OpenAI and Anthropic (issue 12 §5): ollama_chat/
// (Ollama /api/chat), ollama/ (/api/generate), huggingface/ (OpenAI-compatible TGI/endpoints),
// cohere/ (Cohere v2 chat) and mistralai/ (LiteLLM's alias of mistral/), against the simulator's
// wire formats, through the official openai and @anthropic-ai/sdk SDKs. Every case holds money:
// the key's recorded spend == the simulator's bill at the table's prices (0 for Ollama, whose
// models are free and never blocked by a budget), a paid request past a budget is refused with
// nothing sent, and the providers' errors land in their documented classes, unbilled.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { useMock, e2e, gatewayConfig, spendLogOf, UPSTREAM_KEY } from './harness.mjs';
import { billNanos, expectSpend, nanos, dollars } from './budget_helpers.mjs';

const state = useMock();

const CONTENT = 'alpha beta gamma delta';
const REPLY = { content: CONTENT, completion_tokens: 4 };
const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

// group → [litellm model, upstream model the mock sees, api_base suffix, prices of the bill]
const FREE = { input: '0', output: '0' };
const PROVIDERS = {
  'oc': { model: 'ollama_chat/llama3.1', upstream: 'llama3.1', base: '', prices: FREE, tools: true },
  'og': { model: 'ollama/llama2', upstream: 'llama2', base: '', prices: FREE, tools: true },
  'co': { model: 'cohere/command-r-08-2024', upstream: 'command-r-08-2024', base: '', prices: { input: '0.00000015', output: '0.0000006' }, tools: true, key: true },
  // A TGI server given by api_base: LiteLLM appends /v1/chat/completions. HF models are not in
  // the table: priced by the deployment's own costs.
  'hf': { model: 'huggingface/meta-llama/Llama-3.1-8B-Instruct', upstream: 'meta-llama/Llama-3.1-8B-Instruct', base: '', prices: { input: '0.0000002', output: '0.0000004' }, params: { input_cost_per_token: '0.0000002', output_cost_per_token: '0.0000004' }, key: true },
  'mi': { model: 'mistralai/mistral-small', upstream: 'mistral-small', base: '/v1', prices: { input: '0.0000001', output: '0.0000003' }, key: true },
};

function deployment(mock, group) {
  const p = PROVIDERS[group];
  return {
    model_name: group,
    litellm_params: { model: p.model, api_base: mock.url + p.base, ...(p.key ? { api_key: UPSTREAM_KEY } : {}), ...(p.params ?? {}) },
    model_info: { id: `${group}-1` },
  };
}

const config = (mock, groups = Object.keys(PROVIDERS)) => gatewayConfig({ model_list: groups.map((g) => deployment(mock, g)) });

async function billOf(mock, group) {
  const s = await mock.stats();
  const p = PROVIDERS[group];
  return (s.bills ?? []).filter((b) => b.model === p.upstream).reduce((a, b) => a + billNanos(b, p.prices), 0);
}

const ask = (model, extra = {}) => ({ model, messages: [{ role: 'user', content: 'Tell me about gateways.' }], max_tokens: 50, ...extra });

for (const group of Object.keys(PROVIDERS)) {
  const p = PROVIDERS[group];

  e2e(`${group} (${p.model}): non-streaming and streaming text, usage read, spend == the simulator's bill`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(config(mock, [group]));
    const k = await gw.generateKey({ max_budget: 10 });
    await mock.script(p.upstream, [REPLY]);
    const client = gw.openai({ apiKey: k.key });

    const { data, response } = await client.chat.completions.create(ask(group)).withResponse();
    assert.equal(response.status, 200);
    assert.equal(data.choices[0].message.content, CONTENT);
    assert.equal(data.choices[0].finish_reason, 'stop');
    const m1 = await mock.model(p.upstream);
    assert.equal(m1.requests, 1);
    assert.equal(data.usage.completion_tokens, 4);
    assert.equal(data.usage.prompt_tokens, m1.prompt_tokens, 'the usage the gateway read is the one the provider billed');

    const stream = await client.chat.completions.create(ask(group, { stream: true, stream_options: { include_usage: true } }));
    let text = '';
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) text += chunk.choices[0].delta.content;
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, CONTENT);
    assert.equal(finish, 'stop');
    assert.ok(usage, 'the usage chunk the client asked for');
    assert.equal(usage.completion_tokens, 4);
    const m2 = await mock.model(p.upstream);
    assert.equal(m2.requests, 2);
    assert.equal(m2.streams, 1);

    const bill = await billOf(mock, group);
    if (p.prices === FREE) assert.equal(bill, 0);
    else assert.ok(bill > 0);
    await expectSpend(gw, k.key, bill, `${group}: recorded spend == the bill`);
    const row = await spendLogOf(gw, response);
    assert.equal(row.model_id, `${group}-1`);
  });

  if (p.tools) {
    e2e(`${group}: a tool call, non-streaming and streaming, OpenAI shape (arguments a JSON string), finish tool_calls`, async (ctx) => {
      const { mock } = state;
      const gw = await ctx.gateway(config(mock, [group]));
      const k = await gw.generateKey({ max_budget: 10 });
      await mock.script(p.upstream, [REPLY]);
      const client = gw.openai({ apiKey: k.key });
      const data = await client.chat.completions.create(ask(group, { tools: TOOLS }));
      const choice = data.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.tool_calls.length, 1);
      assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
      assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { text: CONTENT });
      assert.ok(choice.message.tool_calls[0].id);

      const stream = await client.chat.completions.create(ask(group, { tools: TOOLS, stream: true, stream_options: { include_usage: true } }));
      let args = '';
      let name = null;
      let finish = null;
      let usage = null;
      for await (const chunk of stream) {
        for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
          assert.equal(tc.index, 0);
          if (tc.function?.name) name = tc.function.name;
          args += tc.function?.arguments ?? '';
        }
        if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(name, 'get_weather');
      assert.deepEqual(JSON.parse(args), { text: CONTENT });
      assert.equal(finish, 'tool_calls');
      assert.equal(usage?.completion_tokens, 4);
      await expectSpend(gw, k.key, await billOf(mock, group), `${group}: tool calls billed as generated`);
    });
  }
}

e2e('the Anthropic SDK against ollama_chat/ and cohere/: text and tool_use, streaming and not, spend == bill', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock, ['oc', 'co']));
  const k = await gw.generateKey({ max_budget: 10 });
  const client = gw.anthropic({ apiKey: k.key });
  const tools = [{ name: 'get_weather', description: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];
  for (const group of ['oc', 'co']) {
    await mock.script(PROVIDERS[group].upstream, [REPLY]);
    const msg = await client.messages.create({ model: group, max_tokens: 50, messages: [{ role: 'user', content: 'hi there' }] });
    assert.equal(msg.content[0].text, CONTENT, group);
    assert.equal(msg.stop_reason, 'end_turn', group);
    assert.equal(msg.usage.output_tokens, 4, group);

    const call = await client.messages.create({ model: group, max_tokens: 50, tools, messages: [{ role: 'user', content: 'weather?' }] });
    assert.equal(call.stop_reason, 'tool_use', group);
    const use = call.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather', group);
    assert.deepEqual(use.input, { text: CONTENT }, group);

    const events = await client.messages.create({ model: group, max_tokens: 50, tools, stream: true, messages: [{ role: 'user', content: 'weather?' }] });
    let json = '';
    let stop = null;
    let out = null;
    for await (const ev of events) {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'input_json_delta') json += ev.delta.partial_json;
      if (ev.type === 'message_delta') { stop = ev.delta.stop_reason; out = ev.usage.output_tokens; }
    }
    assert.deepEqual(JSON.parse(json), { text: CONTENT }, group);
    assert.equal(stop, 'tool_use', group);
    assert.equal(out, 4, group);
  }
  await expectSpend(gw, k.key, await billOf(mock, 'co'), 'the Cohere bill (Ollama is free)');
});

e2e('budgets: a key whose budget is spent is still served by free Ollama models, and refused for Cohere with nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock, ['oc', 'og', 'co']));
  const k = await gw.generateKey({ max_budget: 0.000001 });  // 1,000 nanos: less than any Cohere worst case
  for (const g of ['oc', 'og']) {
    await mock.script(PROVIDERS[g].upstream, [REPLY]);
    const r = await gw.fetch('/v1/chat/completions', { auth: k.key, body: ask(g) });
    assert.equal(r.status, 200, `${g}: ${r.text}`);
  }
  const refused = await gw.fetch('/v1/chat/completions', { auth: k.key, body: ask('co') });
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.json.error.type, 'budget_exceeded');
  assert.equal((await mock.model('command-r-08-2024')).requests, 0, 'nothing was sent');
  await expectSpend(gw, k.key, 0);
});

// [group, mock behaviour, upstream status, class]
const ERRORS = [
  ['oc', { error: 'rate_limit_exceeded' }, 429, 'retryable_capacity'],
  ['oc', { error: 'overloaded' }, 503, 'retryable_capacity'],
  ['oc', { error: 'server_error' }, 500, 'transient_provider_error'],
  ['oc', { error: 'invalid_api_key' }, 401, 'deployment_misconfigured'],
  ['oc', { error: 'not_found' }, 404, 'deployment_misconfigured'],
  ['oc', { error: 'context_length_exceeded' }, 400, 'context_overflow'],
  ['og', { error: 'context_length_exceeded' }, 400, 'context_overflow'],
  ['co', { error: 'rate_limit_exceeded' }, 429, 'retryable_capacity'],
  ['co', { error: 'server_error' }, 500, 'transient_provider_error'],
  ['co', { error: 'invalid_api_key' }, 401, 'deployment_misconfigured'],
  ['co', { error: 'context_length_exceeded' }, 400, 'context_overflow'],
];

e2e('errors in each provider\'s own shape land in their documented classes and are not charged', async (ctx) => {
  const { mock } = state;
  for (const [group, behavior, status, cls] of ERRORS) {
    // A gateway per case: a misconfigured deployment's circuit opens (next_deployment).
    const gw = await ctx.gateway(config(mock, [group]));
    const k = await gw.generateKey({ max_budget: 10 });
    await mock.script(PROVIDERS[group].upstream, [behavior]);
    const r = await gw.fetch('/v1/chat/completions', { auth: k.key, body: ask(group) });
    const what = `${group} ${JSON.stringify(behavior)}: ${r.status} ${r.text.slice(0, 200)}`;
    assert.equal(r.status, status, what);
    const row = await spendLogOf(gw, r.headers);
    const steps = row.decision.steps.filter((s) => s.step === 'attempt');
    assert.equal(steps[0].class, cls, what);
    assert.equal(steps[0].status, status, what);
    assert.equal(nanos(row.spend), 0, what);
    await expectSpend(gw, k.key, 0, `${what}: error answers are unbilled`);
    await gw.stop();
  }
});

e2e('ollama cached prompt (no prompt_eval_count): usage unknown, still free; a cut stream is still free', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(config(mock, ['oc']));
  const k = await gw.generateKey({ max_budget: 0 });
  await mock.script('llama3.1', [{ ...REPLY, usage_style: 'omit' }]);
  const r = await gw.fetch('/v1/chat/completions', { auth: k.key, body: ask('oc') });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].message.content, CONTENT);
  assert.equal(r.json.usage, undefined, 'no invented usage');
  await mock.script('llama3.1', [{ ...REPLY, fault: 'no_done' }]);
  const cut = await gw.fetch('/v1/chat/completions', { auth: k.key, body: ask('oc', { stream: true }) });
  assert.equal(cut.status, 200);
  await expectSpend(gw, k.key, 0);
});

e2e('config: huggingface router routes, ollama default base, mistralai alias prices as mistral', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      deployment(mock, 'mi'),
      { model_name: 'hf-router', litellm_params: { model: 'huggingface/together/deepseek-ai/DeepSeek-R1', api_key: 'hf_x' } },
      { model_name: 'local', litellm_params: { model: 'ollama_chat/qwen3' } },
    ],
  }));
  const models = await gw.admin('/model/info');
  const byName = Object.fromEntries(models.data.map((m) => [m.model_name, m]));
  assert.equal(byName['hf-router'].litellm_params.api_base, 'https://router.huggingface.co/v1');
  assert.equal(byName.local.litellm_params.api_base, 'http://localhost:11434');
  // mistralai/ is priced from the table (mistral-small): a budgeted key may call it.
  const k = await gw.generateKey({ max_budget: 1 });
  await mock.script('mistral-small', [REPLY]);
  const r = await gw.fetch('/v1/chat/completions', { auth: k.key, body: ask('mi') });
  assert.equal(r.status, 200, r.text);
  await expectSpend(gw, k.key, await billOf(mock, 'mi'));
  assert.ok(nanos((await gw.keyInfo(k.key)).spend) > 0);
  void dollars;
});
