// The shared ledger (router_settings.redis_url) on one instance with a real Redis: paid attempts
// fail closed while Redis is down (free ones are served), and a Redis that comes back empty is
// rebuilt from the durable ledger before anything paid is admitted: the cap still holds.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import { hi, chat, worstNanos, inputBound, costNanos, paidDeployment, nanos, dollars, mockBill, freeBrokenDeployment, tally } from './budget_helpers.mjs';
import { RedisServer, haveRedis } from './services.mjs';

const tallyU = (rs) => tally(rs, { unavailable: true });
const state = useMock();
const required = process.env.TOLLGATE_REQUIRE_SERVICES === '1';
const skip = !haveRedis && !required ? 'redis-server is not installed (scripts/install-deps.sh)' : false;

/// A gateway with a paid and a free model on the mock, its ledger on `redis`.
function gatewayOnRedis(ctx, redis, tollgate_settings) {
  const free = freeBrokenDeployment('free-model');
  free.litellm_params.api_base = `${state.mock.url}/v1`;
  return ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(state.mock, 'paid-model', 'paid-upstream'), free],
    router_settings: { redis_url: redis.url },
    tollgate_settings,
  }));
}

e2e('Redis down: paid attempts 503 ledger_unavailable, free served, readiness 503; Redis back empty: rebuilt from the store, the cap holds and spend equals the bill', async (ctx) => {
  const { mock } = state;
  const redis = await RedisServer.start();
  try {
    const gw = await gatewayOnRedis(ctx, redis, { ledger_lease_ms: 1000, redis_timeout_ms: 200 });
    const body = hi('paid-model');
    const worst = worstNanos(body);
    await mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 20 }]);
    const k = await gw.generateKey({ max_budget: dollars(10 * worst) });
    await waitFor(async () => (await gw.fetch('/health/readiness', { method: 'GET' })).status === 200, { what: 'ready' });

    const first = tallyU(await Promise.all(Array.from({ length: 4 }, () => chat(gw, k.key, body))));
    assert.deepEqual(first.other, []);
    assert.equal(first.ok, 4);

    await redis.stop();
    const down = tallyU(await Promise.all(Array.from({ length: 5 }, () => chat(gw, k.key, body))));
    assert.equal(down.unavailable, 5, JSON.stringify(down));
    const f = await chat(gw, k.key, hi('free-model'));
    assert.equal(f.status, 200, `a free model is served while Redis is down: ${f.text}`);
    await waitFor(async () => (await gw.fetch('/health/readiness', { method: 'GET' })).status === 503,
      { what: 'readiness 503 while Redis is down' });

    await redis.resume();  // empty: nothing was persisted
    await waitFor(async () => (await gw.fetch('/health/readiness', { method: 'GET' })).status === 200,
      { what: 'readiness back after the rebuild', timeoutMs: 10000 });
    assert.ok(Number(redis.cli('EXISTS', 'tollgate:ready')) === 1);

    // 4 spent of 10: a burst of 30 gets exactly 6 more.
    const after = tallyU(await Promise.all(Array.from({ length: 30 }, () => chat(gw, k.key, body))));
    assert.deepEqual(after.other, []);
    assert.equal(after.ok, 6, JSON.stringify(after));
    const bill = await mockBill(mock, 'paid-upstream');
    assert.equal(bill.requests, 10, 'the upstream saw only admitted requests');
    const info = await waitFor(async () => {
      const i = await gw.keyInfo(k.key);
      return nanos(i.spend) > 0 ? i : null;
    });
    const spend = nanos(info.spend);
    // The key's spend in the durable ledger (the spend log) equals the bill.
    const logs = await gw.admin(`/spend/logs?api_key=${encodeURIComponent(k.token)}`);
    const logged = logs.reduce((s, r) => s + nanos(r.spend), 0);
    assert.equal(logged, 10 * costNanos(inputBound(body), 10));
    assert.ok(logged <= 10 * worst);
    assert.ok(logged >= bill.nanos && logged - bill.nanos <= 10, `logged ${logged} vs bill ${bill.nanos}`);
    assert.ok(spend <= 10 * worst, `key spend ${spend}`);
  } finally {
    await redis.stop();
  }
}, { timeout: 60000, skip });

e2e('Redis unreachable at start: the gateway starts, readiness 503, paid 503 and free served, until Redis answers', async (ctx) => {
  const { mock } = state;
  const redis = await RedisServer.start();
  await redis.stop();  // its port is known and nothing listens there yet
  try {
    const gw = await gatewayOnRedis(ctx, redis, { redis_timeout_ms: 200 });
    const ready = await gw.fetch('/health/readiness', { method: 'GET' });
    assert.equal(ready.status, 503, ready.text);
    const k = await gw.generateKey({ max_budget: 1 });
    const paid = await chat(gw, k.key, hi('paid-model'));
    assert.equal(paid.status, 503, paid.text);
    assert.equal(paid.json?.error?.code, 'ledger_unavailable');
    assert.equal((await chat(gw, k.key, hi('free-model'))).status, 200);
    assert.equal((await mockBill(mock, 'paid-upstream')).requests, 0, 'nothing paid was sent');

    await redis.resume();
    await waitFor(async () => (await gw.fetch('/health/readiness', { method: 'GET' })).status === 200,
      { what: 'ready once Redis answers', timeoutMs: 10000 });
    const ok = await chat(gw, k.key, hi('paid-model'));
    assert.equal(ok.status, 200, ok.text);
  } finally {
    await redis.stop();
  }
}, { timeout: 60000, skip });
