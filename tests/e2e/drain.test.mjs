// Rolling restarts (docs/operations.md): SIGTERM drains. Readiness turns 503 at once while
// liveness stays 200, the listener closes, requests and streams in flight run to completion
// within tollgate_settings.drain_timeout_ms, and the process exits 0 with every reservation
// settled; at the timeout what is still running is cut with a clean error end and its
// reservation settles as an unknown outcome (charged its reservation). A second SIGTERM cuts
// the drain short. `config check` rejects a bad drain_timeout_ms.
//
// Timing: the slow upstreams take seconds, the assertions on time are generous bounds (a
// loaded 2-core machine), and the rest is about order and outcomes.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { useMock, e2e, gatewayConfig, waitFor, sleep, sseData, MASTER_KEY } from './harness.mjs';
import {
  IN_PRICE, OUT_PRICE, paidDeployment, worstNanos, mockBillNanos, nanos, spendNanos, spendLogRow,
} from './budget_helpers.mjs';

const state = useMock();
const BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
const scratch = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-drain-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const freshDataDir = () => path.join(scratch, `data-${++dirs}`);
const PRICES = { input: IN_PRICE, output: OUT_PRICE };

/// Groups on one upstream model whose behaviour is set by directives in the deployment's model
/// name (the mock bills them all as `paid-upstream`).
function drainConfig(mock, dataDir, drainTimeoutMs) {
  return gatewayConfig({
    model_list: [
      // ~3 s before the answer's headers.
      paidDeployment(mock, 'slow-answer', 'paid-upstream?latency_ms=3000'),
      // 15 tokens at 5/s: ~3 s of stream.
      paidDeployment(mock, 'slow-stream', 'paid-upstream?tokens_per_second=5&completion_tokens=15'),
      // Half the tokens, then nothing, for ever.
      paidDeployment(mock, 'stalled-stream', 'paid-upstream?fault=stall&completion_tokens=10'),
      // Never answered.
      paidDeployment(mock, 'hanging', 'paid-upstream?fault=hang'),
    ],
    tollgate_settings: { data_dir: dataDir, drain_timeout_ms: drainTimeoutMs },
  });
}

const body = (model, extra = {}) => ({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, ...extra });

async function post(gw, key, payload) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(payload),
  });
}

/// Starts a streaming request and resolves once its first event arrived: {response, rest}
/// where `rest` resolves with the whole body text (or rejects if the connection broke).
async function startStream(gw, key, payload) {
  const response = await post(gw, key, { ...payload, stream: true });
  assert.equal(response.status, 200);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('data:')) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream ended before its first event');
    text += decoder.decode(value, { stream: true });
  }
  const rest = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return text + decoder.decode();
      text += decoder.decode(value, { stream: true });
    }
  })();
  rest.catch(() => {});
  return { response, rest };
}

/// GET over a given node:http agent (so that a keep-alive connection opened before the signal
/// can be reused after it): {status, headers, json}.
function getVia(agent, url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { data += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(data); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, json, text: data });
      });
    });
    req.on('error', reject);
  });
}

/// Resolves 'refused' when a new TCP connection to the gateway is refused, 'accepted' otherwise.
function tryConnect(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const s = net.connect({ host: hostname, port: Number(port) });
    s.on('connect', () => { s.destroy(); resolve('accepted'); });
    s.on('error', (e) => resolve(e.code === 'ECONNREFUSED' ? 'refused' : `error ${e.code}`));
  });
}

/// Sends `signal` to the gateway (marked as an intended stop, not a crash).
function signal(gw, sig = 'SIGTERM') {
  gw.proc.stopping = true;
  gw.proc.child.kill(sig);
  return performance.now();
}

/// Settle rows and the key's ledger after a restart on the same data_dir: no reservation left
/// open (ledger recovery would say so), nothing reserved, and the key's spend.
async function restartAndCheckLedger(ctx, config, key) {
  const again = await ctx.gateway(config);
  await sleep(100);  // the recovery line is logged before "listening on"; a margin for the pipe
  assert.doesNotMatch(again.proc.stderr, /ledger recovery: \d+ reservation/, 'a reservation was left open');
  const info = await again.keyInfo(key);
  assert.equal(nanos(info.reserved_spend), 0, 'nothing is reserved after the restart');
  return { gw: again, spend: await spendNanos(again, key) };
}

e2e('SIGTERM drains: readiness 503 at once, liveness 200, new connections refused, the answer and the stream in flight complete, exit 0; spend = the bill and no reservation left open', async (ctx) => {
  const { mock } = state;
  const config = drainConfig(mock, freshDataDir(), 20000);
  const gw = await ctx.gateway(config);
  const k = await gw.generateKey({ max_budget: 1 });

  // Keep-alive connections opened before the signal, one for each probe.
  const readyAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const liveAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  assert.equal((await getVia(readyAgent, `${gw.url}/health/readiness`)).status, 200);
  assert.equal((await getVia(liveAgent, `${gw.url}/health/liveliness`)).status, 200);

  const answer = post(gw, k.key, body('slow-answer'));
  const stream = await startStream(gw, k.key, body('slow-stream', { stream_options: { include_usage: true } }));
  await waitFor(async () => (await mock.model('paid-upstream')).requests === 2, { what: 'both requests upstream' });

  await sleep(100);  // both probe connections are idle: their last answers are long written
  const t0 = signal(gw);
  // Readiness turns 503 {"status":"draining"} at once, on the connection the probe already had.
  // (Polled only once the drain has begun: a probe answered 200 just before the signal would
  // have its connection closed after that answer, as every connection busy at the signal.)
  await waitFor(() => /draining: /.test(gw.proc.stderr), { intervalMs: 5, what: 'the draining log line' });
  const ready = await getVia(readyAgent, `${gw.url}/health/readiness`);
  const readyAfterMs = performance.now() - t0;
  assert.equal(ready.status, 503, ready.text);
  assert.equal(ready.json?.status, 'draining', ready.text);
  assert.equal(ready.headers.connection, 'close');
  assert.ok(readyAfterMs < 2000, `readiness turned 503 after ${readyAfterMs.toFixed(0)} ms`);
  // Liveness stays 200 while draining.
  const live = await getVia(liveAgent, `${gw.url}/health/liveliness`);
  assert.equal(live.status, 200, live.text);
  // The listener is closed: a new connection is refused.
  await waitFor(async () => (await tryConnect(gw.url)) === 'refused', { timeoutMs: 3000, what: 'new connections refused' });
  assert.ok(gw.alive, 'still running: requests are in flight');

  // Both requests in flight run to completion.
  const answered = await answer;
  assert.equal(answered.status, 200);
  const completion = await answered.json();
  assert.equal(completion.object, 'chat.completion');
  assert.ok(completion.usage?.completion_tokens > 0);
  const streamed = sseData(await stream.rest);
  assert.equal(streamed.at(-1), '[DONE]');
  assert.ok(!streamed.some((e) => e?.error), 'no error event in the stream');
  assert.ok(streamed.some((e) => e?.usage?.completion_tokens === 15), 'the usage chunk arrived');

  const exit = await gw.proc.exited;
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.ok(performance.now() - t0 < 20000, 'exited within the drain timeout');
  const begin = /draining: .*?(\d+) request\(s\) in flight/.exec(gw.proc.stderr);
  assert.ok(begin && Number(begin[1]) >= 2, `draining line with the in-flight count:\n${gw.proc.stderr}`);
  const done = /drain done: drained (\d+), cut (\d+), elapsed (\d+) ms/.exec(gw.proc.stderr);
  assert.ok(done, gw.proc.stderr);
  assert.ok(Number(done[1]) >= 2, done[0]);
  assert.equal(Number(done[2]), 0, done[0]);
  readyAgent.destroy();
  liveAgent.destroy();

  // Everything was settled and flushed before the exit: after a restart the key's spend is the
  // provider's bill and no reservation is left for ledger recovery.
  const bill = await mockBillNanos(mock, 'paid-upstream', PRICES);
  assert.ok(bill > 0);
  const { spend } = await restartAndCheckLedger(ctx, config, k.key);
  assert.equal(spend, bill, `spend ${spend} nanos, the mock billed ${bill}`);
});

e2e('at drain_timeout_ms what is still running is cut: a stalled stream ends with an error event, a hanging answer gets 503, exit 0 after ~the timeout, both reservations charged as unknown outcomes', async (ctx) => {
  const { mock } = state;
  const config = drainConfig(mock, freshDataDir(), 500);
  const gw = await ctx.gateway(config);
  const k = await gw.generateKey({ max_budget: 1 });
  const streamBody = body('stalled-stream');
  const hangBody = body('hanging');

  const hanging = post(gw, k.key, hangBody);
  const stream = await startStream(gw, k.key, streamBody);
  await waitFor(async () => (await mock.model('paid-upstream')).requests === 2, { what: 'both requests upstream' });

  const t0 = signal(gw);
  const exit = await gw.proc.exited;
  const exitedAfterMs = performance.now() - t0;
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.ok(exitedAfterMs >= 400, `exited ${exitedAfterMs.toFixed(0)} ms after SIGTERM, before the drain timeout`);
  assert.ok(exitedAfterMs < 10000, `exited ${exitedAfterMs.toFixed(0)} ms after SIGTERM`);

  // The stream's client sees a clean end: an error event, then the end of the stream (no
  // [DONE], no broken connection).
  const events = sseData(await stream.rest);
  assert.notEqual(events.at(-1), '[DONE]');
  assert.equal(events.at(-1)?.error?.code, 'gateway_shutting_down', JSON.stringify(events.at(-1)));
  // The answer that never came: a complete JSON error, not a cut body.
  const cut = await hanging;
  assert.equal(cut.status, 503);
  const err = await cut.json();
  assert.equal(err.error?.code, 'gateway_shutting_down', JSON.stringify(err));
  const done = /drain done: drained (\d+), cut (\d+), elapsed (\d+) ms/.exec(gw.proc.stderr);
  assert.ok(done, gw.proc.stderr);
  assert.equal(Number(done[2]), 2, done[0]);

  // Both reservations settled (sent, no complete answer: unknown, charged the reservation),
  // durably: after a restart nothing is left open and the spend is the two reservations.
  const worst = worstNanos(streamBody) + worstNanos(hangBody);
  const { gw: again, spend } = await restartAndCheckLedger(ctx, config, k.key);
  assert.equal(spend, worst, `spend ${spend} nanos, the reservations were ${worst}`);
  assert.ok(spend >= await mockBillNanos(mock, 'paid-upstream', PRICES), 'the ledger errs on the safe side of the bill');
  const streamRow = await spendLogRow(again, stream.response);
  assert.equal(streamRow.unknown_outcome, true);
  assert.equal(nanos(streamRow.spend), worstNanos(streamBody));
  const hangRow = await spendLogRow(again, cut);
  assert.equal(hangRow.unknown_outcome, true);
  assert.equal(nanos(hangRow.spend), worstNanos(hangBody));
});

e2e('a second SIGTERM cuts the drain short', async (ctx) => {
  const { mock } = state;
  const config = drainConfig(mock, freshDataDir(), 60000);
  const gw = await ctx.gateway(config);
  const k = await gw.generateKey({ max_budget: 1 });
  const stream = await startStream(gw, k.key, body('stalled-stream'));
  const t0 = signal(gw);
  await waitFor(() => /draining: /.test(gw.proc.stderr), { what: 'the drain to begin' });
  await sleep(200);
  assert.ok(gw.alive, 'the stalled stream holds the drain');
  signal(gw);
  const exit = await gw.proc.exited;
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.ok(performance.now() - t0 < 20000, 'did not wait for the 60 s drain');
  assert.match(gw.proc.stderr, /again: cutting the drain short/);
  const events = sseData(await stream.rest);
  assert.equal(events.at(-1)?.error?.code, 'gateway_shutting_down');
  const { spend } = await restartAndCheckLedger(ctx, config, k.key);
  assert.equal(spend, worstNanos(body('stalled-stream')));
});

e2e('three quick signals stop at once, and the stream in flight still has its reservation settled', async (ctx) => {
  const { mock } = state;
  // A short drain bounds the test should the signals coalesce into fewer.
  const config = drainConfig(mock, freshDataDir(), 3000);
  const gw = await ctx.gateway(config);
  const k = await gw.generateKey({ max_budget: 1 });
  const stream = await startStream(gw, k.key, body('stalled-stream'));
  gw.proc.stopping = true;
  // Whether the stream is cut (second signal) or abandoned (third: its coroutine destroyed by
  // the shutdown), the outcome is the same for the ledger.
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGTERM']) gw.proc.child.kill(sig);
  const exit = await gw.proc.exited;
  assert.deepEqual(exit, { code: 0, signal: null }, gw.proc.stderr);
  const text = await stream.rest.catch(() => '');
  assert.ok(!text.includes('[DONE]'), 'the stream was not presented as complete');
  const { spend } = await restartAndCheckLedger(ctx, config, k.key);
  assert.equal(spend, worstNanos(body('stalled-stream')));
});

e2e('SIGTERM with nothing in flight exits 0 at once', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(drainConfig(mock, freshDataDir(), 30000));
  // An idle keep-alive connection does not hold the drain.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  assert.equal((await getVia(agent, `${gw.url}/health/readiness`)).status, 200);
  const t0 = signal(gw);
  const exit = await gw.proc.exited;
  agent.destroy();
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.ok(performance.now() - t0 < 10000, 'did not wait for the drain timeout');
  // (The probe may still count as in flight for a moment after its answer arrived.)
  assert.match(gw.proc.stderr, /drain done: drained [01], cut 0/);
});

e2e('config check: drain_timeout_ms must be 0..3600000 (exit 2 naming the YAML path)', async () => {
  const write = (name, value) => {
    const p = path.join(scratch, name);
    writeFileSync(p, `model_list: []\ngeneral_settings:\n  master_key: ${MASTER_KEY}\ntollgate_settings:\n  drain_timeout_ms: ${value}\n`);
    return p;
  };
  const check = (p) => {
    const r = spawnSync(BIN, ['config', 'check', p], { encoding: 'utf8', timeout: 10000 });
    return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
  };
  for (const bad of ['-1', '3600001', '99999999999', 'soon']) {
    const r = check(write(`bad-drain-${dirs++}.yaml`, bad));
    assert.equal(r.code, 2, `${bad}: ${r.out}`);
    assert.match(r.out, /tollgate_settings\.drain_timeout_ms/, bad);
  }
  assert.equal(check(write('good-drain.yaml', '0')).code, 0);
  assert.equal(check(write('good-drain2.yaml', '500')).code, 0);
});
