// Issue 4, Must show: "Deployment and provider circuits open, half-open and close, observable at
// the admin endpoint and in metrics" (docs/failure_policy.md §4).
//
// - deployment circuit, consecutive trigger: N failures in a row open it (GET /tollgate/circuits,
//   tollgate_circuit_state = 2); meanwhile the group's other deployment serves (mock counts);
//   after cooldown_ms it is half-open (state 1) and of several concurrent requests exactly one
//   probe reaches it; the probe's success closes it (state 0); a failed probe reopens it; every
//   transition is counted in tollgate_circuit_transitions_total;
// - deployment circuit, ratio trigger: failure_ratio over window_ms with min_requests;
// - provider circuit: open_ratio with min_deployments; while open, its remaining deployments are
//   skipped (not sent upstream); half-open after cooldown_ms with a single probe; closes on success.
import assert from 'node:assert/strict';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, chatBody, waitFor,
  circuitOf, alertsOf, spendLogOf, metricsText, metricValue,
} from './harness.mjs';

const state = useMock();

const chat = (gw, model) => gw.fetch('/v1/chat/completions', { body: chatBody(model, { max_tokens: 16 }) });

/// {state, transitions: {open, half_open, closed}} of one circuit, from /metrics.
async function metricsOf(gw, scope, id) {
  const text = await metricsText(gw);
  const t = (to) => metricValue(text, 'tollgate_circuit_transitions_total', { scope, id, to }) ?? 0;
  return {
    state: metricValue(text, 'tollgate_circuit_state', { scope, id }),
    transitions: { open: t('open'), half_open: t('half_open'), closed: t('closed') },
  };
}

/// Polls GET /tollgate/circuits until the circuit is in `want`; returns it.
const circuitBecomes = (gw, scope, id, want, timeoutMs = 5000) =>
  waitFor(async () => {
    const c = await circuitOf(gw, scope, id);
    return c?.state === want ? c : null;
  }, { timeoutMs, intervalMs: 20, what: `${scope} ${id} to be ${want}` });

// ---------------------------------------------------------------------------------
// Deployment circuit

const COOLDOWN_MS = 800;

/// Group svc: svc-a (picked first: rpm weight; svc-b first is 1 in 10^9) and svc-b. One retry,
/// so a request whose attempt on svc-a fails is served by svc-b.
function svcConfig(mock, circuit) {
  return gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'svc', 'svc-a-up', { id: 'svc-a', rpm: 1000000000000 }),
      openaiDeployment(mock, 'svc', 'svc-b-up', { id: 'svc-b', rpm: 1000 }),
    ],
    fallback_policy: { defaults: { budgets: { max_retries: 1 }, circuit } },
  });
}

e2e('deployment circuit: consecutive failures open it, the other deployment serves, half-open lets exactly one probe through, success closes, a failed probe reopens', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(svcConfig(mock, { consecutive_failures: 3, cooldown_ms: COOLDOWN_MS }));
  await mock.script('svc-a-up', [{ error: 'server_error' }]);

  // Closed: metrics show it before any traffic.
  assert.deepEqual(await metricsOf(gw, 'deployment', 'svc-a'), { state: 0, transitions: { open: 0, half_open: 0, closed: 0 } });

  // 1. Three failures in a row (each request retried on svc-b and served) open svc-a.
  for (let i = 1; i <= 3; i++) {
    const r = await chat(gw, 'svc');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-tollgate-attempts'), 'svc/svc-a:transient_provider_error(500), svc/svc-b:ok(200)');
    const c = await circuitOf(gw, 'deployments', 'svc-a');
    if (i < 3) {
      assert.equal(c.state, 'closed', `after ${i} failure(s): ${JSON.stringify(c)}`);
      assert.equal(c.consecutive_failures, i);
    } else {
      assert.equal(c.state, 'open', JSON.stringify(c));
      assert.equal(c.reason, '3 consecutive failures');
      assert.equal(c.opened_total, 1);
      assert.ok(c.retry_in_ms > 0 && c.retry_in_ms <= COOLDOWN_MS, JSON.stringify(c));
    }
  }
  assert.deepEqual(await metricsOf(gw, 'deployment', 'svc-a'), { state: 2, transitions: { open: 1, half_open: 0, closed: 0 } });
  assert.equal((await circuitOf(gw, 'deployments', 'svc-b')).state, 'closed');

  // 2. While open, requests go straight to svc-b: svc-a is not sent anything.
  for (let i = 0; i < 3; i++) {
    const r = await chat(gw, 'svc');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-tollgate-attempts'), 'svc/svc-b:ok(200)');
    assert.equal(r.headers.get('x-litellm-attempted-retries'), '0');
  }
  assert.deepEqual(await mock.requests('svc-a-up', 'svc-b-up'), { 'svc-a-up': 3, 'svc-b-up': 6 });

  // 3. After the cooldown: half-open (admin endpoint and metrics).
  await mock.script('svc-a-up', [{ content: 'probe ok', latency_ms: 300 }]);
  const half = await circuitBecomes(gw, 'deployments', 'svc-a', 'half_open', COOLDOWN_MS + 3000);
  assert.equal(half.retry_in_ms, 0);
  assert.deepEqual(await metricsOf(gw, 'deployment', 'svc-a'), { state: 1, transitions: { open: 1, half_open: 1, closed: 0 } });

  // 4. Five concurrent requests: exactly one probe reaches svc-a (slow, so the others arrive
  //    while it is out); the other four are served by svc-b.
  const burst = await Promise.all(Array.from({ length: 5 }, () => chat(gw, 'svc')));
  for (const r of burst) assert.equal(r.status, 200, r.text);
  assert.deepEqual(await mock.requests('svc-a-up', 'svc-b-up'), { 'svc-a-up': 4, 'svc-b-up': 10 }, 'one probe');
  const probes = burst.filter((r) => r.headers.get('x-litellm-model-id') === 'svc-a');
  assert.equal(probes.length, 1);
  assert.equal(probes[0].json.choices[0].message.content, 'probe ok');
  assert.match(probes[0].headers.get('x-tollgate-decision'), /^svc\/svc-a\(probe\) ok; /);
  const probeRow = await spendLogOf(gw, probes[0].headers);
  assert.equal(probeRow.decision.steps.find((s) => s.step === 'attempt')?.circuit, 'half_open');

  // 5. The probe's success closed it.
  const closed = await circuitOf(gw, 'deployments', 'svc-a');
  assert.equal(closed.state, 'closed', JSON.stringify(closed));
  assert.equal(closed.consecutive_failures, 0);
  assert.deepEqual(await metricsOf(gw, 'deployment', 'svc-a'), { state: 0, transitions: { open: 1, half_open: 1, closed: 1 } });
  const r = await chat(gw, 'svc');
  assert.equal(r.headers.get('x-tollgate-attempts'), 'svc/svc-a:ok(200)', 'closed: svc-a takes traffic again');

  // 6. A failed probe reopens it: open again (3 failures), half-open, the probe fails.
  await mock.script('svc-a-up', [{ error: 'server_error' }]);
  for (let i = 0; i < 3; i++) assert.equal((await chat(gw, 'svc')).status, 200);
  assert.equal((await circuitOf(gw, 'deployments', 'svc-a')).state, 'open');
  await circuitBecomes(gw, 'deployments', 'svc-a', 'half_open', COOLDOWN_MS + 3000);
  const before = await mock.requests('svc-a-up');
  const failedProbe = await chat(gw, 'svc');
  assert.equal(failedProbe.status, 200, 'the failed probe is retried on svc-b');
  assert.equal(failedProbe.headers.get('x-tollgate-attempts'), 'svc/svc-a:transient_provider_error(500), svc/svc-b:ok(200)');
  assert.match(failedProbe.headers.get('x-tollgate-decision'), /^svc\/svc-a\(probe\) 500 transient_provider_error->retry; svc\/svc-b ok; /);
  assert.equal((await mock.requests('svc-a-up'))['svc-a-up'], before['svc-a-up'] + 1);
  const reopened = await circuitOf(gw, 'deployments', 'svc-a');
  assert.equal(reopened.state, 'open', JSON.stringify(reopened));
  assert.equal(reopened.reason, 'probe failed');
  assert.equal(reopened.opened_total, 3);
  assert.ok(reopened.retry_in_ms > 0 && reopened.retry_in_ms <= COOLDOWN_MS, JSON.stringify(reopened));
  assert.deepEqual(await metricsOf(gw, 'deployment', 'svc-a'), { state: 2, transitions: { open: 3, half_open: 2, closed: 1 } });

  // svc-b never left closed; the attempts metric counts what the mock saw.
  assert.deepEqual(await metricsOf(gw, 'deployment', 'svc-b'), { state: 0, transitions: { open: 0, half_open: 0, closed: 0 } });
  const text = await metricsText(gw);
  const seen = await mock.requests('svc-a-up', 'svc-b-up');
  assert.equal(metricValue(text, 'tollgate_upstream_attempts_total', { deployment: 'svc-a' }), seen['svc-a-up']);
  assert.equal(metricValue(text, 'tollgate_upstream_attempts_total', { deployment: 'svc-b' }), seen['svc-b-up']);
});

e2e('deployment circuit: the failure ratio over the window opens it once min_requests is reached, not before', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(svcConfig(mock, {
    consecutive_failures: 100, failure_ratio: 0.5, window_ms: 20000, min_requests: 6, cooldown_ms: 60000,
  }));
  // 2 failures (ratio 1.0, but only 2 attempts), 3 successes, 1 failure: 3 of 6 = 0.5.
  await mock.script('svc-a-up', [{ error: 'server_error' }, { error: 'server_error' }, {}, {}, {}, { error: 'server_error' }, {}]);
  const expectAfter = [
    { state: 'closed', window_requests: 1, window_failures: 1, consecutive_failures: 1 },
    { state: 'closed', window_requests: 2, window_failures: 2, consecutive_failures: 2 },
    { state: 'closed', window_requests: 3, window_failures: 2, consecutive_failures: 0 },
    { state: 'closed', window_requests: 4, window_failures: 2, consecutive_failures: 0 },
    { state: 'closed', window_requests: 5, window_failures: 2, consecutive_failures: 0 },
    { state: 'open', window_requests: 6, window_failures: 3, consecutive_failures: 1 },
  ];
  for (const [i, want] of expectAfter.entries()) {
    const r = await chat(gw, 'svc');
    assert.equal(r.status, 200, r.text);
    const c = await circuitOf(gw, 'deployments', 'svc-a');
    const got = Object.fromEntries(Object.keys(want).map((k) => [k, c[k]]));
    assert.deepEqual(got, want, `after request ${i + 1}: ${JSON.stringify(c)}`);
  }
  const c = await circuitOf(gw, 'deployments', 'svc-a');
  assert.equal(c.reason, 'failure ratio 0.50 over 20000 ms');
  assert.equal((await metricsOf(gw, 'deployment', 'svc-a')).state, 2);
  // Open: the next request does not reach svc-a.
  const r = await chat(gw, 'svc');
  assert.equal(r.headers.get('x-tollgate-attempts'), 'svc/svc-b:ok(200)');
  assert.equal((await mock.requests('svc-a-up'))['svc-a-up'], 6);
});

// ---------------------------------------------------------------------------------
// Provider circuit

e2e('provider circuit: opens when open_ratio of its deployments are open (given min_deployments), its other deployments are skipped, half-open lets one probe through, success closes it', async (ctx) => {
  const { mock } = state;
  const PROVIDER_COOLDOWN_MS = 700;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'g1', 'o1-up', { id: 'o1' }),
      openaiDeployment(mock, 'g2', 'o2-up', { id: 'o2' }),
      openaiDeployment(mock, 'g3', 'o3-up', { id: 'o3' }),
      openaiDeployment(mock, 'g4', 'o4-up', { id: 'o4' }),
      anthropicDeployment(mock, 'cl', 'cl-up', { id: 'cl-1' }),
      anthropicDeployment(mock, 'cl2', 'cl2-up', { id: 'cl2-1' }),
    ],
    litellm_settings: { fallbacks: [{ g3: ['cl'] }] },
    fallback_policy: {
      provider_circuit: { open_ratio: 0.5, min_deployments: 3, cooldown_ms: PROVIDER_COOLDOWN_MS },
      defaults: {
        budgets: { max_retries: 0, max_fallbacks: 1 },
        // One failure opens a deployment, for longer than the whole test.
        circuit: { consecutive_failures: 1, cooldown_ms: 60000 },
      },
    },
  }));
  for (const up of ['o1-up', 'o2-up', 'cl2-up']) await mock.script(up, [{ error: 'server_error' }]);
  const counts = () => mock.requests('o1-up', 'o2-up', 'o3-up', 'o4-up', 'cl-up', 'cl2-up');

  // 0. min_deployments: anthropic has 2 deployments (< 3); one of them open is a ratio of 0.5,
  //    but the provider stays closed.
  assert.equal((await chat(gw, 'cl2')).status, 500);
  assert.equal((await circuitOf(gw, 'deployments', 'cl2-1')).state, 'open');
  assert.equal((await circuitOf(gw, 'providers', 'anthropic')).state, 'closed');

  // 1. One of openai's four deployments open: 0.25 < 0.5, the provider stays closed.
  assert.equal((await chat(gw, 'g1')).status, 500);
  assert.equal((await circuitOf(gw, 'deployments', 'o1')).state, 'open');
  assert.equal((await circuitOf(gw, 'providers', 'openai')).state, 'closed');
  assert.equal((await metricsOf(gw, 'provider', 'openai')).state, 0);

  // 2. Two of four: the provider opens.
  assert.equal((await chat(gw, 'g2')).status, 500);
  const open = await circuitOf(gw, 'providers', 'openai');
  assert.equal(open.state, 'open', JSON.stringify(open));
  assert.equal(open.reason, '2 of 4 deployments open');
  assert.ok(open.retry_in_ms > 0 && open.retry_in_ms <= PROVIDER_COOLDOWN_MS, JSON.stringify(open));
  assert.deepEqual(await metricsOf(gw, 'provider', 'openai'), { state: 2, transitions: { open: 1, half_open: 0, closed: 0 } });
  assert.deepEqual(await metricsOf(gw, 'provider', 'anthropic'), { state: 0, transitions: { open: 0, half_open: 0, closed: 0 } });
  const alerts = await alertsOf(gw);
  const alert = alerts.alerts.find((a) => a.kind === 'provider_circuit_open');
  assert.equal(alert?.subject, 'openai', JSON.stringify(alerts));
  assert.match(alert.message, /2 of 4 deployments open/);

  // 3. Its remaining deployments (o3, o4: closed themselves) are skipped: g3 goes to its fallback
  //    on anthropic, g4 (no fallback) is refused; neither o3 nor o4 is sent anything.
  const viaFallback = await chat(gw, 'g3');
  assert.equal(viaFallback.status, 200, viaFallback.text);
  assert.equal(viaFallback.headers.get('x-tollgate-attempts'), 'cl/cl-1:ok(200)');
  const refused = await chat(gw, 'g4');
  assert.equal(refused.status, 429, refused.text);
  assert.deepEqual(await counts(), { 'o1-up': 1, 'o2-up': 1, 'o3-up': 0, 'o4-up': 0, 'cl-up': 1, 'cl2-up': 1 });
  for (const id of ['o3', 'o4']) {
    const c = await circuitOf(gw, 'deployments', id);
    assert.equal(c.state, 'closed', JSON.stringify(c));
    assert.equal(c.window_requests, 0);
  }

  // 4. After the provider's cooldown: half-open.
  await mock.script('o3-up', [{ content: 'probe ok', latency_ms: 300 }]);
  await circuitBecomes(gw, 'providers', 'openai', 'half_open', PROVIDER_COOLDOWN_MS + 3000);
  assert.deepEqual(await metricsOf(gw, 'provider', 'openai'), { state: 1, transitions: { open: 1, half_open: 1, closed: 0 } });

  // 5. Three concurrent requests to g3: one probe reaches o3, the other two go to the fallback.
  const burst = await Promise.all([0, 1, 2].map(() => chat(gw, 'g3')));
  for (const r of burst) assert.equal(r.status, 200, r.text);
  assert.deepEqual(await mock.requests('o3-up', 'cl-up'), { 'o3-up': 1, 'cl-up': 3 }, 'one probe');
  const probe = burst.find((r) => r.headers.get('x-litellm-model-id') === 'o3');
  assert.ok(probe, 'one request was served by the probe');
  assert.match(probe.headers.get('x-tollgate-decision'), /^g3\/o3\(probe\) ok; /);

  // 6. The probe's success closed the provider: g4 reaches o4 again.
  const closed = await circuitOf(gw, 'providers', 'openai');
  assert.equal(closed.state, 'closed', JSON.stringify(closed));
  assert.deepEqual(await metricsOf(gw, 'provider', 'openai'), { state: 0, transitions: { open: 1, half_open: 1, closed: 1 } });
  const again = await chat(gw, 'g4');
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers.get('x-tollgate-attempts'), 'g4/o4:ok(200)');
  // o1 and o2 are still open (their own 60 s cooldown).
  assert.equal((await circuitOf(gw, 'deployments', 'o1')).state, 'open');
});

// Issue 4 §6: the decision trace lists "skipped targets with reasons, circuit states". A group
// whose only deployment is behind an open circuit is skipped: the trace says so ("skip <group>
// (circuit open)") and, with nothing else to serve it, the refusal names the open circuit rather
// than a cooldown or an rpm/tpm limit.
e2e('a group skipped because its deployment\'s circuit is open is named in the decision trace and in the refusal', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'solo', 'solo-up', { id: 'solo-1' }),
      openaiDeployment(mock, 'lone', 'lone-up', { id: 'lone-1' }),
      openaiDeployment(mock, 'spare', 'spare-up', { id: 'spare-1' }),  // openai: 2 of 3 open, provider stays closed
      anthropicDeployment(mock, 'backup', 'backup-up', { id: 'backup-1' }),
    ],
    litellm_settings: { fallbacks: [{ solo: ['backup'] }] },
    fallback_policy: { defaults: { budgets: { max_retries: 0 }, circuit: { consecutive_failures: 1, cooldown_ms: 60000 } } },
  }));
  await mock.script('solo-up', [{ error: 'server_error' }]);
  await mock.script('lone-up', [{ error: 'server_error' }]);
  // One failure each opens solo-1 and lone-1.
  assert.equal((await chat(gw, 'solo')).headers.get('x-tollgate-attempts'),
    'solo/solo-1:transient_provider_error(500), backup/backup-1:ok(200)');
  assert.equal((await chat(gw, 'lone')).status, 500);
  for (const id of ['solo-1', 'lone-1']) assert.equal((await circuitOf(gw, 'deployments', id)).state, 'open', id);
  assert.equal((await circuitOf(gw, 'providers', 'openai')).state, 'closed');

  const viaFallback = await chat(gw, 'solo');
  const refused = await chat(gw, 'lone');
  assert.deepEqual(await mock.requests('solo-up', 'lone-up', 'backup-up'), { 'solo-up': 1, 'lone-up': 1, 'backup-up': 2 });
  assert.equal(viaFallback.status, 200, viaFallback.text);
  assert.equal(refused.status, 429, refused.text);
  const fbWhat = `x-tollgate-decision: ${viaFallback.headers.get('x-tollgate-decision')}`;
  assert.match(viaFallback.headers.get('x-tollgate-decision') ?? '', /^skip solo \(deployment circuit open\); backup\/backup-1 ok; /, fbWhat);
  const refusedWhat = `${refused.text}\nx-tollgate-decision: ${refused.headers.get('x-tollgate-decision')}`;
  assert.match(refused.headers.get('x-tollgate-decision') ?? '', /^skip lone \(deployment circuit open\); /, refusedWhat);
  assert.match(refused.json?.error?.message ?? '', /circuit is open/, refusedWhat);
});
