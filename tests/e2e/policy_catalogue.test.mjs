// Issue 4, Must show: "a table-driven e2e test over the simulator's whole error catalogue: each
// outcome lands in its documented class and takes its documented action".
//
// One row per outcome of tools/mock/README.md (every named error, on the OpenAI and on the
// Anthropic endpoint; the bare statuses the default table names explicitly; the transport
// faults), with the class and action of the default table (docs/failure_policy.md §1-2,
// src/policy/failure.cpp). Every row runs the same topology on a fresh gateway:
//
//   p (primary, the family under test): p-a (picked first: rpm weight), p-b
//   fallbacks: p → fb;  context_window_fallbacks: p → ctx;  content_policy_fallbacks: p → cp
//   budgets: max_retries 1, max_fallbacks 1
//
// and checks, from the response headers, the spend log's decision trace and the mock's own
// counts, the class the attempt got and that its action happened:
//   retry_then_fallback / retry_with_circuit → p-a, retried on p-b, then served by fb;
//   fallback → no retry, straight to ctx (context_overflow) or cp (content_policy);
//   fail_fast → no retry, no fallback, the upstream's status;
//   stop_and_alert → no retry, no fallback, the upstream's status, an alert, x-tollgate-policy;
//   next_deployment → p-a's circuit opens (alert), p-b serves, the next request skips p-a.
// Then: transport faults with no fallback left (the gateway's 502/504), reset/empty on a reused
// keep-alive connection (still one upstream request per attempt), and a per-group YAML override.
import assert from 'node:assert/strict';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, chatBody,
  alertsOf, circuitOf, spendLogOf,
} from './harness.mjs';

const state = useMock();

const UP = { a: 'p-a-up', b: 'p-b-up', fb: 'fb-up', ctx: 'ctx-up', cp: 'cp-up' };
const RETRY = new Set(['retry_then_fallback', 'retry_with_circuit']);

const deploymentOf = { openai: openaiDeployment, anthropic: anthropicDeployment };

/// The row topology. `depParams` go to both deployments of `p` (e.g. a short timeout).
function catalogueConfig(mock, family, { depParams = {}, fallback_policy } = {}) {
  const dep = deploymentOf[family];
  return gatewayConfig({
    model_list: [
      // simple-shuffle weighs by rpm when every deployment declares one: p-a first (p-b first: 1 in 10^9).
      dep(mock, 'p', UP.a, { id: 'p-a', rpm: 1000000000000, ...depParams }),
      dep(mock, 'p', UP.b, { id: 'p-b', rpm: 1000, ...depParams }),
      openaiDeployment(mock, 'fb', UP.fb, { id: 'fb-1' }),
      openaiDeployment(mock, 'ctx', UP.ctx, { id: 'ctx-1' }),
      openaiDeployment(mock, 'cp', UP.cp, { id: 'cp-1' }),
    ],
    litellm_settings: {
      fallbacks: [{ p: ['fb'] }],
      context_window_fallbacks: [{ p: ['ctx'] }],
      content_policy_fallbacks: [{ p: ['cp'] }],
    },
    fallback_policy: fallback_policy ?? {
      defaults: {
        budgets: { max_retries: 1, max_fallbacks: 1 },
        // Long enough that an opened circuit is still open for the follow-up request.
        circuit: { cooldown_ms: 10000 },
      },
    },
  });
}

// ---------------------------------------------------------------------------------
// The table

const CAP = ['retryable_capacity', 'retry_then_fallback'];
const TRANSIENT = ['transient_provider_error', 'retry_with_circuit'];
const CALLER = ['caller_fix_required', 'fail_fast'];
const CONTEXT = ['context_overflow', 'fallback'];
const CONTENT = ['content_policy', 'fallback'];
const COMMERCIAL = ['commercial_limit', 'stop_and_alert'];
const MISCONF = ['deployment_misconfigured', 'next_deployment'];
const UNKNOWN = ['unknown_outcome', 'retry_then_fallback'];

/// [name, behaviour, {openai: [upstream status, class, action], anthropic: [...]}, client status when
/// nothing else serves it (transport faults: the gateway's own)]
const row = (name, behavior, openai, anthropic = openai, extra = {}) => ({ name, behavior, openai, anthropic, ...extra });
const ROWS = [
  // Named errors (tools/mock/README.md "Named errors", every one).
  row('rate_limit_exceeded', { error: 'rate_limit_exceeded', retry_after_ms: 10 }, [429, ...CAP]),
  row('insufficient_quota', { error: 'insufficient_quota' }, [429, ...COMMERCIAL], [400, ...COMMERCIAL]),
  row('context_length_exceeded', { error: 'context_length_exceeded' }, [400, ...CONTEXT]),
  row('content_filter', { error: 'content_filter' }, [400, ...CONTENT]),
  row('invalid_api_key', { error: 'invalid_api_key' }, [401, ...MISCONF]),
  row('permission', { error: 'permission' }, [403, ...MISCONF]),
  row('not_found', { error: 'not_found' }, [404, ...CALLER]),
  row('invalid_request', { error: 'invalid_request' }, [400, ...CALLER]),
  row('request_too_large', { error: 'request_too_large' }, [413, ...CALLER]),
  row('server_error', { error: 'server_error' }, [500, ...TRANSIENT]),
  row('bad_gateway_html', { error: 'bad_gateway_html' }, [502, ...TRANSIENT]),
  row('overloaded', { error: 'overloaded' }, [503, ...CAP]),
  row('overloaded_529', { error: 'overloaded_529' }, [529, ...CAP]),
  row('timeout', { error: 'timeout' }, [504, ...CAP]),
  // Bare statuses the default table names (generic bodies of each family).
  row('status 402', { status: 402 }, [402, ...COMMERCIAL]),
  row('status 408', { status: 408 }, [408, ...CAP]),
  row('status 422', { status: 422 }, [422, ...CALLER]),
  // Transport faults (non-streaming). Status 0 = no HTTP status for the attempt (the trace's "-").
  row('fault reset (RST after the request was read)', { fault: 'reset' }, [0, ...UNKNOWN], undefined, { clientStatus: 502 }),
  row('fault empty (orderly close, no bytes)', { fault: 'empty' }, [0, ...UNKNOWN], undefined, { clientStatus: 502 }),
  row('fault hang (deployment timeout 0.3 s)', { fault: 'hang' }, [0, ...UNKNOWN], undefined,
    { clientStatus: 504, depParams: { timeout: 0.3 } }),
  row('fault garbage (200, non-JSON body)', { fault: 'garbage' }, [200, ...TRANSIENT], undefined, { clientStatus: 502 }),
  row('fault truncate (half the body, then close)', { fault: 'truncate' }, [200, ...UNKNOWN], undefined, { clientStatus: 502 }),
];

// ---------------------------------------------------------------------------------
// Checks

const attemptEntry = (group, dep, cls, status) => `${group}/${dep}:${cls}${status ? `(${status})` : ''}`;
const attemptSteps = (decision) => decision.steps.filter((s) => s.step === 'attempt');

async function runRow(ctx, r, family) {
  const { mock } = state;
  const [status, cls, action] = r[family];
  const gw = await ctx.gateway(catalogueConfig(mock, family, { depParams: r.depParams }));
  await mock.script(UP.a, [r.behavior]);
  // next_deployment: the group's other deployment is healthy; otherwise it fails the same way.
  await mock.script(UP.b, [action === 'next_deployment' ? { content: 'from p-b' } : r.behavior]);
  await mock.script(UP.fb, [{ content: 'from fb' }]);
  await mock.script(UP.ctx, [{ content: 'from ctx' }]);
  await mock.script(UP.cp, [{ content: 'from cp' }]);

  const res = await gw.fetch('/v1/chat/completions', { body: chatBody('p', { max_tokens: 16 }) });
  const h = res.headers;
  const what = `${family} ${r.name}: ${res.status} ${res.text.slice(0, 300)}\n` +
    `x-tollgate-attempts: ${h.get('x-tollgate-attempts')}\nx-tollgate-decision: ${h.get('x-tollgate-decision')}`;
  const counts = await mock.requests(UP.a, UP.b, UP.fb, UP.ctx, UP.cp);
  const attempts = h.get('x-tollgate-attempts') ?? '';
  const decisionHeader = h.get('x-tollgate-decision') ?? '';

  // The class: the first attempt's entry in the headers and in the spend log's trace.
  const first = attemptEntry('p', 'p-a', cls, status);
  assert.ok(attempts.startsWith(first), `class: expected x-tollgate-attempts to start with ${first}\n${what}`);
  assert.ok(decisionHeader.startsWith(`p/p-a ${status || '-'} ${cls}->`), `x-tollgate-decision names the class\n${what}`);
  const row = await spendLogOf(gw, h);
  const steps = attemptSteps(row.decision);
  assert.ok(steps.length >= 1, what);
  assert.equal(steps[0].deployment, 'p-a', what);
  assert.equal(steps[0].class, cls, `spend log class\n${what}`);
  assert.equal(steps[0].action, action, `spend log action\n${what}`);
  assert.equal(steps[0].status, status, what);

  // The action.
  if (RETRY.has(action)) {
    assert.equal(res.status, 200, `retried, then served by the fallback\n${what}`);
    assert.equal(res.json.choices[0].message.content, 'from fb', what);
    assert.equal(h.get('x-litellm-model-id'), 'fb-1', what);
    assert.equal(h.get('x-litellm-attempted-retries'), '1', what);
    assert.equal(h.get('x-litellm-attempted-fallbacks'), '1', what);
    assert.deepEqual(counts, { [UP.a]: 1, [UP.b]: 1, [UP.fb]: 1, [UP.ctx]: 0, [UP.cp]: 0 }, what);
    assert.equal(attempts, [first, attemptEntry('p', 'p-b', cls, status), 'fb/fb-1:ok(200)'].join(', '), what);
    assert.deepEqual(steps.map((s) => [s.deployment, s.class, s.decision]),
      [['p-a', cls, 'retry'], ['p-b', cls, 'fallback'], ['fb-1', null, 'served']], what);
    assert.ok(row.decision.steps.some((s) => s.step === 'fallback' && s.group === 'fb'), what);
    assert.match(decisionHeader, /retries=1\/1 fallbacks=1\/1 /, what);
  } else if (action === 'fallback') {
    const [target, up] = cls === 'context_overflow' ? ['ctx', UP.ctx] : ['cp', UP.cp];
    assert.equal(res.status, 200, `straight to the ${target} fallback list\n${what}`);
    assert.equal(res.json.choices[0].message.content, `from ${target}`, what);
    assert.equal(h.get('x-litellm-model-id'), `${target}-1`, what);
    assert.equal(h.get('x-litellm-attempted-retries'), '0', `no retry\n${what}`);
    assert.equal(h.get('x-litellm-attempted-fallbacks'), '1', what);
    assert.deepEqual(counts, { [UP.a]: 1, [UP.b]: 0, [UP.fb]: 0, [UP.ctx]: 0, [UP.cp]: 0, [up]: 1 }, what);
    assert.deepEqual(steps.map((s) => [s.deployment, s.decision]), [['p-a', 'fallback'], [`${target}-1`, 'served']], what);
  } else if (action === 'fail_fast') {
    assert.equal(res.status, status, `the upstream's status\n${what}`);
    assert.equal(h.get('x-litellm-attempted-retries'), '0', what);
    assert.equal(h.get('x-litellm-attempted-fallbacks'), '0', what);
    assert.deepEqual(counts, { [UP.a]: 1, [UP.b]: 0, [UP.fb]: 0, [UP.ctx]: 0, [UP.cp]: 0 }, what);
    assert.equal(steps.length, 1, what);
    assert.equal(steps[0].decision, 'stop', what);
    assert.ok(row.decision.steps.some((s) => s.step === 'stop' && /^fail_fast/.test(s.reason ?? '')), what);
    assert.equal(row.decision.outcome, 'failed', what);
  } else if (action === 'stop_and_alert') {
    assert.equal(res.status, status, `the upstream's status\n${what}`);
    assert.equal(h.get('x-tollgate-policy'), `stop_and_alert; class=${cls}`, what);
    assert.match(res.json?.error?.message ?? '', /^Stopped by fallback policy: /, what);
    assert.equal(h.get('x-litellm-attempted-retries'), '0', what);
    assert.equal(h.get('x-litellm-attempted-fallbacks'), '0', what);
    assert.deepEqual(counts, { [UP.a]: 1, [UP.b]: 0, [UP.fb]: 0, [UP.ctx]: 0, [UP.cp]: 0 }, what);
    assert.equal(steps.length, 1, what);
    const alerts = await alertsOf(gw);
    const alert = alerts.alerts.find((a) => a.kind === cls);
    assert.ok(alert, `an alert of kind ${cls}: ${JSON.stringify(alerts)}`);
    assert.equal(alert.subject, family, 'the alert names the provider');
  } else if (action === 'next_deployment') {
    assert.equal(res.status, 200, `the group's other deployment serves\n${what}`);
    assert.equal(res.json.choices[0].message.content, 'from p-b', what);
    assert.equal(h.get('x-litellm-model-id'), 'p-b', what);
    assert.equal(h.get('x-litellm-attempted-retries'), '1', `the next deployment counts as a retry\n${what}`);
    assert.equal(h.get('x-litellm-attempted-fallbacks'), '0', what);
    assert.deepEqual(counts, { [UP.a]: 1, [UP.b]: 1, [UP.fb]: 0, [UP.ctx]: 0, [UP.cp]: 0 }, what);
    assert.deepEqual(steps.map((s) => [s.deployment, s.decision]), [['p-a', 'next_deployment'], ['p-b', 'served']], what);
    const circuit = await circuitOf(gw, 'deployments', 'p-a');
    assert.equal(circuit?.state, 'open', `p-a's circuit is open: ${JSON.stringify(circuit)}`);
    assert.equal(circuit.reason, cls);
    assert.ok(circuit.retry_in_ms > 0, JSON.stringify(circuit));
    assert.equal((await circuitOf(gw, 'deployments', 'p-b'))?.state, 'closed');
    const alerts = await alertsOf(gw);
    const alert = alerts.alerts.find((a) => a.kind === cls);
    assert.ok(alert, `an alert of kind ${cls}: ${JSON.stringify(alerts)}`);
    assert.equal(alert.subject, 'p-a', 'the alert names the deployment');
    // While p-a is open, the next request goes to p-b without touching p-a.
    const next = await gw.fetch('/v1/chat/completions', { body: chatBody('p', { max_tokens: 16 }) });
    assert.equal(next.status, 200, next.text);
    assert.equal(next.headers.get('x-litellm-model-id'), 'p-b');
    assert.equal(next.headers.get('x-tollgate-attempts'), 'p/p-b:ok(200)');
    assert.deepEqual(await mock.requests(UP.a, UP.b), { [UP.a]: 1, [UP.b]: 2 }, 'p-a was not sent the next request');
  } else {
    assert.fail(`no check for action ${action}`);
  }

  // Failures that fell through to the client carry the expected status.
  if (r.clientStatus && !RETRY.has(action)) assert.equal(res.status, r.clientStatus, what);
}

for (const family of ['openai', 'anthropic']) {
  for (const r of ROWS) {
    const [, cls, action] = r[family];
    e2e(`catalogue ${family}: ${r.name} → ${cls} → ${action}`, (ctx) => runRow(ctx, r, family));
  }
}

// With nothing to fall back to, an unserved transport failure reaches the client with the
// gateway's own status (502 / 504): the fault rows above are served by fb, so check it once here.
for (const [fault, clientStatus, depParams] of [['reset', 502], ['empty', 502], ['garbage', 502], ['truncate', 502], ['hang', 504, { timeout: 0.3 }]]) {
  e2e(`catalogue openai: fault ${fault} with no fallback left → ${clientStatus}`, async (ctx) => {
    const { mock } = state;
    const gw = await ctx.gateway(catalogueConfig(mock, 'openai', {
      depParams,
      fallback_policy: { defaults: { budgets: { max_retries: 1, max_fallbacks: 0 } } },
    }));
    await mock.script(UP.a, [{ fault }]);
    await mock.script(UP.b, [{ fault }]);
    const res = await gw.fetch('/v1/chat/completions', { body: chatBody('p', { max_tokens: 16 }) });
    assert.equal(res.status, clientStatus, res.text);
    assert.equal(res.headers.get('x-litellm-attempted-retries'), '1');
    assert.equal(res.headers.get('x-litellm-attempted-fallbacks'), '0');
    assert.match(res.headers.get('x-tollgate-skipped-fallbacks') ?? '', /^fb \(fallback_budget_exhausted\)/);
    assert.deepEqual(await mock.requests(UP.a, UP.b, UP.fb), { [UP.a]: 1, [UP.b]: 1, [UP.fb]: 0 });
  });
}

// A per-group override in YAML changes the class (and so the action) for that group only:
// group `p` moves 503 to caller_fix_required (fail fast); group `q`, same upstream answer, keeps
// the default (retryable_capacity: retried, then fallback).
e2e('catalogue: model_groups.p.classes moves 503 to caller_fix_required (fail_fast) for p only', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'p', 'ov-p-up', { id: 'p-a' }),
      openaiDeployment(mock, 'q', 'ov-q-up', { id: 'q-a' }),
      openaiDeployment(mock, 'fb', UP.fb, { id: 'fb-1' }),
    ],
    litellm_settings: { fallbacks: [{ p: ['fb'] }, { q: ['fb'] }] },
    fallback_policy: {
      defaults: { budgets: { max_retries: 1, max_fallbacks: 1 } },
      model_groups: { p: { classes: { caller_fix_required: { status: [400, 404, 413, 422, 503] } } } },
    },
  }));
  await mock.script('ov-p-up', [{ error: 'overloaded' }]);
  await mock.script('ov-q-up', [{ error: 'overloaded' }]);

  const p = await gw.fetch('/v1/chat/completions', { body: chatBody('p') });
  assert.equal(p.status, 503, p.text);
  assert.equal(p.headers.get('x-tollgate-attempts'), 'p/p-a:caller_fix_required(503)');
  assert.equal(p.headers.get('x-litellm-attempted-retries'), '0');
  assert.equal(p.headers.get('x-litellm-attempted-fallbacks'), '0');
  const pRow = await spendLogOf(gw, p.headers);
  assert.deepEqual(attemptSteps(pRow.decision).map((s) => [s.class, s.action, s.decision]),
    [['caller_fix_required', 'fail_fast', 'stop']]);

  const q = await gw.fetch('/v1/chat/completions', { body: chatBody('q') });
  assert.equal(q.status, 200, q.text);
  assert.equal(q.headers.get('x-tollgate-attempts'),
    'q/q-a:retryable_capacity(503), q/q-a:retryable_capacity(503), fb/fb-1:ok(200)');
  assert.equal(q.headers.get('x-litellm-attempted-retries'), '1');
  assert.equal(q.headers.get('x-litellm-attempted-fallbacks'), '1');
  const qRow = await spendLogOf(gw, q.headers);
  assert.deepEqual(attemptSteps(qRow.decision).map((s) => [s.class, s.action, s.decision]), [
    ['retryable_capacity', 'retry_then_fallback', 'retry'],
    ['retryable_capacity', 'retry_then_fallback', 'fallback'],
    [null, undefined, 'served'],
  ]);
  assert.deepEqual(await mock.requests('ov-p-up', 'ov-q-up', UP.fb), { 'ov-p-up': 1, 'ov-q-up': 2, [UP.fb]: 1 });
});

// The reset and empty faults above hit a fresh upstream connection. On a kept-alive (reused) one
// the outcome is the same: the mock has read the request before it breaks the connection, so the
// attempt is an unknown outcome (it may have been billed) that the policy accounts for — not a
// stale connection to re-send the request on behind the policy's back (one worker thread, so the
// second request reuses the first one's upstream connection).
for (const fault of ['reset', 'empty']) {
  e2e(`catalogue openai: fault ${fault} on a reused keep-alive connection → unknown_outcome → retry_then_fallback`, async (ctx) => {
    const { mock } = state;
    const cfg = catalogueConfig(mock, 'openai');
    cfg.tollgate_settings = { worker_threads: 1 };
    const gw = await ctx.gateway(cfg);
    await mock.script(UP.a, [{ content: 'warm-up' }, { fault }]);
    await mock.script(UP.b, [{ fault }]);
    const warm = await gw.fetch('/v1/chat/completions', { body: chatBody('p', { max_tokens: 16 }) });
    assert.equal(warm.headers.get('x-tollgate-attempts'), 'p/p-a:ok(200)', 'the warm-up leaves a kept-alive connection');
    const res = await gw.fetch('/v1/chat/completions', { body: chatBody('p', { max_tokens: 16 }) });
    const what = `${res.status} ${res.text.slice(0, 200)}\nx-tollgate-attempts: ${res.headers.get('x-tollgate-attempts')}\n` +
      `mock: ${JSON.stringify(await mock.requests(UP.a, UP.b, UP.fb))}`;
    assert.ok((res.headers.get('x-tollgate-attempts') ?? '').startsWith('p/p-a:unknown_outcome, '), what);
    assert.deepEqual(await mock.requests(UP.a, UP.b, UP.fb), { [UP.a]: 2, [UP.b]: 1, [UP.fb]: 1 },
      'one upstream request per attempt (warm-up + 1 on p-a): "a request makes at most 1 + max_retries + ' +
      `max_fallbacks upstream attempts" (docs/failure_policy.md §3)\n${what}`);
    assert.equal(res.headers.get('x-litellm-model-id'), 'fb-1', what);
  });
}
