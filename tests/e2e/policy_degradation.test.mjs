// Degradation modes of the governed fallback policy (issue 4 §5, "Must show": each degradation
// mode, labeled; a deferred job survives a gateway restart and completes). Each mode answers
// after retries and fallbacks failed (or when the failure's action is `degrade`, or the group's
// feature circuit is open), carries `x-tollgate-degradation`, and its spend-log row is marked
// (`degradation` column and the `decision` trace). The upstream is counted at the mock.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, waitFor, sleep, sseData, circuitOf, spendLogOf, metricsText, metricValue,
} from './harness.mjs';

const state = useMock();

const ask = (model, extra = {}) => ({ model, messages: [{ role: 'user', content: 'What is the capital of France?' }], ...extra });
const chat = (gw, body, { auth = true, headers = {} } = {}) => gw.fetch('/v1/chat/completions', { body, auth, headers });
const serverMs = (r) => Number(r.headers.get('x-litellm-response-duration-ms'));

/// A config whose group `group` (one deployment on upstream `${group}-up`) degrades by `degradation`;
/// `more` deployments, the group's other policy keys (`groupPolicy`), other `fallbackPolicy` keys
/// and other config sections (`rest`) are added as given.
function degradingConfig(mock, group, degradation, { more = [], groupPolicy = {}, fallbackPolicy = {}, ...rest } = {}) {
  return gatewayConfig({
    model_list: [openaiDeployment(mock, group, `${group}-up`), ...more],
    fallback_policy: {
      ...fallbackPolicy,
      model_groups: { [group]: { degradation, ...groupPolicy }, ...(fallbackPolicy.model_groups ?? {}) },
    },
    ...rest,
  });
}

/// Checks the spend-log row of a degraded answer: `degradation` column and decision trace.
async function assertLoggedDegradation(gw, res, mode) {
  const row = await spendLogOf(gw, res);
  assert.equal(row.degradation, mode, `spend-log degradation of ${res.headers.get('x-litellm-call-id')}: ${JSON.stringify(row)}`);
  assert.equal(row.decision?.degradation, mode, `decision trace: ${JSON.stringify(row.decision)}`);
  assert.ok(row.decision.steps.some((s) => s.step === 'degrade' && s.reason.startsWith(mode)),
    `the trace has the degrade step: ${JSON.stringify(row.decision.steps)}`);
  return row;
}

e2e('equivalent: after the primary fails, the equivalent group answers, labeled, and the spend log marks it', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'eq', { mode: 'equivalent', model: 'eq-alt' }, {
    more: [openaiDeployment(mock, 'eq-alt', 'eq-alt-up')],
  }));
  await mock.script('eq-up', [{ error: 'overloaded' }]);
  await mock.script('eq-alt-up', [{ content: 'Paris, from the equivalent model.' }]);

  const r = await chat(gw, ask('eq'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-tollgate-degradation'), 'equivalent');
  assert.equal(r.headers.get('x-tollgate-degradation-caveat'), null, 'no caveat configured');
  assert.equal(r.json.choices[0].message.content, 'Paris, from the equivalent model.');
  assert.equal(r.headers.get('x-litellm-model-group'), 'eq-alt');
  assert.deepEqual(await mock.requests('eq-up', 'eq-alt-up'), { 'eq-up': 1, 'eq-alt-up': 1 });
  const row = await assertLoggedDegradation(gw, r, 'equivalent');
  assert.equal(row.status, 'success');
  assert.equal(row.decision.outcome, 'degraded');
  assert.equal(metricValue(await metricsText(gw), 'tollgate_requests_total', { model_group: 'eq', degradation: 'equivalent' }), 1);

  // A healthy primary answers itself: no label.
  await mock.script('eq-up', [{}]);
  const ok = await chat(gw, ask('eq'));
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.headers.get('x-tollgate-degradation'), null);
  assert.equal((await spendLogOf(gw, ok)).degradation ?? null, null);
});

e2e('a class whose action is degrade skips the configured fallback and goes straight to the degradation mode', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'act', { mode: 'equivalent', model: 'act-alt' }, {
    more: [openaiDeployment(mock, 'act-alt', 'act-alt-up'), openaiDeployment(mock, 'act-fb', 'act-fb-up')],
    groupPolicy: { classes: { retryable_capacity: { action: 'degrade' } }, budgets: { max_retries: 2 } },
    litellm_settings: { fallbacks: [{ act: ['act-fb'] }] },
  }));
  await mock.script('act-up', [{ error: 'rate_limit_exceeded', retry_after_ms: 10 }]);
  const r = await chat(gw, ask('act'));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-tollgate-degradation'), 'equivalent');
  assert.deepEqual(await mock.requests('act-up', 'act-fb-up', 'act-alt-up'), { 'act-up': 1, 'act-fb-up': 0, 'act-alt-up': 1 },
    'no retry, no fallback: the degrade action goes to the degradation target');
  await assertLoggedDegradation(gw, r, 'equivalent');
});

e2e('reduced: a cheaper model with max_tokens capped, labeled with its caveat', async (ctx) => {
  const { mock } = state;
  const caveat = 'Shortened answer: the primary model is unavailable.';
  const gw = await ctx.gateway(degradingConfig(mock, 'big', { mode: 'reduced', model: 'small', max_tokens: 5, caveat }, {
    more: [openaiDeployment(mock, 'small', 'small-up')],
  }));
  await mock.script('big-up', [{ error: 'server_error' }]);
  // The small model would write 50 tokens; the mock stops at the request's max_tokens.
  await mock.script('small-up', [{ completion_tokens: 50 }]);

  const cases = [
    { extra: { max_tokens: 100 }, expect: 5, what: 'max_tokens 100 is capped to 5' },
    { extra: {}, expect: 5, what: 'no max_tokens: capped to 5' },
    { extra: { max_completion_tokens: 100 }, expect: 5, what: 'max_completion_tokens 100 is capped to 5' },
    { extra: { max_tokens: 3 }, expect: 3, what: 'max_tokens 3 (under the cap) is kept' },
  ];
  let completionTotal = 0;
  for (const c of cases) {
    const r = await chat(gw, ask('big', c.extra));
    assert.equal(r.status, 200, `${c.what}: ${r.text}`);
    assert.equal(r.headers.get('x-tollgate-degradation'), 'reduced', c.what);
    assert.equal(r.headers.get('x-tollgate-degradation-caveat'), caveat, c.what);
    assert.equal(r.json.usage.completion_tokens, c.expect, c.what);
    assert.equal(r.json.choices[0].finish_reason, 'length', `${c.what}: the mock stopped at the cap it was sent`);
    completionTotal += c.expect;
    await assertLoggedDegradation(gw, r, 'reduced');
  }
  const small = await mock.model('small-up');
  assert.equal(small.requests, cases.length);
  assert.equal(small.completion_tokens, completionTotal, 'the mock billed only the capped output');
  assert.equal((await mock.model('big-up')).requests, cases.length);
});

e2e('stale_cache: the last answer to an identical request, labeled with its age, non-streaming and streaming; a miss falls through to the error', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'sc', { mode: 'stale_cache', max_age_ms: 60000 }));
  const k = await gw.generateKey({});
  const body = ask('sc', { max_tokens: 20 });
  await mock.script('sc-up', [{ content: 'Paris is the capital of France.' }, { error: 'overloaded' }]);

  const fresh = await chat(gw, body);
  assert.equal(fresh.status, 200, fresh.text);
  assert.equal(fresh.headers.get('x-tollgate-degradation'), null, 'a fresh answer is not labeled');
  await sleep(1100); // so that the cached answer is at least 1 s old

  // Non-streaming: the cached answer, its age in seconds.
  const stale = await chat(gw, body);
  assert.equal(stale.status, 200, stale.text);
  assert.equal(stale.headers.get('x-tollgate-degradation'), 'stale_cache; age=1s');
  assert.equal(stale.headers.get('age'), '1');
  assert.deepEqual(stale.json, fresh.json, 'the identical answer is served');
  await assertLoggedDegradation(gw, stale, 'stale_cache');

  // Streaming (same body + stream flags): the cached non-streaming answer as an event stream.
  const streamed = await chat(gw, { ...body, stream: true, stream_options: { include_usage: true } });
  assert.equal(streamed.status, 200, streamed.text);
  assert.match(streamed.headers.get('content-type'), /text\/event-stream/);
  assert.match(streamed.headers.get('x-tollgate-degradation'), /^stale_cache; age=\d+s$/);
  const events = sseData(streamed.text);
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1);
  assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'), streamed.text);
  const text = chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
  assert.equal(text, fresh.json.choices[0].message.content);
  assert.deepEqual(chunks.find((c) => c.usage)?.usage?.completion_tokens, fresh.json.usage.completion_tokens,
    'include_usage: the usage chunk of the cached answer');
  await assertLoggedDegradation(gw, streamed, 'stale_cache');
  assert.equal((await mock.model('sc-up')).requests, 3, 'each degraded request tried the primary first');

  // Misses: another body, and the same body from another key. The primary's error comes back.
  for (const [what, b, auth] of [['another body', ask('sc', { max_tokens: 21 }), true], ['another key', body, k.key]]) {
    const miss = await chat(gw, b, { auth });
    assert.equal(miss.status, 503, `${what}: ${miss.text}`);
    assert.equal(miss.headers.get('x-tollgate-degradation'), null, what);
    assert.match(miss.json.error.message, /overloaded/, what);
    const row = await spendLogOf(gw, miss);
    assert.equal(row.degradation ?? null, null, what);
    assert.ok(row.decision.steps.some((s) => s.step === 'stop' && /stale_cache: no answer/.test(s.reason)),
      `${what}: ${JSON.stringify(row.decision.steps)}`);
  }
});

e2e('stale_cache: an answer older than max_age_ms is not served', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'old', { mode: 'stale_cache', max_age_ms: 300 }));
  await mock.script('old-up', [{}, { error: 'overloaded' }]);
  const body = ask('old');
  assert.equal((await chat(gw, body)).status, 200);
  const young = await chat(gw, body);
  assert.equal(young.status, 200, `within max_age: ${young.text}`);
  assert.match(young.headers.get('x-tollgate-degradation'), /^stale_cache; age=0s$/);
  await sleep(400);
  const old = await chat(gw, body);
  assert.equal(old.status, 503, `older than max_age: ${old.text}`);
  assert.equal(old.headers.get('x-tollgate-degradation'), null);
});

e2e('fail_fast: a clear 503 naming the policy, labeled and logged', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'ff', { mode: 'fail_fast' }));
  await mock.script('ff-up', [{ error: 'overloaded' }]);
  const r = await chat(gw, ask('ff'));
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json.error.code, 'degraded_fail_fast');
  assert.match(r.json.error.message, /fallback_policy/);
  assert.match(r.json.error.message, /fail_fast/);
  assert.match(r.json.error.message, /'ff'/, 'names the model group');
  assert.equal(r.headers.get('x-tollgate-degradation'), 'fail_fast');
  const row = await assertLoggedDegradation(gw, r, 'fail_fast');
  assert.equal(row.status, 'failure');
  assert.equal((await mock.model('ff-up')).requests, 1);
});

/// GET /v1/tollgate/jobs/{id} with a key (default: master).
const job = (gw, id, auth = true) => gw.fetch(`/v1/tollgate/jobs/${id}`, { method: 'GET', auth });

e2e('deferred: 202 with a job; the job waits while the circuit is open and completes after the upstream recovers', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'def', { mode: 'deferred' }, {
    groupPolicy: { circuit: { consecutive_failures: 1, cooldown_ms: 1500 } },
  }));
  const owner = await gw.generateKey({});
  const other = await gw.generateKey({});
  // The first attempt fails (and opens the deployment's circuit); the upstream is healthy after.
  await mock.script('def-up', [{ error: 'overloaded' }, { content: 'Paris, later.' }]);

  const t0 = Date.now();
  const r = await chat(gw, ask('def'), { auth: owner.key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.headers.get('x-tollgate-degradation'), 'deferred');
  const j = r.json;
  assert.equal(j.object, 'tollgate.job');
  assert.equal(j.status, 'queued');
  assert.match(j.id, /\S/);
  assert.equal(j.url, `/v1/tollgate/jobs/${j.id}`);
  assert.equal(r.headers.get('location'), j.url);
  await assertLoggedDegradation(gw, r, 'deferred');

  // While the circuit is open (1.5 s) the job is not run: the upstream saw one request.
  await sleep(800);
  const queued = await job(gw, j.id, owner.key);
  assert.equal(queued.status, 200, queued.text);
  assert.equal(queued.json.status, 'queued', queued.text);
  assert.equal(queued.json.result, null);
  assert.equal((await mock.model('def-up')).requests, 1, 'the job does not run while the circuit is open');
  // Another key does not see it; the master key does.
  assert.equal((await job(gw, j.id, other.key)).status, 404);
  assert.equal((await job(gw, j.id)).status, 200);
  assert.equal((await job(gw, 'job-does-not-exist')).status, 404);

  const done = await waitFor(async () => {
    const g = await job(gw, j.id, owner.key);
    return g.json?.status === 'succeeded' || g.json?.status === 'failed' ? g.json : null;
  }, { timeoutMs: 6000, what: 'the job to finish' });
  const took = Date.now() - t0;
  assert.equal(done.status, 'succeeded', JSON.stringify(done));
  assert.ok(took >= 1400, `ran after the circuit's cooldown (${took} ms)`);
  assert.equal(done.result.object, 'chat.completion');
  assert.equal(done.result.choices[0].message.content, 'Paris, later.');
  assert.equal((await mock.model('def-up')).requests, 2);
  // The run that completed it has its own spend-log row, served by the primary.
  assert.ok(done.request_id, JSON.stringify(done));
  const runRow = await spendLogOf(gw, done.request_id);
  assert.equal(runRow.status, 'success');
  assert.equal(runRow.model_group, 'def');
});

e2e('deferred: a job queued before a gateway restart (SIGTERM) runs after it, on the same database, and completes', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-jobs-'));
  try {
    const config = degradingConfig(mock, 'dr', { mode: 'deferred' }, {
      // A long cooldown: the first gateway never lets the job run.
      groupPolicy: { circuit: { consecutive_failures: 1, cooldown_ms: 60000 } },
      tollgate_settings: { data_dir: dataDir },
    });
    let gw = await ctx.gateway(config);
    const owner = await gw.generateKey({});
    await mock.script('dr-up', [{ error: 'overloaded' }]);
    const r = await chat(gw, ask('dr'), { auth: owner.key });
    assert.equal(r.status, 202, r.text);
    const id = r.json.id;
    await sleep(1200); // > 2 polls of the job runner
    assert.equal((await job(gw, id, owner.key)).json.status, 'queued');
    assert.equal((await mock.model('dr-up')).requests, 1, 'not run by the first gateway');

    const exit = await gw.proc.stop(); // SIGTERM
    assert.equal(exit.signal ?? null, null, `stopped cleanly on SIGTERM: ${JSON.stringify(exit)}`);
    assert.equal(exit.code, 0, `exit code on SIGTERM: ${JSON.stringify(exit)}`);

    await mock.script('dr-up', [{ content: 'Paris, after the restart.' }]);
    gw = await ctx.gateway(config);
    const done = await waitFor(async () => {
      const g = await job(gw, id, owner.key);
      return g.json?.status === 'succeeded' || g.json?.status === 'failed' ? g.json : null;
    }, { timeoutMs: 6000, what: 'the job to finish after the restart' });
    assert.equal(done.status, 'succeeded', JSON.stringify(done));
    assert.equal(done.result.choices[0].message.content, 'Paris, after the restart.');
    assert.equal((await mock.model('dr-up')).requests, 2);
    // The deferred answer's spend-log row survived too.
    assert.equal((await spendLogOf(gw, r)).degradation, 'deferred');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/// A gateway whose group `group` defers (its circuit opens at the first failure and stays open
/// `cooldownMs`) with `settings` as tollgate_settings, a key, and the upstream scripted `behaviors`.
async function deferringGateway(ctx, group, cooldownMs, settings, behaviors) {
  const gw = await ctx.gateway(degradingConfig(state.mock, group, { mode: 'deferred' }, {
    groupPolicy: { circuit: { consecutive_failures: 1, cooldown_ms: cooldownMs } },
    tollgate_settings: settings,
  }));
  const owner = await gw.generateKey({});
  await state.mock.script(`${group}-up`, behaviors);
  return { gw, owner };
}

e2e('deferred: a key with max_queued_jobs_per_key jobs queued is answered as fail_fast naming the limit; other keys still defer', async (ctx) => {
  const { mock } = state;
  const { gw, owner } = await deferringGateway(ctx, 'lim', 60000, { max_queued_jobs_per_key: 2 }, [{ error: 'overloaded' }]);
  const other = await gw.generateKey({});
  for (let i = 0; i < 2; i++) {
    const r = await chat(gw, ask('lim'), { auth: owner.key });
    assert.equal(r.status, 202, r.text);
  }
  const full = await chat(gw, ask('lim'), { auth: owner.key });
  assert.equal(full.status, 503, full.text);
  assert.equal(full.json.error.code, 'deferred_queue_full', full.text);
  assert.match(full.json.error.message, /max_queued_jobs_per_key: 2/);
  assert.match(full.json.error.message, /degradation mode deferred/);
  assert.equal(full.headers.get('x-tollgate-degradation'), 'fail_fast');
  assert.equal((await spendLogOf(gw, full)).degradation, 'fail_fast');
  const elsewhere = await chat(gw, ask('lim'), { auth: other.key });
  assert.equal(elsewhere.status, 202, elsewhere.text);
  assert.equal((await mock.model('lim-up')).requests, 1, 'only the first request reached the upstream (the circuit opened)');
});

e2e('deferred: a finished job is deleted after job_retention_ms; GET then answers 404 in the API error format', async (ctx) => {
  const { gw, owner } = await deferringGateway(ctx, 'ret', 1000, { job_retention_ms: 2000 },
    [{ error: 'overloaded' }, { content: 'Paris.' }]);
  const r = await chat(gw, ask('ret'), { auth: owner.key });
  assert.equal(r.status, 202, r.text);
  const done = await waitFor(async () => {
    const g = await job(gw, r.json.id, owner.key);
    return g.json?.status === 'succeeded' ? g.json : null;
  }, { timeoutMs: 10000, what: 'the job to succeed' });
  const finished = Date.now();
  assert.equal(done.result.choices[0].message.content, 'Paris.');
  const gone = await waitFor(async () => {
    const g = await job(gw, r.json.id, owner.key);
    return g.status === 404 ? g : null;
  }, { timeoutMs: 15000, what: 'the job to be deleted' });
  assert.ok(Date.now() - finished >= 1500, 'kept about job_retention_ms');
  assert.equal(gone.json.error.code, 'job_not_found', gone.text);
  assert.equal(gone.json.error.type, 'invalid_request_error');
});

e2e('feature circuit: after 2 budget misses in a row, requests go straight to the degradation mode without touching the primary', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'feat', { mode: 'equivalent', model: 'feat-alt' }, {
    more: [openaiDeployment(mock, 'feat-alt', 'feat-alt-up')],
    groupPolicy: {
      budgets: { deadline_ms: 300 },
      feature_circuit: { consecutive_failures: 2, cooldown_ms: 1500 },
    },
  }));
  // The primary answers after 1 s: every request misses its 300 ms deadline.
  await mock.script('feat-up', [{ latency_ms: 1000 }]);
  for (let i = 1; i <= 2; i++) {
    const miss = await chat(gw, ask('feat'));
    assert.equal(miss.status, 504, `miss ${i}: ${miss.text}`);
    assert.ok(serverMs(miss) <= 300 + 50, `miss ${i} ended at its deadline (${serverMs(miss)} ms)`);
  }
  assert.equal((await mock.model('feat-up')).requests, 2);
  const feature = await circuitOf(gw, 'features', 'feat');
  assert.equal(feature?.state, 'open', JSON.stringify(feature));

  const t0 = Date.now();
  for (let i = 0; i < 3; i++) {
    const r = await chat(gw, ask('feat'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-tollgate-degradation'), 'equivalent');
    const row = await assertLoggedDegradation(gw, r, 'equivalent');
    assert.ok(row.decision.steps.some((s) => /feature circuit/.test(s.reason ?? '')), JSON.stringify(row.decision.steps));
    assert.ok(!row.decision.steps.some((s) => s.step === 'attempt' && s.group === 'feat'), 'no attempt on the primary');
  }
  assert.equal((await mock.model('feat-up')).requests, 2, 'the primary was not touched while the feature circuit was open');
  assert.equal((await mock.model('feat-alt-up')).requests, 3);

  // After the cooldown one request takes the normal path (half-open probe); it meets its budget
  // and closes the circuit.
  await mock.script('feat-up', [{}]);
  await sleep(Math.max(0, 1500 - (Date.now() - t0)) + 100);
  const probe = await chat(gw, ask('feat'));
  assert.equal(probe.status, 200, probe.text);
  assert.equal(probe.headers.get('x-tollgate-degradation'), null, 'the probe was served by the primary');
  assert.equal((await mock.model('feat-up')).requests, 3);
  assert.equal((await circuitOf(gw, 'features', 'feat'))?.state, 'closed');
});

e2e('stale_cache with an open feature circuit: a request degraded before any attempt finds the answer an identical earlier request left', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'fsc', { mode: 'stale_cache', max_age_ms: 60000 }, {
    groupPolicy: { budgets: { deadline_ms: 300 }, feature_circuit: { consecutive_failures: 2, cooldown_ms: 60000 } },
  }));
  // The caller's body as sent: `model` is the group name, which the provider adapter rewrites
  // to the upstream's name for the attempt; the key must be built from the caller's own fields.
  const body = ask('fsc', { max_tokens: 20, temperature: 0 });
  await mock.script('fsc-up', [{ content: 'Paris is the capital of France.' }, { latency_ms: 1000 }]);
  const fresh = await chat(gw, body);
  assert.equal(fresh.status, 200, fresh.text);
  // Two budget misses (the primary now answers after 1 s, past the 300 ms deadline) open the
  // group's feature circuit; each of them is degraded to the stale answer already.
  for (let i = 1; i <= 2; i++) {
    const miss = await chat(gw, body);
    assert.equal(miss.status, 200, `miss ${i}: ${miss.text}`);
    assert.match(miss.headers.get('x-tollgate-degradation') ?? '', /^stale_cache/);
  }
  assert.equal((await circuitOf(gw, 'features', 'fsc'))?.state, 'open');
  const before = (await mock.model('fsc-up')).requests;
  // Open circuit: straight to the degradation, no attempt — and the cache is found.
  const stale = await chat(gw, body);
  assert.equal(stale.status, 200, stale.text);
  assert.match(stale.headers.get('x-tollgate-degradation') ?? '', /^stale_cache; age=\d+s$/);
  assert.equal(stale.json.choices[0].message.content, fresh.json.choices[0].message.content);
  const row = await assertLoggedDegradation(gw, stale, 'stale_cache');
  assert.ok(row.decision.steps.some((s) => /feature circuit/.test(s.reason ?? '')), JSON.stringify(row.decision.steps));
  assert.ok(!row.decision.steps.some((s) => s.step === 'attempt'), 'no attempt while the feature circuit is open');
  // Streaming, the same caller body: the same answer as an event stream.
  const streamed = await chat(gw, { ...body, stream: true });
  assert.equal(streamed.status, 200, streamed.text);
  assert.match(streamed.headers.get('x-tollgate-degradation') ?? '', /^stale_cache/);
  const text = sseData(streamed.text).slice(0, -1).map((c) => c.choices?.[0]?.delta?.content ?? '').join('');
  assert.equal(text, fresh.json.choices[0].message.content);
  assert.equal((await mock.model('fsc-up')).requests, before, 'the primary was not touched');
  // Another body misses: nothing to degrade to, a clean error naming the open circuit.
  const other = await chat(gw, ask('fsc', { max_tokens: 21 }));
  assert.notEqual(other.status, 200, other.text);
  assert.ok(other.json?.error?.message, other.text);
});

// The feature circuit counts budget misses: running out of time, hitting max_request_cost, or
// finding no deployment whose circuit admits traffic (docs/failure_policy.md §4). A request that
// a fallback serves well within its deadline, with no cost ceiling, missed nothing.
e2e('feature circuit: requests served by a fallback within their budgets are not budget misses (the circuit stays closed)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(degradingConfig(mock, 'fcb', { mode: 'equivalent', model: 'fcb-alt' }, {
    more: [openaiDeployment(mock, 'fcb-fb', 'fcb-fb-up'), openaiDeployment(mock, 'fcb-alt', 'fcb-alt-up')],
    litellm_settings: { fallbacks: [{ fcb: ['fcb-fb'] }] },
    groupPolicy: { budgets: { deadline_ms: 5000 }, feature_circuit: { consecutive_failures: 2, cooldown_ms: 30000 } },
  }));
  // The primary answers 503 at once; the fallback serves in a few ms.
  await mock.script('fcb-up', [{ error: 'overloaded' }]);
  for (let i = 1; i <= 4; i++) {
    const r = await chat(gw, ask('fcb'));
    assert.equal(r.status, 200, r.text);
    const what = `request ${i}: ${r.headers.get('x-tollgate-decision')}`;
    assert.equal(r.headers.get('x-litellm-model-group'), 'fcb-fb', `served by the fallback: ${what}`);
    assert.equal(r.headers.get('x-tollgate-degradation'), null, `not degraded: ${what}`);
    assert.ok(serverMs(r) < 1000, what);
  }
  assert.equal((await circuitOf(gw, 'features', 'fcb'))?.state, 'closed');
  assert.deepEqual(await mock.requests('fcb-up', 'fcb-fb-up', 'fcb-alt-up'), { 'fcb-up': 4, 'fcb-fb-up': 4, 'fcb-alt-up': 0 });
});
