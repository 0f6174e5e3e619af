// The stream fault suite (issue 13, "Must show"): each fault of a misbehaving provider, streamed
// through the official SDKs — OpenAI (chat completions, an OpenAI primary with an Anthropic
// fallback) and Anthropic (/v1/messages natively, Anthropic primary and fallback) — once with
// Tollgate's own stream limits and once with a config that carries only LiteLLM's settings
// (num_retries, timeout, stream_timeout, the three fallback lists). Every case checks:
// - the client's final text is the whole canonical answer, or, where no healthy target exists,
//   a clean error after a strict prefix of it (never a truncated answer presented as complete);
// - the wall time is bounded;
// - the simulator's request counts per upstream;
// - the money: the key's spend is the simulator's bill, except for attempts of unknown outcome,
//   which are charged their reservation and cover what the simulator billed them;
// - the gateway serves an ordinary stream afterwards.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, spendLogOf, sleep } from './harness.mjs';
import { paidDeployment, paidAnthropicDeployment, spendNanos, mockBillNanos, unknownCharges, nanos } from './budget_helpers.mjs';
import { PRICES, words, openaiStream, anthropicStream } from './stream_helpers.mjs';

const state = useMock();
const CANON = words(60);

/// The two clients: the groups they call (primary `p`, fallback `f`) and the upstream names.
const SDKS = {
  openai: {
    deployments: (mock, tag) => [paidDeployment(mock, `${tag}o-p`, `${tag}o-p-up`), paidAnthropicDeployment(mock, `${tag}o-f`, `${tag}o-f-up`)],
    run: (gw, key, group) => openaiStream(gw.openai({ apiKey: key }), { model: group }),
    complete: (s) => s.finish === 'stop',
  },
  anthropic: {
    deployments: (mock, tag) => [paidAnthropicDeployment(mock, `${tag}a-p`, `${tag}a-p-up`), paidAnthropicDeployment(mock, `${tag}a-f`, `${tag}a-f-up`)],
    run: (gw, key, group) => anthropicStream(gw.anthropic({ apiKey: key }), { model: group }),
    complete: (s) => s.stopReason === 'end_turn' && s.stops === 1 && s.starts === 1,
  },
};
const letter = (sdk) => (sdk === 'openai' ? 'o' : 'a');

/// The two configs, both with LiteLLM's default circuit (allowed_fails 3, cooldown_time 5 s).
/// `tollgate`: Tollgate's stream limits as the group budget. `litellm`: only LiteLLM's keys, as a
/// LiteLLM proxy user has them (2 retries, a 30 s per-call timeout, a 10 s stream_timeout, one
/// fallback for each list).
const CONFIGS = {
  tollgate: {
    extra: { fallback_policy: { defaults: { budgets: { first_token_timeout_ms: 4000, stream_idle_timeout_ms: 3000 } } } },
    router: { num_retries: 2, allowed_fails: 3, cooldown_time: 5 },
  },
  litellm: {
    extra: {},
    router: { num_retries: 2, allowed_fails: 3, cooldown_time: 5, timeout: 30, stream_timeout: 10 },
  },
};

function configFor(mock, kind, tag) {
  const model_list = [];
  const pairs = [];
  for (const sdk of Object.keys(SDKS)) {
    model_list.push(...SDKS[sdk].deployments(mock, tag));
    pairs.push({ [`${tag}${letter(sdk)}-p`]: [`${tag}${letter(sdk)}-f`] });
  }
  return gatewayConfig({
    model_list,
    router_settings: CONFIGS[kind].router,
    litellm_settings: { fallbacks: pairs, context_window_fallbacks: pairs, content_policy_fallbacks: pairs },
    ...CONFIGS[kind].extra,
  });
}

/// The cases. `primary` / `fallback`: the simulator's scripts (the last entry repeats). `expect`:
/// `full` (the canonical answer) or `error` (a clean error after a prefix of it). `counts`: the
/// requests each upstream receives ([min, max]; `anthropic` overrides them where the Anthropic
/// primary, which accepts a prefill, may itself continue its own cut answer as a retry).
/// `maxMs`: the wall-time bound per config.
const CASES = [
  { name: '429 with Retry-After', primary: [{ error: 'rate_limit_exceeded', retry_after: 1 }, { content: CANON }], expect: 'full', counts: { p: [1, 2], f: [0, 1], total: [2, 2] }, maxMs: { tollgate: 6000, litellm: 6000 } },
  { name: '429 persistent', primary: [{ error: 'rate_limit_exceeded', retry_after: 1 }], expect: 'full', served: 'f', counts: { p: [1, 3], f: [1, 1] }, maxMs: { tollgate: 8000, litellm: 8000 } },
  { name: '500 once', primary: [{ error: 'server_error' }, { content: CANON }], expect: 'full', served: 'p', counts: { p: [2, 2], f: [0, 0] }, maxMs: { tollgate: 4000, litellm: 4000 } },
  { name: '503 persistent', primary: [{ error: 'overloaded' }], expect: 'full', served: 'f', counts: { p: [1, 3], f: [1, 1] }, maxMs: { tollgate: 6000, litellm: 6000 } },
  { name: 'reset before headers', primary: [{ fault: 'reset' }, { content: CANON }], expect: 'full', counts: { p: [1, 2], f: [0, 1], total: [2, 2] }, maxMs: { tollgate: 4000, litellm: 4000 } },
  { name: 'no response at all', primary: [{ fault: 'hang' }], expect: 'full', served: 'f', counts: { p: [1, 1], f: [1, 1] }, maxMs: { tollgate: 7000, litellm: 13000 } },
  { name: 'slow first token (20 s)', primary: [{ content: CANON, first_token_ms: 20000 }], expect: 'full', served: 'f', counts: { p: [1, 1], f: [1, 1] }, maxMs: { tollgate: 7000, litellm: 15000 } },
  { name: 'stream cut after 40 of 60 tokens', primary: [{ fault: 'truncate', content: CANON, truncate_after_tokens: 40 }], expect: 'full', served: 'f', continued: true, counts: { p: [1, 1], f: [1, 1] }, anthropic: { p: [1, 3], f: [0, 1] }, maxMs: { tollgate: 5000, litellm: 5000 } },
  { name: 'stream stall after 20 tokens', primary: [{ fault: 'stall', content: CANON, stall_after_tokens: 20 }], expect: 'full', served: 'f', continued: true, counts: { p: [1, 1], f: [1, 1] }, maxMs: { tollgate: 7000, litellm: 45000 } },
  { name: 'malformed event', primary: [{ fault: 'malformed_event', content: CANON }], expect: 'full', served: 'p', counts: { p: [1, 1], f: [0, 0] }, maxMs: { tollgate: 4000, litellm: 4000 } },
  { name: 'no [DONE]', primary: [{ fault: 'no_done', content: CANON }], expect: 'full', served: 'p', counts: { p: [1, 1], f: [0, 0] }, maxMs: { tollgate: 4000, litellm: 4000 } },
  { name: 'context overflow', primary: [{ error: 'context_length_exceeded' }], expect: 'full', served: 'f', counts: { p: [1, 1], f: [1, 1] }, maxMs: { tollgate: 4000, litellm: 4000 } },
  { name: 'content filter', primary: [{ error: 'content_filter' }], expect: 'full', served: 'f', counts: { p: [1, 1], f: [1, 1] }, maxMs: { tollgate: 4000, litellm: 4000 } },
  { name: 'a fallback that rejects the prefill after a cut', primary: [{ fault: 'truncate', content: CANON, truncate_after_tokens: 40 }], fallback: [{ reject_prefill: true, content: CANON }], expect: 'error', counts: { p: [1, 1], f: [1, 1] }, anthropic: { p: [1, 3], f: [1, 1] }, maxMs: { tollgate: 5000, litellm: 5000 } },
];

const inRange = (n, [lo, hi]) => n >= lo && n <= hi;

/// Runs one case for one SDK on gateway `gw` and checks it.
async function runCase(gw, mock, sdk, c, kind, tag) {
  const g = (x) => `${tag}${letter(sdk)}-${x}`;
  const up = (x) => `${g(x)}-up`;
  await mock.script(up('p'), c.primary);
  await mock.script(up('f'), c.fallback ?? [{ content: CANON }]);
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const s = await SDKS[sdk].run(gw, key, g('p'));
  const what = `${sdk}/${kind}/${c.name}`;
  if (c.expect === 'full') {
    assert.equal(s.error, null, `${what}: ${s.error}`);
    assert.equal(s.text, CANON, `${what}: the whole canonical answer`);
    assert.ok(SDKS[sdk].complete(s), `${what}: ended as a complete answer`);
  } else {
    assert.ok(s.error, `${what}: a clean error, never a truncated answer presented as complete`);
    assert.ok(!SDKS[sdk].complete(s), `${what}: no finish reached the client`);
    assert.ok(CANON.startsWith(s.text), `${what}: what came is a prefix of the answer (${s.text.length} bytes)`);
  }
  assert.ok(s.ms < c.maxMs[kind], `${what}: ${s.ms.toFixed(0)} ms, bound ${c.maxMs[kind]} ms`);
  const counts = await mock.requests(up('p'), up('f'));
  const n = { p: counts[up('p')], f: counts[up('f')] };
  const want = c[sdk] ?? c.counts;
  assert.ok(inRange(n.p, want.p) && inRange(n.f, want.f) && (!want.total || inRange(n.p + n.f, want.total)),
    `${what}: upstream requests ${JSON.stringify(n)}, expected ${JSON.stringify(want)}`);
  // Money: spend = the simulator's bill for every attempt of known outcome, plus the
  // reservations of those of unknown outcome, which cover their share of the bill.
  const row = await spendLogOf(gw, s.response);
  const attempts = row.decision.steps.filter((x) => x.step === 'attempt');
  const bill = (await mockBillNanos(mock, up('p'), PRICES)) + (await mockBillNanos(mock, up('f'), PRICES));
  const unknown = unknownCharges(row);
  const spent = await spendNanos(gw, key);
  assert.equal(spent, attempts.reduce((a, x) => a + nanos(x.charged), 0), `${what}: spend is the sum of the attempts' charges`);
  assert.ok(spent >= bill, `${what}: spend ${spent} covers the simulator's bill ${bill}`);
  assert.ok(spent - unknown <= bill, `${what}: beyond the unknown outcomes (${unknown}), nothing is charged the simulator did not bill`);
  if (unknown === 0) assert.equal(spent, bill, `${what}: every outcome known: spend == bill`);
  if (c.served) assert.equal(s.response.headers.get('x-litellm-model-group'), c.expect === 'full' && !c.continued ? g(c.served) : g('p'),
    `${what}: the serving group (a continued stream's head names the first)`);
  if (c.continued) {
    assert.equal(attempts[0].continuation, 'cut', `${what}: ${JSON.stringify(attempts)}`);
    assert.equal(attempts.at(-1).continuation, 'continued');
    assert.ok(row.decision.continued_by, `${what}: the trace names who continued`);
    assert.ok(row.decision.continuations >= 1);
  }
  if (c.expect === 'full' && !c.continued) assert.equal(row.status, 'success', `${what}: logged as a success`);
  if (c.expect === 'error') assert.notEqual(row.status, 'success', `${what}: never logged as a success`);
  // Healthy afterwards: an ordinary stream on the fallback group is served whole.
  await mock.script(up('f'), [{ content: CANON }]);
  const after = await SDKS[sdk].run(gw, key, g('f'));
  assert.equal(after.error, null, `${what}: healthy afterwards`);
  assert.equal(after.text, CANON);
}

let seq = 0;
for (const kind of Object.keys(CONFIGS)) {
  for (const c of CASES) {
    e2e(`fault suite (${kind === 'litellm' ? 'LiteLLM settings only' : 'Tollgate stream limits'}): ${c.name}, both SDKs`, async (ctx) => {
      const { mock } = state;
      const tag = `c${seq++}`;
      const gw = await ctx.gateway(configFor(mock, kind, tag));
      await Promise.all(Object.keys(SDKS).map((sdk) => runCase(gw, mock, sdk, c, kind, tag)));
    }, { timeout: 90000 });
  }
}

e2e('fault suite: fail-over accounting — the client sees the serving model and its usage, the failed attempts are billed nothing', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(configFor(mock, 'litellm', 'acct'));
  for (const sdk of Object.keys(SDKS)) {
    const up = (x) => `acct${letter(sdk)}-${x}-up`;
    await mock.script(up('p'), [{ error: 'overloaded' }]);
    await mock.script(up('f'), [{ content: CANON, prompt_tokens: 123 }]);
    const key = (await gw.generateKey({ max_budget: 1 })).key;
    const s = await SDKS[sdk].run(gw, key, `acct${letter(sdk)}-p`);
    assert.equal(s.error, null, String(s.error));
    assert.equal(s.text, CANON);
    assert.equal(s.response.headers.get('x-litellm-model-group'), `acct${letter(sdk)}-f`, 'the serving group');
    assert.match(s.response.headers.get('x-litellm-model-id') ?? '', /./);
    const bills = (await mock.stats()).bills.filter((b) => b.model === up('f'));
    assert.equal(bills.length, 1);
    if (sdk === 'openai') {
      assert.equal(s.usage.prompt_tokens, bills[0].prompt_tokens, 'the client reads the serving attempt\'s usage');
      assert.equal(s.usage.completion_tokens, bills[0].completion_tokens);
    } else {
      assert.equal(s.usage.input_tokens, bills[0].prompt_tokens);
      assert.equal(s.usage.output_tokens, bills[0].completion_tokens);
    }
    const row = await spendLogOf(gw, s.response);
    const attempts = row.decision.steps.filter((x) => x.step === 'attempt');
    assert.ok(attempts.length >= 2);
    for (const a of attempts.slice(0, -1)) assert.equal(nanos(a.charged), 0, 'a 503 is not billed as a completion');
    assert.equal(row.prompt_tokens, bills[0].prompt_tokens, 'the spend log has the serving attempt\'s tokens');
    assert.equal(row.completion_tokens, bills[0].completion_tokens);
    assert.equal(await spendNanos(gw, key), await mockBillNanos(mock, up('f'), PRICES), 'spend == the fallback\'s bill');
  }
});

e2e('fault suite: a primary down for 60 s, then healthy — 20 requests, one every 4 s, each a whole answer; the circuit keeps the primary from a retry storm and lets it back', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(configFor(mock, 'litellm', 'down'));
  const key = (await gw.generateKey({ max_budget: 5 })).key;
  for (const sdk of Object.keys(SDKS)) {
    await mock.script(`down${letter(sdk)}-p-up`, [{ error: 'overloaded' }]);
    await mock.script(`down${letter(sdk)}-f-up`, [{ content: CANON }]);
  }
  const start = performance.now();
  const results = { openai: [], anthropic: [] };
  let healed = false;
  const runs = [];
  for (let i = 0; i < 20; i++) {
    const due = start + i * 4000;
    await sleep(Math.max(0, due - performance.now()));
    if (!healed && performance.now() - start >= 60000) {
      for (const sdk of Object.keys(SDKS)) await mock.script(`down${letter(sdk)}-p-up`, [{ content: CANON }]);
      healed = true;
    }
    const downPhase = !healed;
    for (const sdk of Object.keys(SDKS)) {
      runs.push(SDKS[sdk].run(gw, key, `down${letter(sdk)}-p`).then((s) => {
        results[sdk].push({ i, downPhase, s, group: s.response?.headers.get('x-litellm-model-group') });
      }));
    }
  }
  await Promise.all(runs);
  const stats = await mock.requests('downo-p-up', 'downo-f-up', 'downa-p-up', 'downa-f-up');
  for (const sdk of Object.keys(SDKS)) {
    const rs = results[sdk].sort((a, b) => a.i - b.i);
    for (const r of rs) {
      assert.equal(r.s.error, null, `${sdk} #${r.i}: ${r.s.error}`);
      assert.equal(r.s.text, CANON, `${sdk} #${r.i}: the whole answer`);
      assert.ok(r.s.ms < 10000, `${sdk} #${r.i}: ${r.s.ms.toFixed(0)} ms`);
    }
    const down = rs.filter((r) => r.downPhase);
    assert.ok(down.every((r) => r.group === `down${letter(sdk)}-f`), `${sdk}: served by the fallback while the primary is down`);
    // The primary is asked at most num_retries + 1 times by the first request, then only by the
    // circuit's probes: far fewer than 3 per request.
    const primaryWhileDown = stats[`down${letter(sdk)}-p-up`] - rs.filter((r) => !r.downPhase && r.group === `down${letter(sdk)}-p`).length;
    assert.ok(primaryWhileDown <= 3 + down.length, `${sdk}: the primary was asked ${primaryWhileDown} times for ${down.length} requests while down`);
    ctx.t.diagnostic(`${sdk}: primary asked ${primaryWhileDown} times for ${down.length} requests while down; served by ${rs.map((r) => (r.group.endsWith('-p') ? 'p' : 'f')).join('')}; slowest ${Math.max(...rs.map((r) => r.s.ms)).toFixed(0)} ms`);
    const last = rs.slice(-3);
    assert.ok(last.every((r) => r.group === `down${letter(sdk)}-p`), `${sdk}: the primary serves again after it recovered: ${rs.map((r) => r.group).join(',')}`);
  }
  const res = await gw.fetch('/health/liveliness', { method: 'GET' });
  assert.equal(res.status, 200);
}, { timeout: 150000 });
