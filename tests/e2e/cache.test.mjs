// Response caching (issue 11 §4; LiteLLM's litellm_settings.cache / cache_params and per-request
// `cache` controls), through the official SDKs: an identical request is answered from the cache
// with no upstream call, costs $0 (the spend log row says cache_hit, its cache_key and the cost it
// saved, which is what the first call cost), and is admitted against rate limits but never
// against budgets. Streams are cached when complete and replayed as streams.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  useMock, e2e, gatewayConfig, toYaml, sleep, waitFor, spendLogOf, metricsText, metricValue,
} from './harness.mjs';
import { paidDeployment, paidAnthropicDeployment, nanos, mockBillNanos, expectSpend, IN_PRICE, OUT_PRICE } from './budget_helpers.mjs';
import { RedisServer, haveRedis } from './services.mjs';
import { OtlpReceiver } from './otlp_receiver.mjs';

const state = useMock();
const BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');

const cached = (mock, params = {}, more = {}) => gatewayConfig({
  model_list: [paidDeployment(mock, 'cm', 'cm-up'), paidAnthropicDeployment(mock, 'cl', 'cl-up')],
  litellm_settings: { cache: true, cache_params: { type: 'local', ...params } },
  ...more,
});
const ask = (content, extra = {}) => ({ model: 'cm', messages: [{ role: 'user', content }], max_tokens: 20, ...extra });

/// One chat call through the OpenAI SDK: {data, headers}.
async function sdkChat(gw, body, opts = {}) {
  const { data, response } = await gw.openai(opts).chat.completions.create(body).withResponse();
  return { data, headers: response.headers };
}

e2e('miss then hit: one upstream call; the hit is $0, logged with cache_hit, its key and the cost it saved', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(cached(mock));
  const key = (await gw.generateKey({ max_budget: 1 })).key;
  const first = await sdkChat(gw, ask('What is the capital of France?'), { apiKey: key });
  const k1 = first.headers.get('x-litellm-cache-key');
  assert.match(k1 ?? '', /^[0-9a-f]{64}$/, 'a miss that is stored names its key');
  const second = await sdkChat(gw, ask('What is the capital of France?'), { apiKey: key });
  assert.equal(second.headers.get('x-litellm-cache-key'), k1);
  assert.match(second.headers.get('x-tollgate-cache') ?? '', /^hit; age=\d+s$/);
  assert.equal(second.headers.get('x-litellm-response-cost'), '0');
  assert.deepEqual(second.data.choices, first.data.choices);
  assert.deepEqual(second.data.usage, first.data.usage);
  assert.equal((await mock.model('cm-up')).requests, 1, 'the hit never reached the upstream');

  const bill = await mockBillNanos(mock, 'cm-up', { input: IN_PRICE, output: OUT_PRICE });
  const row1 = await spendLogOf(gw, first.headers);
  const row2 = await spendLogOf(gw, second.headers);
  assert.equal(nanos(row1.spend), bill, 'the miss costs what the simulator billed');
  assert.equal(row1.cache_hit, 'False');
  assert.equal(row1.cache_key, k1);
  assert.equal(row2.cache_hit, 'True');
  assert.equal(row2.cache_key, k1);
  assert.equal(nanos(row2.spend), 0, 'a hit costs $0');
  assert.equal(nanos(row2.cache_saved_cost), nanos(row1.spend), 'the hit saved what the first call cost');
  assert.equal(row2.decision.served_by, 'cache');
  assert.ok(!row2.decision.steps.some((s) => s.step === 'attempt'), 'no attempt for a hit');
  await expectSpend(gw, key, bill, 'the key paid for the miss only');

  const m = await metricsText(gw);
  assert.equal(metricValue(m, 'litellm_cache_hits_metric_total', { model: 'cm' }), 1);
  assert.equal(metricValue(m, 'litellm_cache_misses_metric_total'), 1);
  assert.equal(metricValue(m, 'litellm_cached_tokens_metric_total'), first.data.usage.total_tokens);

  // Anything that shapes the answer is part of the key.
  await sdkChat(gw, ask('What is the capital of France?', { temperature: 0.3 }), { apiKey: key });
  await sdkChat(gw, ask('What is the capital of Spain?'), { apiKey: key });
  assert.equal((await mock.model('cm-up')).requests, 3);
});

e2e('no-cache skips the lookup (and stores), no-store skips the store; controls via extra_body and metadata', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(cached(mock));
  const oa = gw.openai();
  await oa.chat.completions.create(ask('q1'));
  await oa.chat.completions.create(ask('q1', { cache: { 'no-cache': true } }));
  assert.equal((await mock.model('cm-up')).requests, 2, 'no-cache: sent upstream although a stored answer exists');
  await oa.chat.completions.create(ask('q1'));
  assert.equal((await mock.model('cm-up')).requests, 2, 'a plain request hits');

  const { response } = await oa.chat.completions.create(ask('q2', { metadata: { cache: { 'no-store': true } } })).withResponse();
  assert.equal(response.headers.get('x-litellm-cache-key'), null, 'an answer not stored names no key');
  await oa.chat.completions.create(ask('q2'));
  assert.equal((await mock.model('cm-up')).requests, 4, 'no-store: the next identical request missed');
  await oa.chat.completions.create(ask('q2'));
  assert.equal((await mock.model('cm-up')).requests, 4, 'the plain one was stored');

  // A control of the wrong type is the caller's error, in OpenAI's shape, naming the field.
  const bad = await gw.fetch('/v1/chat/completions', { body: ask('q3', { cache: { ttl: 'soon' } }) });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.error.type, 'invalid_request_error');
  assert.equal(bad.json.error.param, 'cache.ttl');
  const bad2 = await gw.fetch('/v1/chat/completions', { body: ask('q3', { cache: 'yes' }) });
  assert.equal(bad2.status, 400, bad2.text);
  assert.equal(bad2.json.error.param, 'cache');
  assert.equal((await mock.model('cm-up')).requests, 4);
});

e2e('ttl: a per-request ttl ends the entry; s-maxage refuses an older one; namespaces keep entries apart', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(cached(mock, { ttl: 60 }));
  const oa = gw.openai();
  await oa.chat.completions.create(ask('short-lived', { cache: { ttl: 1 } }));
  await oa.chat.completions.create(ask('short-lived'));
  assert.equal((await mock.model('cm-up')).requests, 1, 'hit within the ttl');
  await sleep(1300);
  await oa.chat.completions.create(ask('short-lived'));
  assert.equal((await mock.model('cm-up')).requests, 2, 'the entry expired after its 1 s ttl');

  await oa.chat.completions.create(ask('aged'));
  await sleep(1100);
  await oa.chat.completions.create(ask('aged', { cache: { 's-maxage': 0 } }));
  assert.equal((await mock.model('cm-up')).requests, 4, 's-maxage 0: a 1 s old answer is not accepted');

  const a = await oa.chat.completions.create(ask('ns', { cache: { namespace: 'team-a' } })).withResponse();
  assert.match(a.response.headers.get('x-litellm-cache-key'), /^team-a:[0-9a-f]{64}$/);
  await oa.chat.completions.create(ask('ns', { cache: { namespace: 'team-b' } }));
  assert.equal((await mock.model('cm-up')).requests, 6, 'another namespace misses');
  await oa.chat.completions.create(ask('ns', { cache: { namespace: 'team-a' } }));
  await oa.chat.completions.create(ask('ns', { cache: { namespace: 'team-b' } }));
  assert.equal((await mock.model('cm-up')).requests, 6, 'each namespace hits its own entry');
});

e2e('a completed stream is cached and a hit is replayed as a stream (OpenAI and Anthropic shapes)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(cached(mock));
  const oa = gw.openai();
  const read = async (body) => {
    const s = await oa.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage = null;
    let finish = null;
    for await (const c of s) {
      text += c.choices[0]?.delta?.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
      if (c.usage) usage = c.usage;
    }
    return { text, usage, finish };
  };
  const first = await read(ask('stream me'));
  const second = await read(ask('stream me'));
  assert.ok(first.text.length > 0);
  assert.equal(second.text, first.text);
  assert.equal(second.finish, first.finish);
  assert.deepEqual(second.usage, first.usage);
  assert.equal((await mock.model('cm-up')).requests, 1, 'the second stream was replayed from the cache');
  // The same request without streaming is the same entry.
  const plain = await oa.chat.completions.create(ask('stream me'));
  assert.equal(plain.choices[0].message.content, first.text);
  assert.equal((await mock.model('cm-up')).requests, 1);

  // A stream cut before its end is never stored.
  await mock.script('cm-up', [{ fault: 'truncate', completion_tokens: 8, truncate_after_tokens: 3 }]);
  await read(ask('cut me')).catch(() => null);
  await mock.script('cm-up', [{}]);
  await read(ask('cut me'));
  assert.equal((await mock.model('cm-up')).requests, 3, 'the cut stream was not cached');

  // Anthropic's SDK gets Anthropic events back from a hit.
  const an = gw.anthropic();
  const readA = async () => {
    const s = await an.messages.create({ model: 'cl', max_tokens: 20, messages: [{ role: 'user', content: 'hello' }], stream: true });
    let text = '';
    let stop = null;
    for await (const ev of s) {
      if (ev.type === 'content_block_delta') text += ev.delta.text ?? '';
      if (ev.type === 'message_delta') stop = ev.delta.stop_reason;
    }
    return { text, stop };
  };
  const a1 = await readA();
  const a2 = await readA();
  assert.ok(a1.text.length > 0);
  assert.deepEqual(a2, a1);
  assert.equal((await mock.model('cl-up')).requests, 1);
});

e2e('a hit is admitted against rate limits but never against budgets: a key over its budget still gets hits', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(cached(mock));
  const key = (await gw.generateKey({ max_budget: 1, rpm_limit: 4 })).key;
  const oa = gw.openai({ apiKey: key });
  await oa.chat.completions.create(ask('pay once'));
  // The key's budget is now below what it spent: every paid attempt is refused.
  await gw.admin('/key/update', { key, max_budget: 0.000001 });
  const refused = await gw.fetch('/v1/chat/completions', { auth: key, body: ask('something new') });
  assert.equal(refused.status, 429, refused.text);
  assert.equal(refused.json.error.type, 'budget_exceeded');
  const hit = await gw.fetch('/v1/chat/completions', { auth: key, body: ask('pay once') });
  assert.equal(hit.status, 200, `a cached answer costs nothing, so the budget does not refuse it: ${hit.text}`);
  assert.match(hit.headers.get('x-tollgate-cache') ?? '', /^hit/);
  assert.equal((await mock.model('cm-up')).requests, 1);
  // The rate limit counts hits: 4 requests a minute (1 miss, 1 refused, 1 hit so far).
  const hit2 = await gw.fetch('/v1/chat/completions', { auth: key, body: ask('pay once') });
  assert.equal(hit2.status, 200, hit2.text);
  const limited = await gw.fetch('/v1/chat/completions', { auth: key, body: ask('pay once') });
  assert.equal(limited.status, 429, limited.text);
  assert.equal(limited.json.error.type, 'rate_limit_exceeded');
});

e2e('type redis: two gateway processes share the cache', async (ctx) => {
  const { mock } = state;
  const redis = await RedisServer.start();
  try {
    const cfg = cached(mock, { type: 'redis', url: redis.url, ttl: 30 });
    const g1 = await ctx.gateway(cfg);
    const g2 = await ctx.gateway(cfg);
    const a = await sdkChat(g1, ask('shared question'));
    const b = await sdkChat(g2, ask('shared question'));
    assert.equal((await mock.model('cm-up')).requests, 1, 'the second gateway answered from Redis');
    assert.equal(b.headers.get('x-litellm-cache-key'), a.headers.get('x-litellm-cache-key'));
    assert.match(b.headers.get('x-tollgate-cache') ?? '', /^hit/);
    assert.deepEqual(b.data.choices, a.data.choices);
    const row = await spendLogOf(g2, b.headers);
    assert.equal(row.cache_hit, 'True');
    assert.equal(nanos(row.cache_saved_cost), nanos((await spendLogOf(g1, a.headers)).spend));
    const ttl = Number(redis.cli('TTL', `tollgate:cache:${a.headers.get('x-litellm-cache-key')}`));
    assert.ok(ttl > 0 && ttl <= 30, `the entry expires with cache_params.ttl (TTL ${ttl})`);
    // Redis gone: a miss, never an error.
    await redis.stop();
    const c = await g1.fetch('/v1/chat/completions', { body: ask('shared question') });
    assert.equal(c.status, 200, c.text);
    assert.equal((await mock.model('cm-up')).requests, 2);
  } finally {
    await redis.stop();
  }
}, { skip: haveRedis ? undefined : 'redis-server is not installed', timeout: 45000 });

e2e('config check: a cache type tollgate lacks and bad cache_params are errors with their path', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-cache-'));
  const check = (name, litellm_settings) => {
    const p = path.join(dir, name);
    writeFileSync(p, toYaml({ model_list: [{ model_name: 'm', litellm_params: { model: 'openai/gpt-4o' } }], litellm_settings }));
    const r = spawnSync(BIN, ['config', 'check', p], { encoding: 'utf8', timeout: 10000 });
    return { code: r.status, out: r.stdout + r.stderr };
  };
  const s3 = check('s3.yaml', { cache: true, cache_params: { type: 's3', s3_bucket_name: 'b' } });
  assert.equal(s3.code, 2, s3.out);
  assert.match(s3.out, /litellm_settings\.cache_params\.type \(line \d+\): cache type 's3' is not supported/);
  const ttl = check('ttl.yaml', { cache: true, cache_params: { ttl: -5 } });
  assert.equal(ttl.code, 2, ttl.out);
  assert.match(ttl.out, /litellm_settings\.cache_params\.ttl/);
  const size = check('size.yaml', { cache: true, cache_params: { max_size_in_memory: 0 } });
  assert.equal(size.code, 2, size.out);
  assert.match(size.out, /litellm_settings\.cache_params\.max_size_in_memory/);
  const ok = check('ok.yaml', { cache: true, cache_params: { type: 'local', ttl: 60, namespace: 'x', similarity_threshold: 0.8 } });
  assert.equal(ok.code, 0, ok.out);
  assert.match(ok.out, /litellm_settings\.cache_params\.similarity_threshold.*ignored/);
  const noRedis = check('noredis.yaml', { cache: true, cache_params: { type: 'redis' } });
  assert.equal(noRedis.code, 0, noRedis.out);
  assert.match(noRedis.out, /names no Redis server.*caching is off/);
});

// issue 13: the stale_cache degradation keyed like the response cache, on the request as the
// caller sent it: a request degraded straight from an open feature circuit (no attempt, so the
// adapters never rewrote its body) finds the answer an identical earlier request left after its
// attempt rewrote `model` and the output bound.
e2e('stale_cache: a request degraded from an open feature circuit finds the answer an identical request left', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'st', 'st-up')],
    fallback_policy: {
      model_groups: {
        st: {
          degradation: { mode: 'stale_cache', max_age_ms: 60000 },
          budgets: { deadline_ms: 400 },
          feature_circuit: { consecutive_failures: 2, cooldown_ms: 20000 },
        },
      },
    },
  }));
  const body = { model: 'st', messages: [{ role: 'user', content: 'Capital of France?' }], max_tokens: 30 };
  await mock.script('st-up', [{ content: 'Paris.' }]);
  const fresh = await gw.fetch('/v1/chat/completions', { body });
  assert.equal(fresh.status, 200, fresh.text);
  // Requests that miss their deadline (a slow upstream, other prompts) open the feature circuit.
  await mock.script('st-up', [{ latency_ms: 1500 }]);
  for (let i = 0; i < 8 && (await featureState(gw, 'st')) !== 'open'; i++) {
    const r = await gw.fetch('/v1/chat/completions', { body: { ...body, messages: [{ role: 'user', content: `slow ${i}` }] } });
    assert.notEqual(r.status, 200, r.text);
  }
  assert.equal(await featureState(gw, 'st'), 'open');
  const before = (await mock.model('st-up')).requests;
  const stale = await gw.fetch('/v1/chat/completions', { body });
  assert.equal(stale.status, 200, stale.text);
  assert.match(stale.headers.get('x-tollgate-degradation') ?? '', /^stale_cache; age=\d+s$/);
  assert.equal(stale.json.choices[0].message.content, 'Paris.');
  assert.equal((await mock.model('st-up')).requests, before, 'no upstream call while the feature circuit is open');
  const row = await spendLogOf(gw, stale);
  assert.ok(row.decision.steps.some((s) => /feature circuit/.test(s.reason ?? '')), JSON.stringify(row.decision.steps));
  assert.ok(!row.decision.steps.some((s) => s.step === 'attempt'), 'degraded without an attempt');
});

async function featureState(gw, group) {
  return (await gw.admin('/tollgate/circuits')).features?.find((x) => x.id === group)?.state;
}

e2e('the operation span of a hit says so (tollgate.cache_hit, the key, the cost saved) and has no attempt span', async (ctx) => {
  const { mock } = state;
  const rx = await OtlpReceiver.start();
  try {
    const gw = await ctx.gateway(cached(mock, {}, {
      tollgate_settings: { otel: { enabled: true, traces_endpoint: `${rx.url}/v1/traces`, service_name: 'tollgate-e2e' } },
    }));
    const miss = await gw.fetch('/v1/chat/completions', { body: ask('traced') });
    const hit = await gw.fetch('/v1/chat/completions', { body: ask('traced') });
    assert.equal(hit.status, 200, hit.text);
    const traceOf = (r) => r.headers.get('x-tollgate-trace-id');
    const spans = await waitFor(() => {
      const all = rx.spans();
      return all.some((s) => s.traceId === traceOf(hit)) && all.some((s) => s.traceId === traceOf(miss)) ? all : null;
    }, { what: 'the spans of both requests', timeoutMs: 5000 });
    assert.deepEqual(rx.invalid, []);
    const ofHit = spans.filter((s) => s.traceId === traceOf(hit));
    assert.equal(ofHit.length, 1, 'a hit has the operation span only');
    assert.equal(ofHit[0].attrs['tollgate.cache_hit'], true);
    assert.equal(ofHit[0].attrs['tollgate.cache_key'], hit.headers.get('x-litellm-cache-key'));
    assert.ok(Number(ofHit[0].attrs['tollgate.cache_saved_cost']) > 0);
    const missOp = spans.find((s) => s.traceId === traceOf(miss) && s.attrs['tollgate.cache_hit'] !== undefined);
    assert.equal(missOp.attrs['tollgate.cache_hit'], false);
  } finally {
    await rx.stop();
  }
});
