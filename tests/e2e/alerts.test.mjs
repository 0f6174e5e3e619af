// Alerts that reach people (issue 10): budget thresholds fire once each per window and not
// again, delivered to a local Slack-compatible webhook; `tollgate alerts test` sends one of each
// kind; a refusing webhook is reported.
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { useMock, e2e, gatewayConfig, waitFor, sleep, metricsText, metricValue } from './harness.mjs';
import { paidDeployment, chat, hi, spendNanos } from './budget_helpers.mjs';

const state = useMock();
const BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');

/// Runs `tollgate alerts test` without blocking this process (its webhooks answer from here).
function alertsTest(configPath) {
  return new Promise((resolve) => {
    const p = spawn(BIN, ['alerts', 'test', '--config', configPath]);
    let stdout = '', stderr = '';
    p.stdout.on('data', (c) => { stdout += c; });
    p.stderr.on('data', (c) => { stderr += c; });
    p.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/// A webhook that keeps every JSON body it is sent and answers `status`.
async function webhook(status = 200) {
  const w = { bodies: [], status };
  w.server = http.createServer((req, res) => {
    let b = '';
    req.on('data', (c) => { b += c; });
    req.on('end', () => {
      try { w.bodies.push(JSON.parse(b)); } catch { w.bodies.push({ invalid: b }); }
      res.writeHead(w.status, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise((r) => w.server.listen(0, '127.0.0.1', r));
  w.url = `http://127.0.0.1:${w.server.address().port}/hooks/T000/B000/xyz`;
  w.stop = () => new Promise((r) => { w.server.closeAllConnections?.(); w.server.close(r); });
  return w;
}

e2e('budget thresholds: each fires once, at its threshold, delivered to the webhook; further requests do not repeat it', async (ctx) => {
  const { mock } = state;
  const hook = await webhook();
  try {
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [paidDeployment(mock, 'ab-paid', 'ab-up')],
      tollgate_settings: { alerts: { webhooks: [hook.url], budget_thresholds: { key: [50, 80, 90] } } },
    }));
    await mock.script('ab-up', [{ content: 'a b c d e f g h i j', completion_tokens: 10 }]);
    // The cost of one request, measured on a key without a budget.
    const probe = await gw.generateKey({});
    assert.equal((await chat(gw, probe.key, hi('ab-paid'))).status, 200);
    const cost = await waitFor(async () => { const s = await spendNanos(gw, probe.key); return s > 0 ? s : null; }, { what: 'probe spend' });
    const k = await gw.generateKey({ key_alias: 'ab-key', max_budget: (10 * cost) / 1e9 });
    const fired = () => hook.bodies.filter((b) => b.tollgate_alert?.kind === 'budget_threshold' && b.tollgate_alert.subject.includes(k.token));
    const statuses = [];
    for (let i = 1; i <= 12; i++) {
      statuses.push((await chat(gw, k.key, hi('ab-paid'))).status);
      if (i === 4) {
        await sleep(300);
        assert.equal(fired().length, 0, 'nothing below 50%');
      }
      if (i === 5) await waitFor(() => fired().length === 1, { what: 'the 50% alert' });
      if (i === 8) await waitFor(() => fired().length === 2, { what: 'the 80% alert' });
    }
    await waitFor(() => fired().length >= 3, { what: 'the 90% alert' });
    await sleep(500);
    const subjects = fired().map((b) => b.tollgate_alert.subject);
    assert.deepEqual(subjects, [`key ${k.token} 50%`, `key ${k.token} 80%`, `key ${k.token} 90%`], 'once each, in order');
    assert.ok(statuses.slice(0, 9).every((s) => s === 200), `statuses ${statuses}`);
    assert.ok(statuses.slice(9).every((s) => s === 429), 'then the cap holds');
    for (const b of fired()) {
      assert.match(b.text, /^Tollgate alert: budget_threshold/, 'a Slack-compatible text');
      assert.match(b.tollgate_alert.message, /of its budget/);
    }
    const text = await metricsText(gw);
    assert.ok(metricValue(text, 'tollgate_alert_deliveries_total', { result: 'delivered' }) >= 3);
    assert.equal(metricValue(text, 'tollgate_alerts_total', { kind: 'budget_threshold' }), 3);
  } finally {
    await hook.stop();
  }
}, { timeout: 60000 });

e2e('`tollgate alerts test` sends one alert of each kind to every channel; a refusing channel exits 1', async (ctx) => {
  const hook = await webhook();
  const down = await webhook(500);
  try {
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [paidDeployment(state.mock, 'ab-paid', 'ab-up')],
      tollgate_settings: { alerts: { webhooks: [hook.url], timeout_ms: 1000 } },
    }));
    const ok = await alertsTest(gw.configPath);
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, /7 delivered, 0 failed/);
    const kinds = hook.bodies.map((b) => b.tollgate_alert.kind).sort();
    assert.deepEqual(kinds, ['budget_threshold', 'commercial_limit', 'deployment_misconfigured', 'ledger_unavailable',
      'provider_circuit_closed', 'provider_circuit_open', 'soft_budget_crossed']);
    const gw2 = await ctx.gateway(gatewayConfig({
      model_list: [paidDeployment(state.mock, 'ab-paid', 'ab-up')],
      tollgate_settings: { alerts: { webhooks: [down.url], timeout_ms: 500 } },
    }));
    const bad = await alertsTest(gw2.configPath);
    assert.equal(bad.status, 1, bad.stdout + bad.stderr);
    assert.match(bad.stdout, /0 delivered, 7 failed/);
    const none = await alertsTest((await ctx.gateway(gatewayConfig({ model_list: [] }))).configPath);
    assert.equal(none.status, 2);
    assert.match(none.stderr, /no alert channel/);
  } finally {
    await hook.stop();
    await down.stop();
  }
}, { timeout: 90000 });
