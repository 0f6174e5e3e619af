// /metrics after a known load (issue 10): LiteLLM's metric names and labels and the GenAI client
// histograms count exactly what was sent; spend equals the ledger per key; the exposition passes
// `promtool check metrics` (Debian package prometheus).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { useMock, e2e, gatewayConfig, waitFor, metricsText, metricValue } from './harness.mjs';
import { paidDeployment, chat, hi, spendNanos, mockBill } from './budget_helpers.mjs';

const state = useMock();

e2e('after a known load, LiteLLM-named metrics equal what was sent, spend equals the ledger, and promtool accepts the exposition', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'mx-paid', 'mx-up')] }));
  const team = await gw.admin('/team/new', { team_alias: 'mx-team', max_budget: 10 });
  const k1 = await gw.generateKey({ key_alias: 'mx-one', team_id: team.team_id, max_budget: 5 });
  const k2 = await gw.generateKey({ key_alias: 'mx-two' });
  await mock.script('mx-up', [{ content: 'one two three', completion_tokens: 3 }]);
  for (let i = 0; i < 5; i++) assert.equal((await chat(gw, k1.key, hi('mx-paid'))).status, 200);
  for (let i = 0; i < 2; i++) assert.equal((await chat(gw, k2.key, hi('mx-paid'))).status, 200);
  await mock.script('mx-up', [{ status: 400, error: 'invalid_request_error' }]);
  assert.equal((await chat(gw, k2.key, hi('mx-paid'))).status, 400);

  // A run is counted when it ends, just after its response is written: wait for all eight.
  const text = await waitFor(async () => {
    const t = await metricsText(gw);
    return metricValue(t, 'litellm_proxy_total_requests_metric_total', {}) === 8 ? t : null;
  }, { what: 'every request counted' });
  const spent1 = await spendNanos(gw, k1.key);
  const spent2 = await spendNanos(gw, k2.key);
  assert.ok(spent1 > 0);
  const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(lint.error, undefined, `promtool must be installed (Debian package prometheus): ${lint.error}`);
  assert.equal(lint.status, 0, `promtool check metrics: ${lint.stdout}${lint.stderr}`);

  const h1 = { hashed_api_key: k1.token, api_key_alias: 'mx-one' };
  const h2 = { hashed_api_key: k2.token, api_key_alias: 'mx-two' };
  assert.equal(metricValue(text, 'litellm_requests_metric_total', { ...h1, team: team.team_id, team_alias: 'mx-team', model: 'mx-up' }), 5);
  assert.equal(metricValue(text, 'litellm_requests_metric_total', h2), 3);
  assert.equal(metricValue(text, 'litellm_proxy_total_requests_metric_total', { requested_model: 'mx-paid' }), 8);
  assert.equal(metricValue(text, 'litellm_proxy_total_requests_metric_total', { ...h2, status_code: '400' }), 1);
  assert.equal(metricValue(text, 'litellm_proxy_failed_requests_metric_total', { ...h2, exception_status: '400' }), 1);
  assert.equal(metricValue(text, 'litellm_deployment_total_requests_total', { model_id: 'mx-paid.mx-up' }) ?? metricValue(text, 'litellm_deployment_total_requests_total', { litellm_model_name: 'mx-up' }), 8);
  assert.equal(metricValue(text, 'litellm_deployment_failure_responses_total', { litellm_model_name: 'mx-up', exception_status: '400' }), 1);
  // Spend per key equals the ledger's (dollars as a double: to a nano-dollar).
  assert.ok(Math.abs(metricValue(text, 'litellm_spend_metric_total', h1) * 1e9 - spent1) < 1, `${metricValue(text, 'litellm_spend_metric_total', h1)} vs ${spent1}`);
  assert.ok(Math.abs((metricValue(text, 'litellm_spend_metric_total', h2) ?? 0) * 1e9 - spent2) < 1);
  // Tokens equal the simulator's counts.
  const bill = await mockBill(mock, 'mx-up');
  assert.equal(metricValue(text, 'litellm_input_tokens_metric_total', {}), bill.prompt_tokens);
  assert.equal(metricValue(text, 'litellm_output_tokens_metric_total', {}), bill.completion_tokens);
  assert.equal(metricValue(text, 'litellm_total_tokens_metric_total', {}), bill.prompt_tokens + bill.completion_tokens);
  // Budgets left.
  assert.ok(Math.abs(metricValue(text, 'litellm_remaining_api_key_budget_metric', h1) - (5 - spent1 / 1e9)) < 1e-9);
  assert.equal(metricValue(text, 'litellm_api_key_max_budget_metric', h1), 5);
  assert.ok(Math.abs(metricValue(text, 'litellm_remaining_team_budget_metric', { team: team.team_id }) - (10 - spent1 / 1e9)) < 1e-9);
  // Histograms: one observation per request, with the spec's buckets.
  assert.equal(metricValue(text, 'litellm_request_total_latency_metric_count', {}), 8);
  assert.equal(metricValue(text, 'gen_ai_client_operation_duration_seconds_count', { gen_ai_request_model: 'mx-paid' }), 8);
  assert.equal(metricValue(text, 'gen_ai_client_operation_duration_seconds_count', { error_type: 'caller_fix_required' }), 1);
  assert.equal(metricValue(text, 'gen_ai_client_token_usage_count', { gen_ai_token_type: 'output' }), 7);
  assert.equal(metricValue(text, 'gen_ai_client_token_usage_sum', { gen_ai_token_type: 'output' }), 21);
  assert.match(text, /gen_ai_client_operation_duration_seconds_bucket\{[^}]*le="81\.92"\}/);
  assert.match(text, /gen_ai_client_token_usage_bucket\{[^}]*le="67108864"\}/);
  assert.equal(metricValue(text, 'litellm_deployment_state', { model_id: 'mx-paid.mx-up' }) ?? metricValue(text, 'litellm_deployment_state', { litellm_model_name: 'mx-up' }), 0);
  assert.equal(metricValue(text, 'tollgate_requests_total', { model_group: 'mx-paid' }), 8, 'Tollgate\'s own names are kept');
  // The durable ledger and the upstream pool: the ledger counter is the store writer's own
  // count; every upstream request went on a new or a pooled connection.
  const upstream = (await mock.model('mx-up')).requests;
  assert.equal(upstream, 8);
  const opened = metricValue(text, 'tollgate_upstream_connections_opened_total', {});
  const reused = metricValue(text, 'tollgate_upstream_connections_reused_total', {});
  assert.ok(opened >= 1, `opened ${opened}`);
  assert.equal(opened + reused, upstream, 'each upstream request went on a new or a pooled connection');
  assert.ok(metricValue(text, 'tollgate_upstream_connections_idle', {}) >= 1, 'kept alive for the next');
  assert.equal(metricValue(text, 'tollgate_upstream_connect_failures_total', {}), 0);
  // The writer commits settle records after the response is written, so the two figures are
  // read together once the writer is quiet (stats, exposition, stats again: unchanged).
  const readStats = async () => JSON.parse((await gw.fetch('/tollgate/stats', { method: 'GET' })).text).group_commit;
  const { stats, exposed } = await waitFor(async () => {
    const before = await readStats();
    const t = await metricsText(gw);
    const after = await readStats();
    return before.ledger_records === after.ledger_records
      ? { stats: after, exposed: metricValue(t, 'tollgate_ledger_records_total', {}) } : null;
  }, { what: 'a quiet ledger writer' });
  assert.equal(exposed, stats.ledger_records);
  assert.ok(stats.ledger_records >= 10, `5 reserve + 5 settle records of the budgeted key at least (${stats.ledger_records})`);
  assert.ok(metricValue(text, 'tollgate_ledger_commit_seconds', { stat: 'p50' }) > 0);
  assert.ok(metricValue(text, 'tollgate_ledger_commit_seconds', { stat: 'max' }) >= metricValue(text, 'tollgate_ledger_commit_seconds', { stat: 'p99' }));
});
