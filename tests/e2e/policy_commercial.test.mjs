// Issue 4, Must show: "Commercial limit: no fallback to another provider, an alert raised, the
// client told why" (docs/failure_policy.md §2 "Commercial limit, end to end").
//
// OpenAI's 429 insufficient_quota and Anthropic's 400 billing_error, each with a fallback to the
// other provider configured and a retry budget that would allow retries:
//   - no retry (not even on the group's other deployment), no fallback (the mock shows 0 requests);
//   - GET /tollgate/alerts has a commercial_limit alert naming the provider;
//   - the client gets the upstream's status with a message saying the policy stopped it and
//     why, and `x-tollgate-policy: stop_and_alert; class=commercial_limit`;
//   - the provider circuit is open (GET /tollgate/circuits, /metrics) for
//     commercial_limit_cooldown_ms, so the next request to another deployment of the same
//     provider is not sent upstream.
import assert from 'node:assert/strict';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, chatBody, rejectsWith,
  alertsOf, circuitOf, spendLogOf, metricsText, metricValue,
} from './harness.mjs';

const state = useMock();

const COMMERCIAL_COOLDOWN_MS = 120000;

const CASES = [
  {
    provider: 'openai',
    other: 'anthropic',
    deployment: openaiDeployment,
    otherDeployment: anthropicDeployment,
    error: 'insufficient_quota',
    status: 429,
    type: 'insufficient_quota',
    upstreamSays: 'You exceeded your current quota',
    // The OpenAI SDK on /v1/chat/completions.
    call: (gw, model) => gw.openai().chat.completions.create(chatBody(model, { max_tokens: 16 })).withResponse(),
    errorBody: (err) => err.error,  // OpenAI SDK: the body's `error` object
  },
  {
    provider: 'anthropic',
    other: 'openai',
    deployment: anthropicDeployment,
    otherDeployment: openaiDeployment,
    error: 'insufficient_quota',  // the mock's Anthropic form: 400 billing_error
    status: 400,
    type: 'billing_error',
    upstreamSays: 'Your credit balance is too low',
    // The Anthropic SDK on /v1/messages.
    call: (gw, model) => gw.anthropic().messages.create({
      model, max_tokens: 16, messages: [{ role: 'user', content: 'Say something short.' }],
    }).withResponse(),
    errorBody: (err) => err.error?.error,  // Anthropic SDK: the whole body {type: 'error', error: {...}}
  },
];

/// Starts the gateway of case `c`, checks that the configured fallback works, then sends the
/// request that meets the commercial limit. Returns {gw, err} (err: the SDK's error).
async function meetCommercialLimit(ctx, c) {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      // main-1 is picked first (simple-shuffle weighs by rpm); main-2 would be the retry.
      c.deployment(mock, 'main', 'main-1-up', { id: 'main-1', rpm: 1000000000000 }),
      c.deployment(mock, 'main', 'main-2-up', { id: 'main-2', rpm: 1000 }),
      // Another deployment of the same provider, in another group.
      c.deployment(mock, 'sibling', 'sibling-up', { id: 'sibling-1' }),
      // The configured fallback, on the other provider.
      c.otherDeployment(mock, 'elsewhere', 'elsewhere-up', { id: 'elsewhere-1' }),
    ],
    litellm_settings: { fallbacks: [{ main: ['elsewhere'] }] },
    fallback_policy: {
      provider_circuit: { commercial_limit_cooldown_ms: COMMERCIAL_COOLDOWN_MS },
      defaults: { budgets: { max_retries: 2, max_fallbacks: 2 } },
    },
  }));
  // The fallback works: the policy, not a broken fallback, is what stops the request.
  const probe = await c.call(gw, 'elsewhere');
  assert.equal(probe.response.status, 200);
  await mock.reset();
  await mock.script('main-1-up', [{ error: c.error }]);
  const err = await rejectsWith(c.call(gw, 'main'));
  return { gw, err };
}

const requestsSeen = () => state.mock.requests('main-1-up', 'main-2-up', 'sibling-up', 'elsewhere-up');

for (const c of CASES) {
  e2e(`commercial limit (${c.provider} ${c.type}): no retry, no fallback to ${c.other}, an alert, the client told why, the provider circuit open`, async (ctx) => {
    const { gw, err } = await meetCommercialLimit(ctx, c);

    // 1. The request: stopped, and told why.
    assert.equal(err.status, c.status, String(err));
    const msg = c.errorBody(err)?.message ?? '';
    assert.match(msg, /^Stopped by fallback policy: main \(main-1, provider \w+\) answered commercial_limit; /, msg);
    assert.ok(msg.includes(`provider ${c.provider}`), msg);
    assert.match(msg, /not retried or sent to another provider/, msg);
    assert.match(msg, /an alert was raised/, msg);
    assert.ok(msg.includes(`Upstream said: ${c.upstreamSays}`), msg);
    const h = err.headers;
    assert.equal(h.get('x-tollgate-policy'), 'stop_and_alert; class=commercial_limit');
    assert.equal(h.get('x-litellm-attempted-retries'), '0');
    assert.equal(h.get('x-litellm-attempted-fallbacks'), '0');
    assert.equal(h.get('x-tollgate-attempts'), `main/main-1:commercial_limit(${c.status})`);
    assert.match(h.get('x-tollgate-decision') ?? '', new RegExp(`^main/main-1 ${c.status} commercial_limit->stop; stop \\(stop_and_alert: `));

    // 2. Nothing else was asked: not the group's other deployment, not the other provider.
    assert.deepEqual(await requestsSeen(), { 'main-1-up': 1, 'main-2-up': 0, 'sibling-up': 0, 'elsewhere-up': 0 });

    // 3. The operator's alert names the provider.
    const alerts = await alertsOf(gw);
    const alert = alerts.alerts.find((a) => a.kind === 'commercial_limit');
    assert.ok(alert, JSON.stringify(alerts));
    assert.equal(alert.subject, c.provider);
    assert.ok(alert.message.includes('main-1') && alert.message.includes(c.upstreamSays), alert.message);
    assert.equal(alerts.counts.commercial_limit, 1);
    const opened = alerts.alerts.find((a) => a.kind === 'provider_circuit_open');
    assert.equal(opened?.subject, c.provider, JSON.stringify(alerts));

    // 4. The provider circuit is open for commercial_limit_cooldown_ms; the other provider is not.
    const pc = await circuitOf(gw, 'providers', c.provider);
    assert.equal(pc?.state, 'open', JSON.stringify(pc));
    assert.equal(pc.reason, 'commercial_limit');
    assert.ok(pc.retry_in_ms > COMMERCIAL_COOLDOWN_MS - 10000 && pc.retry_in_ms <= COMMERCIAL_COOLDOWN_MS, JSON.stringify(pc));
    assert.equal((await circuitOf(gw, 'providers', c.other))?.state, 'closed');
    const metrics = await metricsText(gw);
    assert.equal(metricValue(metrics, 'tollgate_circuit_state', { scope: 'provider', id: c.provider }), 2);
    assert.equal(metricValue(metrics, 'tollgate_circuit_state', { scope: 'provider', id: c.other }), 0);
    assert.equal(metricValue(metrics, 'tollgate_circuit_transitions_total', { scope: 'provider', id: c.provider, to: 'open' }), 1);
    assert.equal(metricValue(metrics, 'tollgate_alerts_total', { kind: 'commercial_limit' }), 1);
    assert.equal(metricValue(metrics, 'tollgate_upstream_attempts_total',
      { model_group: 'main', deployment: 'main-1', provider: c.provider, outcome: 'commercial_limit' }), 1);

    // 5. The spend log's decision trace says the same.
    const row = await spendLogOf(gw, h);
    const steps = row.decision.steps;
    assert.deepEqual(steps.filter((s) => s.step === 'attempt').map((s) => [s.deployment, s.provider, s.class, s.action, s.decision]),
      [['main-1', c.provider, 'commercial_limit', 'stop_and_alert', 'stop']]);
    assert.ok(!steps.some((s) => s.step === 'fallback'), JSON.stringify(steps));
    assert.match(steps.find((s) => s.step === 'stop')?.reason ?? '', /^stop_and_alert: commercial_limit/);
    assert.equal(row.decision.outcome, 'failed');

    // 6. The next request to another deployment of the same provider is not sent upstream.
    const next = await rejectsWith(c.call(gw, 'sibling'));
    assert.ok(next.status >= 400, String(next));
    assert.deepEqual(await requestsSeen(), { 'main-1-up': 1, 'main-2-up': 0, 'sibling-up': 0, 'elsewhere-up': 0 });
    const sib = await circuitOf(gw, 'deployments', 'sibling-1');
    assert.equal(sib.state, 'closed', 'the sibling deployment itself did nothing wrong');
    assert.equal(sib.window_requests, 0, 'and was never attempted');
  });

  e2e(`commercial limit (${c.provider} ${c.type}): the client gets the upstream's status and error type`, async (ctx) => {
    const { err } = await meetCommercialLimit(ctx, c);
    // docs/failure_policy.md §2: "the client gets the upstream's status and type with the message ...".
    assert.equal(err.status, c.status, String(err));
    assert.equal(c.errorBody(err)?.type, c.type, `the upstream's error type is kept: ${JSON.stringify(err.error)}`);
  });
}

// A later request to another deployment of the provider is refused: the refusal names the open
// circuit (decision trace: "skipped targets with reasons, circuit states"), it does not blame a
// cooldown or an rpm/tpm limit.
// While the provider's circuit is open for the limit, a later request stops the same way (no
// silent move to another provider), naming the open circuit.
e2e('commercial limit (openai): a later request to another deployment of the provider is refused naming the open circuit', async (ctx) => {
  const c = CASES[0];
  const { gw } = await meetCommercialLimit(ctx, c);
  const next = await rejectsWith(c.call(gw, 'sibling'));
  assert.deepEqual(await requestsSeen(), { 'main-1-up': 1, 'main-2-up': 0, 'sibling-up': 0, 'elsewhere-up': 0 });
  const what = `${next.status} ${JSON.stringify(next.error)}\nx-tollgate-decision: ${next.headers.get('x-tollgate-decision')}`;
  assert.match(next.headers.get('x-tollgate-decision') ?? '', /^skip sibling \(provider circuit open: commercial_limit\); stop \(stop_and_alert: /, what);
  assert.match(c.errorBody(next)?.message ?? '', /^Stopped by fallback policy: provider 'openai' .*circuit is open/, what);
  assert.equal(next.headers.get('x-tollgate-policy'), 'stop_and_alert; class=commercial_limit', what);
  assert.equal(next.status, 429, what);
});

// The stop holds where the commercial limit is met on a fallback target, too: the walk does not
// go on to yet another provider.
e2e('commercial limit on a fallback target: the walk stops there, no further fallback, an alert', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'primary', 'cl-primary-up', { id: 'primary-1' }),
      anthropicDeployment(mock, 'second', 'cl-second-up', { id: 'second-1' }),
      openaiDeployment(mock, 'third', 'cl-third-up', { id: 'third-1' }),
    ],
    litellm_settings: { fallbacks: [{ primary: ['second', 'third'] }] },
    fallback_policy: { defaults: { budgets: { max_retries: 0, max_fallbacks: 2 } } },
  }));
  await mock.script('cl-primary-up', [{ error: 'server_error' }]);
  await mock.script('cl-second-up', [{ error: 'insufficient_quota' }]);
  const r = await gw.fetch('/v1/chat/completions', { body: chatBody('primary', { max_tokens: 16 }) });
  const what = `${r.status} ${r.text}\nx-tollgate-decision: ${r.headers.get('x-tollgate-decision')}`;
  assert.equal(r.headers.get('x-tollgate-attempts'),
    'primary/primary-1:transient_provider_error(500), second/second-1:commercial_limit(400)', what);
  assert.deepEqual(await mock.requests('cl-primary-up', 'cl-second-up', 'cl-third-up'),
    { 'cl-primary-up': 1, 'cl-second-up': 1, 'cl-third-up': 0 }, 'third is not tried');
  assert.match(r.headers.get('x-tollgate-decision') ?? '', /second\/second-1 400 commercial_limit->stop; stop \(stop_and_alert: /, what);
  const alerts = await alertsOf(gw);
  assert.equal(alerts.alerts.find((a) => a.kind === 'commercial_limit')?.subject, 'anthropic', JSON.stringify(alerts));
  assert.equal((await circuitOf(gw, 'providers', 'anthropic'))?.state, 'open');
  assert.equal((await circuitOf(gw, 'providers', 'openai'))?.state, 'closed');
  // The client is told why: the commercial limit's status and the policy's explanation, not the
  // primary's earlier 500.
  assert.equal(r.headers.get('x-tollgate-policy'), 'stop_and_alert; class=commercial_limit', what);
  assert.match(r.json?.error?.message ?? '', /^Stopped by fallback policy: second \(second-1, provider anthropic\) answered commercial_limit/, what);
  assert.equal(r.status, 400, what);
});

// While the limit lasts, the group that met it does not quietly move to the other provider: a
// second provider would hide the billing problem for every request after the first.
e2e('commercial limit: later requests to the same group stop too, the other-provider fallback stays unused', async (ctx) => {
  const c = CASES[0];
  const { gw } = await meetCommercialLimit(ctx, c);
  for (let i = 0; i < 3; ++i) {
    const again = await rejectsWith(c.call(gw, 'main'));
    const what = `${again.status} ${JSON.stringify(again.error)}\nx-tollgate-decision: ${again.headers.get('x-tollgate-decision')}`;
    assert.equal(again.status, 429, what);
    assert.equal(again.headers.get('x-tollgate-policy'), 'stop_and_alert; class=commercial_limit', what);
    assert.match(c.errorBody(again)?.message ?? '', /provider 'openai' of model group 'main' answered a commercial limit/, what);
  }
  assert.deepEqual(await requestsSeen(), { 'main-1-up': 1, 'main-2-up': 0, 'sibling-up': 0, 'elsewhere-up': 0 });
});
