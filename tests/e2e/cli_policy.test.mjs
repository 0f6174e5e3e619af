// The policy tools as a user meets them (docs/simulate.md):
//  - `tollgate simulate` on the examples in examples/policy/: exit 0 and the decision lines the
//    doc shows; --json is machine-readable and the same twice; bad input exits 2 naming the path;
//  - `tollgate explain REQUEST_ID` against a running gateway's config: a request that retried
//    then fell back, explained attempt by attempt from the spend log.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test, after } from 'node:test';
import {
  useMock, e2e, gatewayConfig, openaiDeployment, anthropicDeployment, waitFor, chatBody,
} from './harness.mjs';

const BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
const EXAMPLES = fileURLToPath(new URL('../../examples/policy', import.meta.url));
const CONFIG = path.join(EXAMPLES, 'config.yaml');
const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-policy-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function run(args) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 20000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, out: `${r.stdout}\n${r.stderr}` };
}

function simulate(scenario, ...extra) {
  return run(['simulate', '--config', CONFIG, '--scenario', path.join(EXAMPLES, `${scenario}.scenario.yaml`), ...extra]);
}

/// The text block of one simulated request (from its "[sim-000N]" line to the next blank line).
function block(out, id) {
  const start = out.indexOf(`[${id}]`);
  assert.ok(start >= 0, `no ${id} in:\n${out}`);
  const end = out.indexOf('\n\n', start);
  return out.slice(start, end < 0 ? undefined : end);
}

// ---------------------------------------------------------------------------------------------
// tollgate simulate

test('simulate: capacity incident - retries, then the fallback, then the reduced mode', () => {
  const r = simulate('capacity');
  assert.equal(r.code, 0, r.out);
  const first = block(r.stdout, 'sim-0001');
  assert.match(first, /1\. attempt gpt-4o\/gpt-4o-\w+ .*HTTP 429 -> class retryable_capacity, action retry_then_fallback, then retry/);
  assert.match(first, /2\. attempt .*HTTP 503 -> class retryable_capacity/);
  assert.match(first, /3\. attempt .*: served/);
  assert.match(first, /=> 200 served/);
  const second = block(r.stdout, 'sim-0002');
  assert.match(second, /fallback to claude-sonnet \(retryable_capacity; retry budget exhausted \(2\)\)/);
  assert.match(second, /served by claude-sonnet\/claude-sonnet/);
  const third = block(r.stdout, 'sim-0003');
  assert.match(third, /degraded: reduced \(retry budget exhausted \(2\)\)/);
  assert.match(third, /=> 200 degraded \(reduced\)/);
  assert.match(third, /x-tollgate-degradation: reduced/);
  assert.match(r.stdout, /summary: 3 request\(s\): 2 served, 1 degraded, 0 failed/);
  assert.match(r.stdout, /circuits at the end:\n {2}deployment gpt-4o-east: /);
});

test('simulate: a commercial limit stops, alerts and opens the provider circuit', () => {
  const r = simulate('commercial_limit');
  assert.equal(r.code, 0, r.out);
  const first = block(r.stdout, 'sim-0001');
  assert.match(first, /HTTP 429 -> class commercial_limit, action stop_and_alert, then stop/);
  assert.match(first, /stopped: stop_and_alert: commercial_limit from gpt-4o/);
  assert.doesNotMatch(first, /^ +fallback to /m);
  assert.match(first, / 1 upstream attempt\(s\)/);
  assert.match(first, /=> 429 failed: insufficient_quota "Stopped by fallback policy/);
  assert.match(first, /x-tollgate-policy: stop_and_alert; class=commercial_limit/);
  assert.match(first, /circuit provider openai: closed -> open \(commercial_limit\)/);
  assert.match(first, /alert commercial_limit \(openai\)/);
  // While the provider circuit is open, gpt-4o is not sent anywhere else either.
  const second = block(r.stdout, 'sim-0002');
  assert.match(second, /skipped gpt-4o: provider circuit open: commercial_limit/);
  assert.doesNotMatch(second, /attempt /);
  assert.match(second, /=> 429 failed: commercial_limit/);
  // Anthropic's billing_error (HTTP 400) is the same class.
  assert.match(block(r.stdout, 'sim-0003'), /HTTP 400 -> class commercial_limit, action stop_and_alert/);
});

test('simulate: a Retry-After past the deadline goes to the fallback without waiting', () => {
  const r = simulate('deadline');
  assert.equal(r.code, 0, r.out);
  const first = block(r.stdout, 'sim-0001');
  assert.match(first, /deadline 3000 ms/);
  assert.match(first, /ignored \(looser than configured\): x-tollgate-max-retries: 5 > 2/);
  assert.match(first, /HTTP 429 -> class retryable_capacity, action retry_then_fallback, then fallback/);
  assert.match(first, /served by claude-sonnet/);
  assert.match(first, / 400 ms virtual/);  // two 200 ms attempts; the 30 s Retry-After was not waited
  assert.match(block(r.stdout, 'sim-0002'), / 1900 ms virtual/);  // 200 + 1500 (retry-after-ms) + 200
  const third = block(r.stdout, 'sim-0003');
  assert.match(third, /no response -> class unknown_outcome, action retry_then_fallback, then retry \[4000 ms/);
});

test('simulate: circuits open after consecutive failures and close after a half-open probe', () => {
  const r = simulate('circuit');
  assert.equal(r.code, 0, r.out);
  const second = block(r.stdout, 'sim-0002');
  assert.match(second, /circuit deployment gpt-4o-east: closed -> open \(3 consecutive failures\)/);
  assert.match(second, /circuit deployment gpt-4o-west: closed -> open \(3 consecutive failures\)/);
  const open = block(r.stdout, 'sim-0003');
  assert.doesNotMatch(open, /attempt gpt-4o\//);
  assert.match(open, /skipped gpt-4o: deployment circuit open/);
  assert.match(open, /1\. attempt claude-sonnet\/claude-sonnet/);
  const probe = block(r.stdout, 'sim-0004');
  assert.match(probe, /1\. attempt gpt-4o\/gpt-4o-\w+ \(provider openai, circuit half_open\): served/);
  assert.match(probe, /-> closed/);
});

test('simulate: degradation modes reduced and fail_fast', () => {
  const r = simulate('degradation');
  assert.equal(r.code, 0, r.out);
  const reduced = block(r.stdout, 'sim-0001');
  assert.match(reduced, /=> 200 degraded \(reduced\)/);
  assert.match(reduced, /x-tollgate-degradation-caveat: Shortened answer/);
  const fast = block(r.stdout, 'sim-0002');
  assert.match(fast, /degraded: fail_fast \(retry budget exhausted \(1\)\)/);
  assert.match(fast, /=> 503 degraded \(fail_fast\): degraded_fail_fast/);
});

test('simulate --json: machine-readable and deterministic', () => {
  const a = simulate('capacity', '--json');
  assert.equal(a.code, 0, a.out);
  const j = JSON.parse(a.stdout);
  assert.deepEqual(
    { requests: j.summary.requests, served: j.summary.served, degraded: j.summary.degraded, failed: j.summary.failed },
    { requests: 3, served: 2, degraded: 1, failed: 0 });
  const third = j.requests[2];
  assert.equal(third.id, 'sim-0003');
  assert.equal(third.status, 200);
  assert.equal(third.degradation, 'reduced');
  assert.equal(third.headers['x-tollgate-degradation'], 'reduced');
  assert.match(third.headers['x-tollgate-decision'], /->fallback/);
  assert.equal(third.decision.outcome, 'degraded');
  assert.equal(third.attempts, third.decision.steps.filter((s) => s.step === 'attempt').length);
  assert.ok(j.circuits.some((c) => c.scope === 'deployment' && c.id === 'gpt-4o-east'));
  assert.equal(simulate('capacity', '--json').stdout, a.stdout, 'two runs differ');
});

test('simulate: a bad scenario or config exits 2 naming the path', () => {
  const bad = path.join(dir, 'bad.scenario.yaml');
  writeFileSync(bad, 'requests:\n  - model: gpt-4o\n    upstream:\n      gpt-4o: [{error: rate_limit_exceded}]\n');
  let r = run(['simulate', '--config', CONFIG, '--scenario', bad]);
  assert.equal(r.code, 2, r.out);
  assert.match(r.stderr, /requests\[0\]\.upstream\.gpt-4o\[0\]\.error \(line 4\): unknown error 'rate_limit_exceded'/);
  assert.equal(r.stdout, '');

  const unknownModel = path.join(dir, 'model.scenario.yaml');
  writeFileSync(unknownModel, 'requests:\n  - model: gpt-5\n');
  r = run(['simulate', '--config', CONFIG, '--scenario', unknownModel]);
  assert.equal(r.code, 2, r.out);
  assert.match(r.stderr, /requests\[0\]\.model \(line 2\): 'gpt-5' is not a model group/);

  const badConfig = path.join(dir, 'bad-config.yaml');
  writeFileSync(badConfig, 'model_list: []\nfallback_policy:\n  defaults:\n    budgets: {max_retries: -1}\n');
  r = run(['simulate', '--config', badConfig, '--scenario', path.join(EXAMPLES, 'capacity.scenario.yaml')]);
  assert.equal(r.code, 2, r.out);
  assert.match(r.stderr, /fallback_policy\.defaults\.budgets\.max_retries/);

  assert.equal(run(['simulate', '--config', CONFIG]).code, 2);  // --scenario is required
});

// ---------------------------------------------------------------------------------------------
// tollgate explain

const state = useMock();

e2e('explain: a request that retried then fell back, attempt by attempt from the spend log', async ({ gateway }) => {
  const mock = state.mock;
  const gw = await gateway(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'gpt-4o', 'gpt-4o-east', { id: 'gpt-4o-east', input_cost_per_token: 0.0000025, output_cost_per_token: 0.00001 }),
      openaiDeployment(mock, 'gpt-4o', 'gpt-4o-west', { id: 'gpt-4o-west', input_cost_per_token: 0.0000025, output_cost_per_token: 0.00001 }),
      anthropicDeployment(mock, 'claude-sonnet', 'claude-sonnet-4', { id: 'claude-sonnet', input_cost_per_token: 0.000003, output_cost_per_token: 0.000015 }),
    ],
    litellm_settings: { fallbacks: [{ 'gpt-4o': ['claude-sonnet'] }] },
    router_settings: { num_retries: 2 },
  }));
  const limited = { error: 'rate_limit_exceeded', retry_after_ms: 100 };
  await mock.script('gpt-4o-east', [limited, { error: 'overloaded' }]);
  await mock.script('gpt-4o-west', [limited, { error: 'overloaded' }]);
  const key = await gw.generateKey({ key_alias: 'team-a', max_budget: 1 });

  const res = await gw.fetch('/v1/chat/completions', { auth: key.key, body: chatBody('gpt-4o', { max_tokens: 50 }) });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get('x-litellm-model-id'), 'claude-sonnet');
  const id = res.headers.get('x-litellm-call-id');
  assert.ok(id);

  // The spend log row is written just after the response: poll until it is there.
  const r = await waitFor(() => {
    const x = run(['explain', id, '--config', gw.configPath]);
    return x.code === 0 ? x : null;
  }, { timeoutMs: 5000, what: `tollgate explain ${id}` });
  assert.match(r.stdout, new RegExp(`^request {6}${id}$`, 'm'));
  assert.match(r.stdout, /^key {10}team-a \(key hash [0-9a-f]{12}\.\.\.\)$/m);
  assert.match(r.stdout, /^model {8}requested gpt-4o; served by claude-sonnet \(deployment claude-sonnet, anthropic\/claude-sonnet-4\)$/m);
  assert.match(r.stdout, /^status {7}success$/m);
  assert.match(r.stdout, /^degradation {2}none$/m);
  assert.match(r.stdout, /1\. attempt gpt-4o\/gpt-4o-\w+ \(provider openai, circuit closed\): HTTP 429 -> class retryable_capacity, action retry_then_fallback, then retry/);
  assert.match(r.stdout, /2\. attempt gpt-4o\/gpt-4o-\w+ .*HTTP 429 -> class retryable_capacity/);
  assert.match(r.stdout, /3\. attempt gpt-4o\/gpt-4o-\w+ .*HTTP 503 -> class retryable_capacity, action retry_then_fallback, then fallback/);
  assert.match(r.stdout, /fallback to claude-sonnet \(retryable_capacity; retry budget exhausted \(\d\)\)/);
  assert.match(r.stdout, /4\. attempt claude-sonnet\/claude-sonnet \(provider anthropic, circuit closed\): served/);
  assert.match(r.stdout, /consumed: 2 retries, 1 fallbacks/);
  assert.match(r.stdout, /outcome: served, served by claude-sonnet\/claude-sonnet/);

  const j = run(['explain', id, '--config', gw.configPath, '--json']);
  assert.equal(j.code, 0, j.out);
  const trace = JSON.parse(j.stdout);
  assert.deepEqual(trace.steps.filter((s) => s.step === 'attempt').map((s) => s.status), [429, 429, 503, 200]);
  assert.equal(trace.outcome, 'served');
  assert.equal(trace.served_by, 'claude-sonnet/claude-sonnet');

  const unknown = run(['explain', 'no-such-request', '--config', gw.configPath]);
  assert.equal(unknown.code, 1, unknown.out);
  assert.match(unknown.stderr, /no spend log row for request id no-such-request/);
});

test('explain: a config whose database does not exist exits 1 without creating it', () => {
  const cfg = path.join(dir, 'nodb.yaml');
  writeFileSync(cfg, `model_list: []\ntollgate_settings:\n  data_dir: ${dir}/nowhere\n`);
  const r = run(['explain', 'x', '--config', cfg]);
  assert.equal(r.code, 1, r.out);
  assert.match(r.stderr, /does not exist/);
});
