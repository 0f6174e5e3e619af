// tollgate-mock on its own (no gateway): every billing behaviour, checked with fetch against the
// status, the body / SSE shape, the usage numbers and the per-request bills of /mock/stats
// (tools/mock/README.md is the reference).
import assert from 'node:assert/strict';
import { useMock, e2e, sleep, waitFor } from './harness.mjs';
import { png, jpeg, gif, webp, b64, dataUrl } from './media_fixtures.mjs';

const state = useMock();

const OPENAI = '/v1/chat/completions';
const ANTHROPIC = '/v1/messages';
const HELLO = [{ role: 'user', content: 'hello' }];
const P_HELLO = 6; // ceil(5 / 4) + 4
const promptOf = (...texts) => texts.reduce((n, t) => n + Math.ceil(Buffer.byteLength(t) / 4) + 4, 0);

const oa = (extra = {}) => ({ model: 'gpt-bill', messages: HELLO, ...extra });
const an = (extra = {}) => ({ model: 'claude-bill', max_tokens: 1000, messages: HELLO, ...extra });

async function post(path, body, { behavior, headers = {}, signal } = {}) {
  const h = { 'content-type': 'application/json', ...headers };
  if (behavior) h['x-mock-behavior'] = JSON.stringify(behavior);
  const res = await fetch(state.mock.url + path, { method: 'POST', headers: h, body: JSON.stringify(body), signal });
  let text = null;
  let error = null;
  try { text = await res.text(); } catch (e) { error = e; }
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json, error };
}

function parseSse(text) {
  return text.split('\n\n').filter((b) => b.trim()).map((block) => {
    let event = null;
    let data = null;
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data = line.slice(6);
    }
    let json;
    try { json = JSON.parse(data); } catch { json = undefined; }
    return { event, data, json };
  });
}

/// A streaming request read to its end (or until `stopWhen(events)` says so: then the client
/// aborts). A connection torn mid-body is reported as `error`, with the text received so far.
async function stream(path, body, { behavior, headers = {}, stopWhen } = {}) {
  const ctl = new AbortController();
  const h = { 'content-type': 'application/json', ...headers };
  if (behavior) h['x-mock-behavior'] = JSON.stringify(behavior);
  const res = await fetch(state.mock.url + path, {
    method: 'POST', headers: h, body: JSON.stringify({ ...body, stream: true }), signal: ctl.signal,
  });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  let error = null;
  let aborted = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
      if (stopWhen && stopWhen(parseSse(text))) {
        aborted = true;
        ctl.abort();
        break;
      }
    }
  } catch (e) { error = e; }
  return { status: res.status, headers: res.headers, text, events: parseSse(text), error, aborted };
}

const contentEvents = (events) => events.filter((e) => e.json?.choices?.[0]?.delta?.content);
const anthropicTextEvents = (events) => events.filter((e) => e.json?.type === 'content_block_delta');
const openaiUsageChunk = (events) => events.find((e) => e.json && Array.isArray(e.json.choices) && e.json.choices.length === 0);

async function bills() { return (await state.mock.stats()).bills; }
async function onlyBill() {
  const b = await bills();
  assert.equal(b.length, 1, `one bill: ${JSON.stringify(b)}`);
  return b[0];
}
/// The bill's token counts that are not zero / false (plus prompt and completion).
function countsOf(bill) {
  const out = {};
  for (const [k, v] of Object.entries(bill)) {
    if (['model', 'family', 'stream', 'outcome', 'service_tier', 'request_id', 'response_id', 'client_call_id'].includes(k)) continue;
    if (v || k === 'prompt_tokens' || k === 'completion_tokens') out[k] = v;
  }
  return out;
}


const PDF_3_PAGES = Buffer.from([
  '%PDF-1.4',
  '1 0 obj << /Type /Catalog /Pages 2 0 R /Outlines 6 0 R >> endobj',
  '2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >> endobj',
  '3 0 obj << /Type /Page /Parent 2 0 R >> endobj',
  '4 0 obj << /Type /Page /Parent 2 0 R >> endobj',
  '5 0 obj << /Type /Page /Parent 2 0 R >> endobj',
  '6 0 obj << /Type /Outlines /Count 40 >> endobj',
  'trailer << /Root 1 0 R >>', '%%EOF', '',
].join('\n'), 'latin1');
// No usable /Count: the /Type /Page objects are counted (/Pages excluded).
const PDF_2_PAGE_OBJECTS = Buffer.from('%PDF-1.3\n1 0 obj<</Type/Pages/Kids[2 0 R 3 0 R]>>endobj\n2 0 obj<</Type/Page>>endobj\n3 0 obj<</Type /Page/Parent 1 0 R>>endobj\n%%EOF\n', 'latin1');

const oaImage = (url, detail) => ({ type: 'image_url', image_url: detail ? { url, detail } : { url } });
const oaUser = (...parts) => [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...parts] }];
const P_LOOK = promptOf('look');
const anImage = (type, buf) => ({ type: 'image', source: { type: 'base64', media_type: type, data: b64(buf) } });
const anUser = (...parts) => [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...parts] }];

// ---------------------------------------------------------------- 1. output length

e2e('ignore_max_tokens: the desired count is generated and billed past the cap, finish stop', async () => {
  const r = await post(OPENAI, oa({ max_tokens: 5 }), { behavior: { completion_tokens: 12, ignore_max_tokens: true } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].finish_reason, 'stop');
  assert.equal(r.json.choices[0].message.content.split(' ').length, 12);
  assert.equal(r.json.usage.completion_tokens, 12);
  const a = await post(ANTHROPIC, an({ max_tokens: 3 }), { behavior: { content: 'one two three four five six', ignore_max_tokens: true } });
  assert.equal(a.json.stop_reason, 'end_turn');
  assert.equal(a.json.usage.output_tokens, 6);
  const b = await bills();
  assert.deepEqual(b.map((x) => x.completion_tokens), [12, 6]);
});

e2e('fill_max_tokens: exactly the cap per choice (length); without a cap completion_tokens', async () => {
  let r = await post(OPENAI, oa({ max_completion_tokens: 7, max_tokens: 99, n: 2 }), { behavior: { fill_max_tokens: true, completion_tokens: 2 } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.choices.map((c) => c.finish_reason), ['length', 'length']);
  assert.equal(r.json.choices[1].message.content.split(' ').length, 7);
  assert.equal(r.json.usage.completion_tokens, 14);
  r = await post(OPENAI, oa(), { behavior: { fill_max_tokens: true } });
  assert.equal(r.json.usage.completion_tokens, 16);
  assert.equal(r.json.choices[0].finish_reason, 'length');
  r = await post(OPENAI, oa(), { behavior: { fill_max_tokens: true, completion_tokens: 5 } });
  assert.equal(r.json.usage.completion_tokens, 5);
  const a = await stream(ANTHROPIC, an({ max_tokens: 9 }), { behavior: { fill_max_tokens: true, completion_tokens: 1 } });
  assert.equal(anthropicTextEvents(a.events).length, 9);
  const delta = a.events.find((e) => e.event === 'message_delta').json;
  assert.equal(delta.delta.stop_reason, 'max_tokens');
  assert.equal(delta.usage.output_tokens, 9);
  // The safety limit stays: tokens x choices <= 1,000,000.
  r = await post(OPENAI, oa({ max_tokens: 5_000_000, n: 4 }), { behavior: { fill_max_tokens: true } });
  assert.equal(r.json.usage.completion_tokens, 1_000_000);
  assert.deepEqual((await bills()).map((x) => x.completion_tokens), [14, 16, 5, 9, 1_000_000]);
  // Both at once is contradictory.
  r = await post(OPENAI, oa(), { behavior: { fill_max_tokens: true, ignore_max_tokens: true } });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /ignore_max_tokens.*fill_max_tokens/);
}, { timeout: 60000 });

// ---------------------------------------------------------------- 2. reasoning

e2e('reasoning_tokens (OpenAI): inside completion_tokens and bounded with the visible tokens by the cap', async () => {
  let r = await post(OPENAI, oa(), { behavior: { completion_tokens: 8, reasoning_tokens: 5 } });
  assert.equal(r.json.usage.completion_tokens, 13);
  assert.equal(r.json.usage.completion_tokens_details.reasoning_tokens, 5);
  assert.equal(r.json.usage.total_tokens, P_HELLO + 13);
  assert.equal(r.json.choices[0].message.content.split(' ').length, 8);
  r = await post(OPENAI, oa({ max_completion_tokens: 10 }), { behavior: { completion_tokens: 8, reasoning_tokens: 6 } });
  assert.equal(r.json.choices[0].finish_reason, 'length');
  assert.equal(r.json.choices[0].message.content.split(' ').length, 4);
  assert.equal(r.json.usage.completion_tokens, 10);
  assert.equal(r.json.usage.completion_tokens_details.reasoning_tokens, 6);
  r = await post(OPENAI, oa({ max_completion_tokens: 10 }), { behavior: { reasoning_tokens: 25 } });
  assert.equal(r.json.choices[0].finish_reason, 'length');
  assert.equal(r.json.choices[0].message.content, '');
  assert.equal(r.json.usage.completion_tokens, 10);
  assert.equal(r.json.usage.completion_tokens_details.reasoning_tokens, 10);
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.completion_tokens, x.reasoning_tokens, x.reasoning_outside]), [[13, 5, false], [10, 6, false], [10, 10, false]]);
});

e2e('reasoning_outside (xAI): completion_tokens excludes reasoning, total and bill include it', async () => {
  const r = await post(OPENAI, oa(), { behavior: { completion_tokens: 8, reasoning_tokens: 5, reasoning_outside: true } });
  assert.equal(r.json.usage.completion_tokens, 8);
  assert.equal(r.json.usage.completion_tokens_details.reasoning_tokens, 5);
  assert.equal(r.json.usage.total_tokens, P_HELLO + 13);
  const s = await stream(OPENAI, oa({ stream_options: { include_usage: true } }), { behavior: { completion_tokens: 8, reasoning_tokens: 5, reasoning_outside: true } });
  const u = openaiUsageChunk(s.events).json.usage;
  assert.deepEqual([u.completion_tokens, u.completion_tokens_details.reasoning_tokens, u.total_tokens], [8, 5, P_HELLO + 13]);
  const stats = await state.mock.stats();
  assert.deepEqual(stats.bills.map((x) => [x.completion_tokens, x.reasoning_tokens, x.reasoning_outside]), [[13, 5, true], [13, 5, true]]);
  assert.equal(stats.models['gpt-bill'].completion_tokens, 26);
  assert.equal(stats.models['gpt-bill'].reasoning_tokens, 10);
  assert.equal(stats.totals.completion_tokens, 26);
});

e2e('reasoning_tokens (Anthropic): thinking is part of output_tokens, max_tokens bounds both', async () => {
  let r = await post(ANTHROPIC, an(), { behavior: { completion_tokens: 4, reasoning_tokens: 30 } });
  assert.equal(r.json.usage.output_tokens, 34);
  r = await post(ANTHROPIC, an({ max_tokens: 32 }), { behavior: { completion_tokens: 4, reasoning_tokens: 30, reasoning_outside: true } });
  assert.equal(r.json.stop_reason, 'max_tokens');
  assert.equal(r.json.content[0].text.split(' ').length, 2);
  assert.equal(r.json.usage.output_tokens, 32);
  const s = await stream(ANTHROPIC, an(), { behavior: { completion_tokens: 3, reasoning_tokens: 7 } });
  assert.equal(s.events.find((e) => e.event === 'message_delta').json.usage.output_tokens, 10);
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.completion_tokens, x.reasoning_tokens, x.reasoning_outside]), [[34, 30, false], [32, 30, false], [10, 7, false]]);
});

// ---------------------------------------------------------------- 3. prompt cache

e2e('cache_write_tokens / cache_write_1h_tokens (Anthropic): usage split, bill, 400 when they exceed the prompt', async () => {
  const body = an({ messages: [{ role: 'user', content: 'x'.repeat(400) }] }); // 104 tokens
  let r = await post(ANTHROPIC, body, { behavior: { cached_tokens: 10, cache_write_tokens: 20, cache_write_1h_tokens: 30 } });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.usage, {
    input_tokens: 44, cache_creation_input_tokens: 50, cache_read_input_tokens: 10,
    cache_creation: { ephemeral_5m_input_tokens: 20, ephemeral_1h_input_tokens: 30 },
    output_tokens: 16, service_tier: 'standard',
  });
  const s = await stream(ANTHROPIC, body, { behavior: { cache_write_tokens: 104 } });
  const start = s.events.find((e) => e.event === 'message_start').json.message.usage;
  assert.deepEqual([start.input_tokens, start.cache_creation_input_tokens, start.cache_creation.ephemeral_5m_input_tokens], [0, 104, 104]);
  r = await post(ANTHROPIC, body, { behavior: { cached_tokens: 100, cache_write_tokens: 5 } });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.type, 'invalid_request_error');
  assert.match(r.json.error.message, /^tollgate-mock: .*cache_write_tokens.*exceed the prompt \(104 tokens\)/);
  // The OpenAI family has no cache-write report: the fields are ignored there.
  const o = await post(OPENAI, oa(), { behavior: { cache_write_tokens: 3, cache_write_1h_tokens: 2, cached_tokens: 2 } });
  assert.equal(o.status, 200);
  assert.equal(o.json.usage.prompt_tokens, P_HELLO);
  assert.equal(o.json.usage.prompt_tokens_details.cached_tokens, 2);
  const b = await bills();
  assert.deepEqual(b.map(countsOf), [
    { prompt_tokens: 104, completion_tokens: 16, cached_tokens: 10, cache_write_tokens: 20, cache_write_1h_tokens: 30 },
    { prompt_tokens: 104, completion_tokens: 16, cache_write_tokens: 104 },
    { prompt_tokens: P_HELLO, completion_tokens: 16, cached_tokens: 2 },
  ]);
  const stats = await state.mock.stats();
  assert.equal(stats.models['claude-bill'].cache_write_tokens, 124);
  assert.equal(stats.models['claude-bill'].cache_write_1h_tokens, 30);
  assert.equal(stats.models['claude-bill'].failed, 1);
});

e2e('cache_control in the request (Anthropic): the prefix up to the last marked block is written with its TTL', async () => {
  const sys = 'You are a careful assistant.'; // 28 bytes
  const doc = 'd'.repeat(100);
  const question = 'What does the document say?';
  const body = an({
    system: [{ type: 'text', text: sys, cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: doc, cache_control: { type: 'ephemeral', ttl: '1h' } }, { type: 'text', text: question }] },
    ],
  });
  const prompt = promptOf(sys) + promptOf(doc + question);
  const prefix = promptOf(sys) + promptOf(doc);
  let r = await post(ANTHROPIC, body);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.json.usage.input_tokens, r.json.usage.cache_creation_input_tokens, r.json.usage.cache_creation],
    [prompt - prefix, prefix, { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: prefix }]);
  // Only the system block marked (default TTL 5m).
  const body5m = an({ system: [{ type: 'text', text: sys, cache_control: { type: 'ephemeral' } }], messages: [{ role: 'user', content: question }] });
  r = await post(ANTHROPIC, body5m);
  assert.deepEqual(r.json.usage.cache_creation, { ephemeral_5m_input_tokens: promptOf(sys), ephemeral_1h_input_tokens: 0 });
  assert.equal(r.json.usage.input_tokens, promptOf(question));
  // Behaviour fields win over the marks; an unmarked request writes nothing.
  r = await post(ANTHROPIC, body, { behavior: { cache_write_tokens: 1 } });
  assert.deepEqual(r.json.usage.cache_creation, { ephemeral_5m_input_tokens: 1, ephemeral_1h_input_tokens: 0 });
  r = await post(ANTHROPIC, an());
  assert.equal(r.json.usage.cache_creation_input_tokens, 0);
  // The OpenAI family ignores cache_control.
  const o = await post(OPENAI, oa({ messages: [{ role: 'user', content: [{ type: 'text', text: doc, cache_control: { type: 'ephemeral' } }] }] }));
  assert.equal(o.json.usage.prompt_tokens, promptOf(doc));
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.cache_write_tokens, x.cache_write_1h_tokens]), [[0, prefix], [promptOf(sys), 0], [1, 0], [0, 0], [0, 0]]);
});

// ---------------------------------------------------------------- 4. service tier

e2e('service_tier: OpenAI echo (auto and absent -> default), forced by the behaviour; Anthropic standard/priority', async () => {
  const tier = async (body, behavior) => (await post(OPENAI, oa(body), { behavior })).json.service_tier;
  assert.equal(await tier({}), 'default');
  assert.equal(await tier({ service_tier: 'auto' }), 'default');
  assert.equal(await tier({ service_tier: 'flex' }), 'flex');
  assert.equal(await tier({ service_tier: 'flex' }, { service_tier: 'priority' }), 'priority');
  const s = await stream(OPENAI, oa({ service_tier: 'priority', stream_options: { include_usage: true } }));
  assert.ok(s.events.length > 3);
  for (const e of s.events.filter((x) => x.json)) assert.equal(e.json.service_tier, 'priority');
  const bad = await post(OPENAI, oa({ service_tier: 5 }));
  assert.equal(bad.status, 400);
  assert.match(bad.json.error.message, /service_tier/);

  const atier = async (body, behavior) => (await post(ANTHROPIC, an(body), { behavior })).json.usage.service_tier;
  assert.equal(await atier({}), 'standard');
  assert.equal(await atier({ service_tier: 'auto' }), 'standard');
  assert.equal(await atier({ service_tier: 'priority' }), 'priority');
  assert.equal(await atier({}, { service_tier: 'priority' }), 'priority');
  const as = await stream(ANTHROPIC, an(), { behavior: { service_tier: 'priority' } });
  assert.equal(as.events.find((e) => e.event === 'message_start').json.message.usage.service_tier, 'priority');

  const stats = await state.mock.stats();
  assert.deepEqual(stats.models['gpt-bill'].service_tiers, { default: 2, flex: 1, priority: 2 });
  assert.deepEqual(stats.models['claude-bill'].service_tiers, { standard: 2, priority: 3 });
  assert.deepEqual(stats.totals.service_tiers, { default: 2, flex: 1, priority: 5, standard: 2 });
  assert.deepEqual(stats.bills.map((b) => b.service_tier),
    ['default', 'default', 'flex', 'priority', 'priority', 'standard', 'standard', 'priority', 'priority', 'priority']);
});

// ---------------------------------------------------------------- 5. audio, predictions, web search

e2e('audio, prediction and web-search counts: reported where each family reports them, billed', async () => {
  const behavior = {
    completion_tokens: 5, audio_input_tokens: 10, audio_output_tokens: 7,
    rejected_prediction_tokens: 3, accepted_prediction_tokens: 2, web_search_calls: 4,
  };
  const r = await post(OPENAI, oa(), { behavior });
  assert.deepEqual(r.json.usage, {
    prompt_tokens: P_HELLO + 10, completion_tokens: 15, total_tokens: P_HELLO + 25,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 10 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 7, accepted_prediction_tokens: 2, rejected_prediction_tokens: 3 },
  });
  // With a prompt_tokens override the audio is a part of it (and must fit).
  const o = await post(OPENAI, oa(), { behavior: { prompt_tokens: 50, audio_input_tokens: 20 } });
  assert.deepEqual([o.json.usage.prompt_tokens, o.json.usage.prompt_tokens_details.audio_tokens], [50, 20]);
  const tooMuch = await post(OPENAI, oa(), { behavior: { prompt_tokens: 5, audio_input_tokens: 20 } });
  assert.equal(tooMuch.status, 400);
  assert.match(tooMuch.json.error.message, /audio_input_tokens/);
  const a = await post(ANTHROPIC, an(), { behavior });
  assert.equal(a.json.usage.output_tokens, 5);
  assert.equal(a.json.usage.input_tokens, P_HELLO);
  assert.deepEqual(a.json.usage.server_tool_use, { web_search_requests: 4 });
  const as = await stream(ANTHROPIC, an(), { behavior: { web_search_calls: 1 } });
  assert.deepEqual(as.events.find((e) => e.event === 'message_delta').json.usage.server_tool_use, { web_search_requests: 1 });
  const b = await bills();
  assert.deepEqual(b.map(countsOf), [
    { prompt_tokens: P_HELLO + 10, completion_tokens: 15, audio_input_tokens: 10, audio_output_tokens: 7, accepted_prediction_tokens: 2, rejected_prediction_tokens: 3 },
    { prompt_tokens: 50, completion_tokens: 16, audio_input_tokens: 20 },
    { prompt_tokens: P_HELLO, completion_tokens: 5, web_search_calls: 4 },
    { prompt_tokens: P_HELLO, completion_tokens: 16, web_search_calls: 1 },
  ]);
});

// ---------------------------------------------------------------- 6. images and PDFs

e2e('OpenAI images: sizes read from PNG/JPEG/GIF/WebP headers, GPT-4o tile formula, low detail, unknown, override', async () => {
  const cases = [
    ['png 2048x4096', oaImage(dataUrl('image/png', png(2048, 4096))), 1105],
    ['png 512x512 auto', oaImage(dataUrl('image/png', png(512, 512)), 'auto'), 255],
    ['png low detail', oaImage(dataUrl('image/png', png(4000, 4000)), 'low'), 85],
    ['jpeg 1000x500 (SOF after APPn segments)', oaImage(dataUrl('image/jpeg', jpeg(1000, 500)), 'high'), 425],
    ['gif 300x100', oaImage(dataUrl('image/gif', gif(300, 100))), 255],
    ['webp VP8 300x1100', oaImage(dataUrl('image/webp', webp('VP8 ', 300, 1100))), 595],
    ['webp VP8L 1100x600', oaImage(dataUrl('image/webp', webp('VP8L', 1100, 600))), 1105],
    ['webp VP8X 2500x1000 (2048 fit, then 768 short side)', oaImage(dataUrl('image/webp', webp('VP8X', 2500, 1000))), 1445],
    ['https URL', oaImage('https://example.com/cat.png'), 765],
    ['garbage data', oaImage('data:image/png;base64,%%%not*base64!!!'), 765],
    ['truncated png', oaImage(dataUrl('image/png', png(10, 10).subarray(0, 12))), 765],
  ];
  for (const [name, part, tokens] of cases) {
    const r = await post(OPENAI, oa({ messages: oaUser(part) }));
    assert.equal(r.status, 200, `${name}: ${r.text}`);
    assert.equal(r.json.usage.prompt_tokens, P_LOOK + tokens, name);
  }
  // Two images and an override.
  const two = oaUser(oaImage(dataUrl('image/png', png(512, 512))), oaImage('http://x/y.jpg', 'low'));
  let r = await post(OPENAI, oa({ messages: two }));
  assert.equal(r.json.usage.prompt_tokens, P_LOOK + 255 + 85);
  r = await post(OPENAI, oa({ messages: two }), { behavior: { image_tokens: 1000 } });
  assert.equal(r.json.usage.prompt_tokens, P_LOOK + 2000);
  const b = await bills();
  assert.deepEqual(b.map((x) => x.image_input_tokens), [...cases.map((c) => c[2]), 340, 2000]);
  assert.equal((await state.mock.stats()).models['gpt-bill'].image_input_tokens, cases.reduce((n, c) => n + c[2], 0) + 2340);
});

e2e('Anthropic images: 1568 px long edge, ceil(w*h/750), at most 1600 (~1.15 MP); URL sources 1600', async () => {
  const cases = [
    ['png 1000x1000', anImage('image/png', png(1000, 1000)), 1334],
    ['png 3136x1000 scaled to 1568x500', anImage('image/png', png(3136, 1000)), 1046],
    ['jpeg 200x1000', anImage('image/jpeg', jpeg(200, 1000)), 267],
    ['webp VP8X 1568x1568', anImage('image/webp', webp('VP8X', 1568, 1568)), 1600], // ceil(1568² / 750) = 3279, scaled to ~1.15 MP,
    ['url', { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }, 1600],
    ['garbage', { type: 'image', source: { type: 'base64', media_type: 'image/png', data: '***' } }, 1600],
  ];
  for (const [name, part, tokens] of cases) {
    const r = await post(ANTHROPIC, an({ messages: anUser(part) }));
    assert.equal(r.status, 200, `${name}: ${r.text}`);
    assert.equal(r.json.usage.input_tokens, P_LOOK + tokens, name);
  }
  // Images in a tool result are counted too; image_tokens overrides.
  const nested = [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [anImage('image/gif', gif(750, 1))] }] }];
  let r = await post(ANTHROPIC, an({ messages: nested }));
  assert.equal(r.json.usage.input_tokens, 4 + 1);
  r = await post(ANTHROPIC, an({ messages: nested }), { behavior: { image_tokens: 77 } });
  assert.equal(r.json.usage.input_tokens, 4 + 77);
  const b = await bills();
  assert.deepEqual(b.map((x) => x.image_input_tokens), [...cases.map((c) => c[2]), 1, 77]);
});

e2e('PDFs: pages counted (/Count of /Pages, else /Page objects), pdf_tokens_per_page, both families', async () => {
  const oaFile = (buf) => ({ type: 'file', file: { filename: 'a.pdf', file_data: dataUrl('application/pdf', buf) } });
  const anDoc = (buf) => ({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: b64(buf) } });
  let r = await post(OPENAI, oa({ messages: oaUser(oaFile(PDF_3_PAGES)) }));
  assert.equal(r.json.usage.prompt_tokens, P_LOOK + 3 * 2000);
  r = await post(OPENAI, oa({ messages: oaUser(oaFile(PDF_2_PAGE_OBJECTS)) }), { behavior: { pdf_tokens_per_page: 100 } });
  assert.equal(r.json.usage.prompt_tokens, P_LOOK + 200);
  r = await post(OPENAI, oa({ messages: oaUser({ type: 'file', file: { file_id: 'file-abc' } }) }));
  assert.equal(r.json.usage.prompt_tokens, P_LOOK);
  r = await post(ANTHROPIC, an({ messages: anUser(anDoc(PDF_3_PAGES)) }), { behavior: { pdf_tokens_per_page: 1500 } });
  assert.equal(r.json.usage.input_tokens, P_LOOK + 4500);
  r = await post(ANTHROPIC, an({ messages: anUser(anDoc(PDF_2_PAGE_OBJECTS), anImage('image/png', png(750, 1))) }));
  assert.equal(r.json.usage.input_tokens, P_LOOK + 4000 + 1);
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.pdf_pages, x.pdf_input_tokens]), [[3, 6000], [2, 200], [0, 0], [3, 4500], [2, 4000]]);
  const stats = await state.mock.stats();
  assert.equal(stats.totals.pdf_pages, 10);
  assert.equal(stats.models['claude-bill'].pdf_input_tokens, 8500);
});

e2e('garbage media never crash the mock: invalid base64, random bytes, huge header values', async () => {
  const junk = Buffer.alloc(200_000);
  for (let i = 0; i < junk.length; i++) junk[i] = (i * 7919 + 13) & 0xff;
  const hugePng = png(0xffffffff, 0xffffffff);
  const endlessJpeg = Buffer.concat([Buffer.from([0xff, 0xd8]), Buffer.alloc(1000, 0xff)]);
  const badLenJpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x00, 0xff, 0xc0]);
  const parts = [
    oaImage('data:image/png;base64,' + '='.repeat(1000)),
    oaImage('data:image/png;base64,QQ=QQ'),
    oaImage('data:image/png;base64,Q'),
    oaImage('data:;base64,'),
    oaImage('data:image/png,notbase64'),
    oaImage(dataUrl('image/png', junk)),
    oaImage(dataUrl('image/png', hugePng)),
    oaImage(dataUrl('image/jpeg', endlessJpeg)),
    oaImage(dataUrl('image/jpeg', badLenJpeg)),
    oaImage(dataUrl('image/webp', Buffer.from('RIFF\0\0\0\0WEBPVP8X'))),
    { type: 'image_url', image_url: 42 },
    { type: 'image_url' },
    { type: 'file', file: { file_data: 'data:application/pdf;base64,@@@@' } },
    { type: 'file', file: { file_data: dataUrl('application/pdf', junk) } },
    { type: 'file', file: { file_data: dataUrl('application/pdf', Buffer.from('/Type /Pages /Count 99999999999999999999999 endobj')) } },
  ];
  const r = await post(OPENAI, oa({ messages: oaUser(...parts) }));
  assert.equal(r.status, 200, r.text);
  // 12 unreadable images at 765 each (the huge PNG too); the PDFs: 0, 0 and the capped count.
  const bill = await onlyBill();
  assert.equal(bill.image_input_tokens, 765 * 12);
  assert.equal(bill.pdf_pages, 1_000_000);
  const a = await post(ANTHROPIC, an({
    messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', data: null } },
      { type: 'image', source: 'x' },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: '\n\n\t  ' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64(junk) } },
    ] }],
  }));
  assert.equal(a.status, 200, a.text);
  assert.equal(a.json.usage.input_tokens, 4 + 3 * 1600);
  assert.equal((await fetch(state.mock.url + '/health')).status, 200);
});

// ---------------------------------------------------------------- 7. usage styles

e2e('usage_style (OpenAI): omit, null, every_chunk, with_finish, string_counts', async () => {
  const body = oa({ stream_options: { include_usage: true } });
  const behavior = (style) => ({ completion_tokens: 3, usage_style: style });

  let r = await post(OPENAI, oa(), { behavior: behavior('omit') });
  assert.equal('usage' in r.json, false);
  let s = await stream(OPENAI, body, { behavior: behavior('omit') });
  assert.ok(s.events.every((e) => !e.json || !('usage' in e.json)), 'no usage key on any chunk');
  assert.equal(openaiUsageChunk(s.events), undefined);
  assert.equal(s.events.at(-1).data, '[DONE]');

  r = await post(OPENAI, oa(), { behavior: behavior('null') });
  assert.equal(r.json.usage, null);
  s = await stream(OPENAI, oa(), { behavior: behavior('null') });
  assert.ok(s.events.filter((e) => e.json).every((e) => e.json.usage === null));
  assert.equal(openaiUsageChunk(s.events), undefined);

  s = await stream(OPENAI, body, { behavior: { ...behavior('every_chunk'), reasoning_tokens: 2 } });
  const chunks = s.events.filter((e) => e.json);
  assert.deepEqual(chunks.map((e) => e.json.usage.completion_tokens), [2, 3, 4, 5, 5, 5]);
  assert.ok(chunks.every((e) => e.json.usage.prompt_tokens === P_HELLO));
  assert.equal(openaiUsageChunk(s.events).json.usage.total_tokens, P_HELLO + 5);

  s = await stream(OPENAI, oa({ n: 2 }), { behavior: behavior('with_finish') });
  const finishes = s.events.filter((e) => e.json?.choices?.[0]?.finish_reason);
  assert.equal(finishes.length, 2);
  assert.equal(finishes[0].json.usage, undefined);
  assert.deepEqual([finishes[1].json.usage.completion_tokens, finishes[1].json.usage.prompt_tokens], [6, P_HELLO]);
  assert.equal(openaiUsageChunk(s.events), undefined, 'no usage-only chunk');

  r = await post(OPENAI, oa(), { behavior: behavior('string_counts') });
  assert.equal(r.json.usage.prompt_tokens, String(P_HELLO));
  assert.equal(r.json.usage.completion_tokens, '3');
  assert.equal(r.json.usage.prompt_tokens_details.cached_tokens, '0');
  s = await stream(OPENAI, body, { behavior: behavior('string_counts') });
  assert.equal(openaiUsageChunk(s.events).json.usage.total_tokens, String(P_HELLO + 3));

  r = await post(OPENAI, oa(), { behavior: behavior('normal') });
  assert.equal(r.json.usage.completion_tokens, 3);
  // The bill does not depend on how usage is reported.
  const b = await bills();
  assert.deepEqual(b.map((x) => x.completion_tokens), [3, 3, 3, 3, 5, 6, 3, 3, 3]);
});

e2e('usage (verbatim): reported as given in bodies, usage chunks and Anthropic events; the bill keeps the counted usage', async () => {
  const odd = { prompt_tokens: 10, completion_tokens: 5.0, total_tokens: 15, prompt_tokens_details: { cached_tokens: 50 } };
  const r = await post(OPENAI, oa(), { behavior: { completion_tokens: 3, usage: odd } });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.usage, odd);
  const s = await stream(OPENAI, oa({ stream_options: { include_usage: true } }), { behavior: { completion_tokens: 3, usage: odd } });
  assert.deepEqual(openaiUsageChunk(s.events).json.usage, odd);
  const every = await stream(OPENAI, oa({ stream_options: { include_usage: true } }),
    { behavior: { completion_tokens: 3, usage: odd, usage_style: 'every_chunk' } });
  assert.ok(every.events.filter((e) => e.json).every((e) => JSON.stringify(e.json.usage) === JSON.stringify(odd)));
  // As a model directive: the object's text, percent-encoded.
  const directive = await post(OPENAI, oa({ model: `gpt-bill?usage=${encodeURIComponent('{"prompt_tokens":-3}')}` }));
  assert.deepEqual(directive.json.usage, { prompt_tokens: -3 });
  const anth = { input_tokens: 10, cache_read_input_tokens: 99, output_tokens: 7 };
  const a = await post(ANTHROPIC, an(), { behavior: { completion_tokens: 3, usage: anth } });
  assert.deepEqual(a.json.usage, anth);
  const as = await stream(ANTHROPIC, an(), { behavior: { completion_tokens: 3, usage: anth } });
  assert.deepEqual(as.events.find((e) => e.event === 'message_start').json.message.usage, anth);
  assert.deepEqual(as.events.find((e) => e.event === 'message_delta').json.usage, anth);
  const bad = await post(OPENAI, oa(), { behavior: { usage: [1] } });
  assert.equal(bad.status, 400);
  assert.match(bad.json.error.message, /usage/);
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.prompt_tokens, x.completion_tokens, x.cached_tokens]),
    [[P_HELLO, 3, 0], [P_HELLO, 3, 0], [P_HELLO, 3, 0], [P_HELLO, 16, 0], [P_HELLO, 3, 0], [P_HELLO, 3, 0]]);
});

e2e('usage_style (Anthropic): omit drops usage from message_start, message_delta and the body; null and string_counts', async () => {
  let r = await post(ANTHROPIC, an(), { behavior: { usage_style: 'omit' } });
  assert.equal('usage' in r.json, false);
  let s = await stream(ANTHROPIC, an(), { behavior: { usage_style: 'omit' } });
  assert.equal('usage' in s.events.find((e) => e.event === 'message_start').json.message, false);
  assert.equal('usage' in s.events.find((e) => e.event === 'message_delta').json, false);
  assert.equal(s.events.at(-1).event, 'message_stop');
  r = await post(ANTHROPIC, an(), { behavior: { usage_style: 'null' } });
  assert.equal(r.json.usage, null);
  r = await post(ANTHROPIC, an(), { behavior: { usage_style: 'string_counts', completion_tokens: 2 } });
  assert.deepEqual([r.json.usage.input_tokens, r.json.usage.output_tokens], [String(P_HELLO), '2']);
  s = await stream(ANTHROPIC, an(), { behavior: { usage_style: 'every_chunk', completion_tokens: 2 } });
  assert.equal(s.events.find((e) => e.event === 'message_delta').json.usage.output_tokens, 2);
  assert.deepEqual((await bills()).map((x) => x.completion_tokens), [16, 16, 16, 2, 2]);
});

// ---------------------------------------------------------------- 8. stream faults

e2e('fault no_done: complete stream with its usage, no [DONE] / message_stop, closed cleanly', async () => {
  const s = await stream(OPENAI, oa({ stream_options: { include_usage: true } }), { behavior: { fault: 'no_done', completion_tokens: 4 } });
  assert.equal(s.error, null);
  assert.equal(contentEvents(s.events).length, 4);
  assert.equal(openaiUsageChunk(s.events).json.usage.completion_tokens, 4);
  assert.ok(!s.text.includes('[DONE]'));
  const a = await stream(ANTHROPIC, an(), { behavior: { fault: 'no_done', completion_tokens: 4 } });
  assert.equal(a.error, null);
  assert.equal(a.events.at(-1).event, 'message_delta');
  assert.ok(!a.events.some((e) => e.event === 'message_stop'));
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.outcome, x.completion_tokens, x.stream]), [['succeeded', 4, true], ['succeeded', 4, true]]);
});

e2e('fault truncate_before_usage: every token and the finish, then the connection closes', async () => {
  const s = await stream(OPENAI, oa({ stream_options: { include_usage: true } }), { behavior: { fault: 'truncate_before_usage', completion_tokens: 5 } });
  assert.ok(s.error, 'the body ends abruptly');
  assert.equal(contentEvents(s.events).length, 5);
  assert.equal(s.events.at(-1).json.choices[0].finish_reason, 'stop');
  assert.equal(openaiUsageChunk(s.events), undefined);
  assert.ok(!s.text.includes('[DONE]'));
  const a = await stream(ANTHROPIC, an(), { behavior: { fault: 'truncate_before_usage', completion_tokens: 5 } });
  assert.ok(a.error);
  assert.equal(anthropicTextEvents(a.events).length, 5);
  assert.equal(a.events.at(-1).event, 'content_block_stop');
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.outcome, x.prompt_tokens, x.completion_tokens]), [['failed', P_HELLO, 5], ['failed', P_HELLO, 5]]);
});

e2e('fault malformed_event: one non-JSON event mid-stream, the rest as usual', async () => {
  const s = await stream(OPENAI, oa({ stream_options: { include_usage: true } }), { behavior: { fault: 'malformed_event', completion_tokens: 6 } });
  const bad = s.events.filter((e) => e.data !== '[DONE]' && e.json === undefined);
  assert.deepEqual(bad.map((e) => e.data), ['{not json']);
  const idx = s.events.indexOf(bad[0]);
  assert.equal(contentEvents(s.events.slice(0, idx)).length, 3, 'in the middle');
  assert.equal(contentEvents(s.events).length, 6);
  assert.equal(s.events.at(-1).data, '[DONE]');
  const a = await stream(ANTHROPIC, an(), { behavior: { fault: 'malformed_event', completion_tokens: 6 } });
  assert.deepEqual(a.events.filter((e) => e.json === undefined).map((e) => [e.event, e.data]), [['content_block_delta', '{not json']]);
  assert.equal(a.events.at(-1).event, 'message_stop');
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.outcome, x.completion_tokens]), [['succeeded', 6], ['succeeded', 6]]);
});

e2e('fault stall: K tokens then silence until the client closes; cancelled, billed prompt + K', async () => {
  // Read 3 tokens, wait to see nothing more arrives, then abort.
  const ctl = new AbortController();
  const res = await fetch(state.mock.url + OPENAI, {
    method: 'POST', signal: ctl.signal,
    headers: { 'content-type': 'application/json', 'x-mock-behavior': JSON.stringify({ fault: 'stall', stall_after_tokens: 3, completion_tokens: 10, bill_on_cancel: true }) },
    body: JSON.stringify(oa({ model: 'gpt-stall', stream: true })),
  });
  const reader = res.body.getReader();
  let text = '';
  const dec = new TextDecoder();
  while (contentEvents(parseSse(text)).length < 3) text += dec.decode((await reader.read()).value, { stream: true });
  const more = await Promise.race([reader.read().then(() => 'data'), sleep(400).then(() => 'silence')]);
  assert.equal(more, 'silence');
  assert.equal(contentEvents(parseSse(text)).length, 3);
  ctl.abort();
  const m = await waitFor(async () => {
    const st = await state.mock.stats();
    return st.models['gpt-stall']?.cancelled === 1 && st;
  }, { what: 'the stalled stream counted cancelled' });
  const bill = m.bills.find((x) => x.model === 'gpt-stall');
  assert.deepEqual([bill.outcome, bill.prompt_tokens, bill.completion_tokens], ['cancelled', P_HELLO, 3]);
});

e2e('fault truncate with truncate_after_tokens: K token events, then the connection closes; billed prompt + K', async () => {
  const s = await stream(OPENAI, oa(), { behavior: { fault: 'truncate', truncate_after_tokens: 4, completion_tokens: 10 } });
  assert.ok(s.error);
  assert.equal(contentEvents(s.events).length, 4);
  const half = await stream(ANTHROPIC, an(), { behavior: { fault: 'truncate', completion_tokens: 10 } });
  assert.equal(anthropicTextEvents(half.events).length, 5, 'default: half');
  const b = await bills();
  assert.deepEqual(b.map((x) => [x.outcome, x.completion_tokens]), [['failed', 4], ['failed', 5]]);
});

// ---------------------------------------------------------------- 9. non-clean 2xx answers

e2e('garbage, non-streaming truncate and oversized bill the whole completion; hang bills nothing', async () => {
  let r = await post(OPENAI, oa(), { behavior: { fault: 'garbage', completion_tokens: 9 } });
  assert.equal(r.status, 200);
  assert.equal(r.json, undefined);
  r = await post(OPENAI, oa({ stream: true }), { behavior: { fault: 'garbage', completion_tokens: 9 } });
  assert.equal(r.json, undefined);
  r = await post(ANTHROPIC, an(), { behavior: { fault: 'truncate', completion_tokens: 9 } });
  assert.ok(r.error, 'half the body, then closed');
  // Oversized: abandoned after the headers, billed anyway.
  const ctl = new AbortController();
  const res = await fetch(state.mock.url + OPENAI, {
    method: 'POST', signal: ctl.signal,
    headers: { 'content-type': 'application/json', 'x-mock-behavior': JSON.stringify({ fault: 'oversized', completion_tokens: 9 }) },
    body: JSON.stringify(oa()),
  });
  assert.equal(res.status, 200);
  ctl.abort();
  await waitFor(async () => (await state.mock.stats()).models['gpt-bill'].cancelled === 1, { what: 'oversized cancelled' });
  // Hang: nothing generated, nothing billed.
  const hang = new AbortController();
  const p = fetch(state.mock.url + OPENAI, {
    method: 'POST', signal: hang.signal,
    headers: { 'content-type': 'application/json', 'x-mock-behavior': JSON.stringify({ fault: 'hang', bill_on_cancel: true }) },
    body: JSON.stringify(oa({ model: 'gpt-hang' })),
  }).catch((e) => e);
  await sleep(200);
  hang.abort();
  await p;
  const st = await waitFor(async () => {
    const x = await state.mock.stats();
    return x.models['gpt-hang']?.cancelled === 1 && x;
  }, { what: 'hang cancelled' });
  assert.deepEqual(st.bills.map((x) => [x.model, x.outcome, x.prompt_tokens, x.completion_tokens]), [
    ['gpt-bill', 'failed', P_HELLO, 9], ['gpt-bill', 'failed', P_HELLO, 9],
    ['claude-bill', 'failed', P_HELLO, 9], ['gpt-bill', 'cancelled', P_HELLO, 9],
  ]);
  assert.equal(st.models['gpt-hang'].prompt_tokens, 0);
}, { timeout: 60000 });

e2e('bill_on_cancel: a request abandoned during latency_ms is billed in full (else 0)', async () => {
  const runs = [['gpt-keep', true], ['gpt-drop', false], ['claude-keep', true],
    ['gpt-error', true, { error: 'server_error' }], ['gpt-reset', true, { fault: 'reset' }]];
  for (const [model, bill_on_cancel, outcome = {}] of runs) {
    const ctl = new AbortController();
    const body = model.startsWith('claude') ? an({ model }) : oa({ model });
    const p = fetch(state.mock.url + (model.startsWith('claude') ? ANTHROPIC : OPENAI), {
      method: 'POST', signal: ctl.signal,
      headers: { 'content-type': 'application/json', 'x-mock-behavior': JSON.stringify({ latency_ms: 5000, completion_tokens: 11, reasoning_tokens: 2, bill_on_cancel, ...outcome }) },
      body: JSON.stringify(body),
    }).catch((e) => e);
    await sleep(150);
    ctl.abort();
    await p;
    await waitFor(async () => (await state.mock.stats()).models[model]?.cancelled === 1, { what: `${model} cancelled` });
  }
  // A paced stream abandoned mid-way: billed in full with bill_on_cancel.
  const s = await stream(OPENAI, oa({ model: 'gpt-stream-keep' }), {
    behavior: { completion_tokens: 50, tokens_per_second: 50, bill_on_cancel: true },
    stopWhen: (events) => contentEvents(events).length >= 2,
  });
  assert.ok(s.aborted);
  const st = await waitFor(async () => {
    const x = await state.mock.stats();
    return x.models['gpt-stream-keep']?.cancelled === 1 && x;
  }, { what: 'stream cancelled' });
  assert.deepEqual(st.bills.map((x) => [x.model, x.outcome, x.prompt_tokens, x.completion_tokens, x.reasoning_tokens]), [
    ['gpt-keep', 'cancelled', P_HELLO, 13, 2], ['claude-keep', 'cancelled', P_HELLO, 13, 2], ['gpt-stream-keep', 'cancelled', P_HELLO, 50, 0],
  ]);
  assert.equal(st.models['gpt-drop'].completion_tokens, 0);
  // A request scripted to fail is never billed, bill_on_cancel or not.
  assert.equal(st.models['gpt-error'].prompt_tokens, 0);
  assert.equal(st.models['gpt-reset'].prompt_tokens, 0);
  assert.equal(st.cancelled_total, 6);
});

// ---------------------------------------------------------------- 10. the bills list

e2e('bills: one entry per billed request with ids, family, stream, tier and counts; totals; reset clears', async () => {
  const r = await post(OPENAI, oa(), { headers: { 'x-litellm-call-id': 'call-123', 'x-request-id': 'ignored' } });
  const a = await post(ANTHROPIC, an({ service_tier: 'priority' }), { headers: { 'x-request-id': 'req-xyz' } });
  await post(OPENAI, oa(), { behavior: { error: 'rate_limit_exceeded' } }); // not billed
  await stream(OPENAI, oa({ n: 2 }), { behavior: { completion_tokens: 3 } });
  const st = await state.mock.stats();
  assert.equal(st.bills.length, 3);
  const [b1, b2, b3] = st.bills;
  assert.deepEqual(b1, {
    model: 'gpt-bill', family: 'openai', stream: false, outcome: 'succeeded', service_tier: 'default',
    request_id: r.headers.get('x-request-id'), response_id: r.json.id, client_call_id: 'call-123',
    prompt_tokens: P_HELLO, completion_tokens: 16, cached_tokens: 0, cache_write_tokens: 0, cache_write_1h_tokens: 0,
    reasoning_tokens: 0, reasoning_outside: false, audio_input_tokens: 0, audio_output_tokens: 0,
    image_input_tokens: 0, pdf_pages: 0, pdf_input_tokens: 0, web_search_calls: 0,
    accepted_prediction_tokens: 0, rejected_prediction_tokens: 0,
  });
  assert.deepEqual([b2.family, b2.request_id, b2.response_id, b2.client_call_id, b2.service_tier],
    ['anthropic', a.headers.get('request-id'), a.json.id, 'req-xyz', 'priority']);
  assert.deepEqual([b3.stream, b3.client_call_id, b3.completion_tokens], [true, null, 6]);
  assert.equal(st.models['gpt-bill'].failed, 1);
  assert.equal(st.totals.prompt_tokens, 3 * P_HELLO);
  assert.equal(st.totals.completion_tokens, 16 + 16 + 6);
  await state.mock.reset();
  const empty = await state.mock.stats();
  assert.deepEqual(empty.bills, []);
  assert.equal(empty.totals.prompt_tokens, 0);
  assert.deepEqual(empty.totals.service_tiers, {});
});

// ---------------------------------------------------------------- validation

e2e('every mistyped new behaviour field is a 400 naming the field (header, script and model directive)', async () => {
  const bad = {
    ignore_max_tokens: 1, fill_max_tokens: 'yes', reasoning_tokens: -1, reasoning_outside: 'true',
    cache_write_tokens: 1.5, cache_write_1h_tokens: 'x', service_tier: '', audio_input_tokens: null,
    audio_output_tokens: 2_000_000, rejected_prediction_tokens: [], accepted_prediction_tokens: {},
    web_search_calls: -3, image_tokens: 'many', pdf_tokens_per_page: true, usage_style: 'sometimes',
    stall_after_tokens: -1, truncate_after_tokens: 'half', bill_on_cancel: 0, fault: 'stall_forever',
  };
  for (const [field, value] of Object.entries(bad)) {
    for (const path of [OPENAI, ANTHROPIC]) {
      const r = await post(path, path === OPENAI ? oa() : an(), { behavior: { [field]: value } });
      assert.equal(r.status, 400, `${field}=${JSON.stringify(value)}: ${r.text}`);
      const message = r.json.error.message;
      assert.ok(message.startsWith('tollgate-mock: ') && message.includes(`'${field}'`), `${field}: ${message}`);
    }
    const res = await fetch(state.mock.url + '/mock/script', {
      method: 'POST', body: JSON.stringify({ model: 'gpt-bill', behaviors: [{ [field]: value }] }),
    });
    assert.equal(res.status, 400);
    assert.match((await res.json()).error.message, new RegExp(`behaviors\\[0\\]: .*'${field}'`));
  }
  const q = await post(OPENAI, oa({ model: 'gpt-bill?ignore_max_tokens=maybe' }));
  assert.equal(q.status, 400);
  assert.match(q.json.error.message, /'ignore_max_tokens' must be a boolean/);
  // Directives do work in query form.
  const ok = await post(OPENAI, oa({ model: 'gpt-bill?ignore_max_tokens=true&completion_tokens=9&usage_style=string_counts&service_tier=flex', max_tokens: 2 }));
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual([ok.json.usage.completion_tokens, ok.json.service_tier], ['9', 'flex']);
  const st = await state.mock.stats();
  assert.equal(st.bills.length, 1);
  assert.equal(st.models['gpt-bill'].failed, Object.keys(bad).length + 1);
}, { timeout: 60000 });
