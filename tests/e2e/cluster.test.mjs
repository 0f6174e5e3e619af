// Scale-out (issue 9): three gateways behind nginx on one PostgreSQL database and one Redis, all
// real servers (scripts/services.sh starts them; a test here owns its database and key prefix).
// Money is asserted against the simulator's bill, not only status codes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { after } from 'node:test';
import { useMock, e2e, gatewayConfig, waitFor, sleep, sseData, openaiDeployment, circuitOf, chatBody } from './harness.mjs';
import { hi, chat, worstNanos, inputBound, costNanos, paidDeployment, dollars, mockBill, tally } from './budget_helpers.mjs';
import { Cluster, freshDatabase, dropDatabase, query, clusterSkip, REDIS } from './cluster.mjs';

const state = useMock();
const databases = [];
after(() => databases.forEach(dropDatabase));

/// A cluster of `n` on a fresh database and its own Redis key prefix.
async function cluster(extra = {}, n = 3) {
  const db = freshDatabase();
  databases.push(db);
  const config = gatewayConfig({
    model_list: [paidDeployment(state.mock, 'paid-model', 'paid-upstream'), ...(extra.model_list ?? [])],
    fallback_policy: extra.fallback_policy,
    general_settings: { database_url: db.url, ...(extra.general_settings ?? {}) },
    router_settings: { redis_url: REDIS },
    litellm_settings: extra.litellm_settings,
    ...(extra.fallback_policy ? { fallback_policy: extra.fallback_policy } : {}),
    tollgate_settings: {
      redis_key_prefix: `tg${randomBytes(4).toString('hex')}:`, ledger_lease_ms: 1000, identity_refresh_ms: 100,
      ...(extra.tollgate_settings ?? {}),
    },
  });
  const c = await Cluster.start(config, n);
  c.db = db;
  return c;
}

/// POST /v1/chat/completions on a connection of its own; {status, text, json}.
function postOnce(base, key, payload) {
  return new Promise((resolve) => {
    const data = JSON.stringify(payload);
    const req = http.request(`${base}/v1/chat/completions`, {
      method: 'POST', agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data), connection: 'close' },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* SSE or not JSON */ }
        resolve({ status: res.statusCode, text, json });
      });
      res.on('error', (e) => resolve({ status: 0, text: `${text} | ${e}` }));
    });
    req.on('error', (e) => resolve({ status: 0, text: String(e) }));
    req.end(data);
  });
}

/// Runs `fn(cluster)` on a fresh cluster; its logs join a failure; the cluster is stopped after.
async function withCluster(extra, fn) {
  const c = await cluster(extra);
  try {
    await fn(c);
  } catch (e) {
    // An assertion's diff replaces its message in the report: the logs go to stderr as well.
    e.message += `\n${c.logs()}`;
    console.error(c.logs());
    throw e;
  } finally {
    await c.stop();
  }
}

/// Settled charges in the durable ledger (nano-dollars), by settle kind, and reserves with no settle.
function ledgerTotals(dbUrl) {
  const by = {};
  for (const [kind, sum] of query(dbUrl, "SELECT settle_kind, COALESCE(SUM(actual_nanos),0) FROM ledger WHERE kind = 'settle' GROUP BY settle_kind"))
    by[kind] = Number(sum);
  const [[open]] = query(dbUrl, "SELECT COUNT(*) FROM ledger r WHERE r.kind = 'reserve' AND NOT EXISTS "
    + "(SELECT 1 FROM ledger s WHERE s.kind = 'settle' AND s.reservation_id = r.reservation_id)");
  const total = Object.values(by).reduce((a, b) => a + b, 0);
  return { by, total, open: Number(open) };
}

/// Releases in the durable ledger: settle records that charged nothing (no_usage).
function releases(dbUrl) {
  return Number(query(dbUrl, "SELECT COUNT(*) FROM ledger WHERE kind = 'settle' AND settle_kind = 'no_usage' AND actual_nanos = 0")[0][0]);
}

const body = hi('paid-model');
const worst = worstNanos(body);
const cost = costNanos(inputBound(body), 10);

/// 300 concurrent paid requests through nginx; exactly `fits` are served and the ledger equals the bill.
async function capHolds(c, keyOf, fits, what) {
  await state.mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 50 }]);
  const t = tally(await Promise.all(Array.from({ length: 300 }, (_, i) => chat(c.front, keyOf(i), body))));
  assert.deepEqual(t.other, [], `${what}: only 200 and 429 budget_exceeded`);
  assert.equal(t.ok, fits, `${what}: served ${t.ok} of 300 (budget fits ${fits})`);
  const bill = await mockBill(state.mock, 'paid-upstream');
  assert.equal(bill.requests, fits, `${what}: the upstream saw only admitted requests`);
  const totals = await waitFor(async () => {
    const l = ledgerTotals(c.db.url);
    return l.open === 0 && l.total >= bill.nanos ? l : null;
  }, { what: `${what}: every reservation settled durably`, timeoutMs: 10000 });
  assert.ok(totals.total <= fits * worst, `${what}: spend ${totals.total} ≤ max_budget ${fits * worst}`);
  assert.equal(totals.total, fits * cost, `${what}: spend == ${fits} × the attempt's cost`);
  assert.ok(totals.total - bill.nanos <= fits, `${what}: ledger ${totals.total} vs the simulator's bill ${bill.nanos}`);
}

e2e('3 instances behind nginx: 300 concurrent requests on a key, a team, an end user whose budget fits 20 → exactly 20 served, spend ≤ max_budget and == the bill', async () => withCluster({}, async (c) => {
  const k = await c.front.generateKey({ max_budget: dollars(20 * worst) });
  await capHolds(c, () => k.key, 20, 'key budget');

  const team = await c.front.admin('/team/new', { team_alias: 'cluster-team', max_budget: dollars(20 * worst) });
  const t1 = await c.front.generateKey({ team_id: team.team_id });
  const t2 = await c.front.generateKey({ team_id: team.team_id });
  const before = ledgerTotals(c.db.url).total;
  const releasesBefore = releases(c.db.url);
  await state.mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 50 }]);
  const billBefore = (await mockBill(state.mock, 'paid-upstream')).nanos;
  const t = tally(await Promise.all(Array.from({ length: 300 }, (_, i) => chat(c.front, i % 2 ? t1.key : t2.key, body))));
  assert.deepEqual(t.other, []);
  assert.equal(t.ok, 20, `team budget: served ${t.ok}`);
  const teamSpend = await waitFor(async () => {
    const l = ledgerTotals(c.db.url);
    return l.open === 0 && l.total - before === 20 * cost ? l.total - before : null;
  }, { what: 'team spend settled', timeoutMs: 10000 });
  const billAfter = (await mockBill(state.mock, 'paid-upstream')).nanos;
  assert.ok(teamSpend - (billAfter - billBefore) <= 20, 'team: ledger == bill');
  // Nothing was known of the team's scope yet: the instances wrote reserve records while Redis
  // decided, and closed each refused one with a release (none is left open, checked above).
  assert.ok(releases(c.db.url) - releasesBefore > 0, 'refused reserves recorded early were released');

  const rich = await c.front.generateKey({});
  await c.front.admin('/customer/new', { user_id: 'cluster-cust', max_budget: dollars(20 * worst) });
  await sleep(300);  // a budget created on one instance is enforced by the others from their next identity poll (identity_refresh_ms)
  const before2 = ledgerTotals(c.db.url).total;
  const u = tally(await Promise.all(Array.from({ length: 300 }, () => chat(c.front, rich.key, { ...body, user: 'cluster-cust' }))));
  assert.deepEqual(u.other, []);
  assert.equal(u.ok, 20, `end-user budget: served ${u.ok}`);
  await waitFor(async () => {
    const l = ledgerTotals(c.db.url);
    return l.open === 0 && l.total - before2 === 20 * cost;
  }, { what: 'end-user spend settled', timeoutMs: 10000 });
}), { timeout: 120000, skip: clusterSkip });

e2e('3 instances: a global budget (litellm_settings.max_budget) that fits 20 holds across them', async () => withCluster({ litellm_settings: { max_budget: dollars(20 * worst) } }, async (c) => {
  const k = await c.front.generateKey({});
  await capHolds(c, () => k.key, 20, 'global budget');
}), { timeout: 120000, skip: clusterSkip });

e2e('SIGKILL one instance mid-load: after its lease, spend ≥ the bill and exceeds it only by the recovered reservations; nothing open; the others keep serving', async () => withCluster({}, async (c) => {
  const k = await c.front.generateKey({ max_budget: 100 });
  await state.mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 1500 }]);
  const load = Promise.all(Array.from({ length: 90 }, (_, i) => chat(c.gateways[i % 3], k.key, body).catch((e) => ({ status: 0, text: String(e) }))));
  // Killed while its requests are in flight: their reservations are durable and unsettled.
  await waitFor(async () => ledgerTotals(c.db.url).open >= 60, { what: 'requests in flight on every instance', timeoutMs: 10000 });
  c.gateways[1].kill();
  const rs = await load;
  const served = rs.filter((r) => r.status === 200).length;
  assert.ok(served >= 55, `the two survivors served their share (${served} of 90)`);
  // The others keep serving (through nginx, which skips the dead one).
  const more = await Promise.all(Array.from({ length: 10 }, () => chat(c.front, k.key, body)));
  assert.deepEqual(more.map((r) => r.status), Array(10).fill(200));
  const bill = await mockBill(state.mock, 'paid-upstream');
  const totals = await waitFor(async () => {
    const l = ledgerTotals(c.db.url);
    return l.open === 0 ? l : null;
  }, { what: "the dead instance's reservations settled by a survivor", timeoutMs: 15000 });
  const recovered = totals.by.recovered ?? 0;
  assert.ok(recovered > 0, `the killed instance had reservations in flight (${JSON.stringify(totals.by)})`);
  assert.ok(totals.total >= bill.nanos, `spend ${totals.total} ≥ the bill ${bill.nanos}`);
  const marked = recovered + (totals.by.unknown ?? 0);
  assert.ok(totals.total - bill.nanos <= marked + bill.requests,
    `spend exceeds the bill (${totals.total - bill.nanos}) only by the marked reservations (${marked})`);
}), { timeout: 120000, skip: clusterSkip });

e2e('a key blocked on instance A is refused on instance B within 1 s; rpm_limit holds across instances', async () => withCluster({}, async (c) => {
  const [a, b, d] = c.gateways;
  const k = await a.generateKey({ max_budget: 10 });
  // A key created on A works on B at once: B looks at the store before refusing a key it does not know.
  // The jobs endpoint on C too: the new key is authenticated (the job is just not there).
  const [first, job] = await Promise.all([chat(b, k.key, body),
    d.fetch('/v1/tollgate/jobs/no-such-job', { method: 'GET', auth: k.key })]);
  assert.equal(first.status, 200, `B's first answer for a key created on A: ${first.status} ${first.text}`);
  assert.equal(job.status, 404, `C's first jobs answer for a key created on A: ${job.status} ${job.text}`);
  await a.admin('/key/block', { key: k.key });
  const t0 = Date.now();
  await waitFor(async () => (await chat(b, k.key, body)).status >= 400, { what: 'B refuses the blocked key', timeoutMs: 1000, intervalMs: 20 });
  assert.ok(Date.now() - t0 < 1000);

  const limited = await a.generateKey({ max_budget: 10, rpm_limit: 5 });
  const rs = [];
  for (let i = 0; i < 12; i++) rs.push(await chat([a, b, d][i % 3], limited.key, body));
  const ok = rs.filter((r) => r.status === 200).length;
  const limitedN = rs.filter((r) => r.status === 429 && /rate/i.test(r.text)).length;
  // 5 per minute across all three (a minute boundary in the middle allows at most 5 more).
  assert.ok(ok === 5 || (ok <= 10 && new Date().getSeconds() < 3), `served ${ok}, rate-limited ${limitedN}`);
  assert.equal(ok + limitedN, 12);
}), { timeout: 60000, skip: clusterSkip });

e2e('a rolling restart of all three instances under load loses no accepted request and leaves no reservation unsettled', async () => withCluster({ tollgate_settings: { drain_timeout_ms: 10000 } }, async (c) => {
  const k = await c.front.generateKey({ max_budget: 100 });
  await state.mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 150 }]);
  let stop = false;
  const results = [];
  const worker = async (w) => {
    while (!stop) {
      const stream = w % 2 === 1;
      // One connection per request (Connection: close): a keep-alive connection nginx closes
      // while it reloads could otherwise meet a request sent on it — a race HTTP keep-alive has
      // with any server, not a request the cluster accepted.
      const r = await postOnce(c.front.url, k.key, stream ? { ...body, stream: true } : body);
      r.stream = stream;
      results.push(r);
    }
  };
  const workers = Array.from({ length: 8 }, (_, w) => worker(w));
  for (let i = 0; i < 3; i++) {
    await sleep(300);
    await c.restart(i);
  }
  await sleep(300);
  stop = true;
  await Promise.all(workers);
  const bad = [];
  for (const r of results) {
    if (r.status !== 200) { bad.push(`${r.status} ${r.text.slice(0, 120)}`); continue; }
    if (r.stream) {
      const events = sseData(r.text);
      if (events.at(-1) !== '[DONE]') bad.push(`stream cut: ${r.text.slice(-120)}`);
    } else if (!r.json?.choices?.length) bad.push(`incomplete body: ${r.text.slice(0, 120)}`);
  }
  assert.ok(results.length > 30, `load ran (${results.length} requests)`);
  assert.deepEqual(bad, [], `every accepted request completed (${results.length} requests, 3 restarts)`);
  const totals = await waitFor(async () => {
    const l = ledgerTotals(c.db.url);
    return l.open === 0 ? l : null;
  }, { what: 'no reservation unsettled', timeoutMs: 10000 });
  assert.equal(totals.by.recovered ?? 0, 0, 'a drained instance leaves nothing for a survivor to recover');
  const bill = await mockBill(state.mock, 'paid-upstream');
  assert.equal(bill.requests, results.length, 'the upstream saw each request once');
  assert.ok(totals.total >= bill.nanos && totals.total - bill.nanos <= bill.requests, `ledger ${totals.total} == bill ${bill.nanos}`);
}), { timeout: 120000, skip: clusterSkip });

e2e('a deployment circuit opened on instance A is open on B and C within 1 s', async () => withCluster({
  model_list: [openaiDeployment(state.mock, 'flaky', 'flaky-up', { id: 'flaky-a' })],
  fallback_policy: { defaults: { budgets: { max_retries: 0 }, circuit: { consecutive_failures: 2, cooldown_ms: 10000 } } },
}, async (c) => {
  const [a, b, d] = c.gateways;
  await state.mock.script('flaky-up', [{ error: 'server_error' }]);
  for (let i = 0; i < 2; i++) await a.fetch('/v1/chat/completions', { body: chatBody('flaky', { max_tokens: 8 }) });
  assert.equal((await circuitOf(a, 'deployments', 'flaky-a'))?.state, 'open', JSON.stringify(await a.admin('/tollgate/circuits')));
  const t0 = Date.now();
  for (const g of [b, d]) {
    await waitFor(async () => (await circuitOf(g, 'deployments', 'flaky-a'))?.state === 'open',
      { what: 'the circuit open on the other instance', timeoutMs: 1000, intervalMs: 20 });
  }
  assert.ok(Date.now() - t0 < 1000);
  // B does not send to it: the upstream saw only A's two attempts.
  const r = await b.fetch('/v1/chat/completions', { body: chatBody('flaky', { max_tokens: 8 }) });
  assert.equal(r.json?.error?.code, 'no_deployments_available', r.text);
  assert.equal((await state.mock.model('flaky-up')).requests, 2, 'B and C sent nothing to the open deployment');
}), { timeout: 60000, skip: clusterSkip });

// Deferred jobs (issue 9 §4): the three runners share one tollgate_jobs table; each job is claimed
// (compare-and-set) by exactly one of them, so each runs upstream once and is charged once.
e2e('3 instances: jobs deferred while the group\'s circuits are open each run exactly once, and spend == the bill', async () => withCluster({
  fallback_policy: {
    model_groups: { 'paid-model': { degradation: { mode: 'deferred' }, circuit: { consecutive_failures: 1, cooldown_ms: 5000 } } },
  },
}, async (c) => {
  const JOBS = 30;
  const k = await c.front.generateKey({});
  // Every attempt fails (and opens each instance's circuit): every request is deferred.
  await state.mock.script('paid-upstream', [{ error: 'overloaded' }]);
  const deferred = await Promise.all(Array.from({ length: JOBS }, () => chat(c.front, k.key, body)));
  for (const r of deferred) assert.equal(r.status, 202, r.text);
  const ids = new Set(deferred.map((r) => r.json.id));
  assert.equal(ids.size, JOBS);
  const failedBefore = (await state.mock.model('paid-upstream')).requests;
  // The upstream recovers before the circuits' cooldown ends; then all three runners race for
  // the same queued jobs.
  await state.mock.script('paid-upstream', [{ prompt_tokens: inputBound(body), latency_ms: 100 }]);
  await waitFor(async () => {
    const [[n]] = query(c.db.url, "SELECT COUNT(*) FROM tollgate_jobs WHERE status IN ('succeeded', 'failed')");
    return Number(n) === JOBS;
  }, { what: 'every job to finish', timeoutMs: 60000 });
  // A run can end before any upstream call: the half-open deployment's one probe for the cluster
  // was carried by another instance (the job is then queued again). What must hold is that each
  // job succeeded, reached the upstream once and was charged once (below).
  const statuses = query(c.db.url, 'SELECT status, COUNT(*) FROM tollgate_jobs GROUP BY status');
  assert.deepEqual(statuses, [['succeeded', String(JOBS)]], 'every job succeeded');
  const upstream = (await state.mock.model('paid-upstream')).requests - failedBefore;
  assert.equal(upstream, JOBS, 'the upstream saw each job once');
  for (const id of ids) {
    const g = await c.front.fetch(`/v1/tollgate/jobs/${id}`, { method: 'GET', auth: k.key });
    assert.equal(g.status, 200, g.text);
    assert.equal(g.json.status, 'succeeded', g.text);
    assert.ok(g.json.attempts >= 1, g.text);
    assert.equal(g.json.result.object, 'chat.completion');
  }
  const [[runs]] = query(c.db.url, "SELECT COUNT(DISTINCT request_id) FROM tollgate_jobs WHERE request_id <> ''");
  assert.equal(Number(runs), JOBS);
  // Money: each job charged once, at its real cost (the failed attempts were unbilled: 0).
  const bill = await mockBill(state.mock, 'paid-upstream');
  assert.equal(bill.requests - failedBefore, JOBS);
  const totals = await waitFor(async () => {
    const l = ledgerTotals(c.db.url);
    return l.open === 0 && l.total >= bill.nanos ? l : null;
  }, { what: 'every reservation settled durably', timeoutMs: 10000 });
  assert.equal(totals.total, JOBS * cost, `spend == ${JOBS} × one run's cost`);
  assert.ok(totals.total - bill.nanos <= JOBS, `ledger ${totals.total} vs the simulator's bill ${bill.nanos}`);
}), { timeout: 120000, skip: clusterSkip });

e2e('a half-open deployment is probed once for the whole cluster; its success closes the circuit on every instance', async () => withCluster({
  model_list: [openaiDeployment(state.mock, 'flaky', 'flaky-up', { id: 'flaky-a' })],
  fallback_policy: { defaults: { budgets: { max_retries: 0 }, circuit: { consecutive_failures: 1, cooldown_ms: 1500 } } },
}, async (c) => {
  const ask = (g) => g.fetch('/v1/chat/completions', { body: chatBody('flaky', { max_tokens: 8 }) });
  await state.mock.script('flaky-up', [{ error: 'server_error' }]);
  await ask(c.gateways[0]);
  for (const g of c.gateways)
    await waitFor(async () => (await circuitOf(g, 'deployments', 'flaky-a'))?.state === 'open', { what: 'open everywhere', timeoutMs: 2000 });
  await state.mock.script('flaky-up', [{ latency_ms: 300 }]);  // recovered (and slow, so the probes overlap)
  const before = (await state.mock.model('flaky-up')).requests;
  await sleep(1700);  // past the cooldown: half-open on every instance
  const rs = await Promise.all(c.gateways.map((g) => ask(g)));
  const sent = (await state.mock.model('flaky-up')).requests - before;
  assert.equal(sent, 1, `one probe for the cluster (statuses ${rs.map((r) => r.status)})`);
  assert.equal(rs.filter((r) => r.status === 200).length, 1);
  for (const g of c.gateways)
    await waitFor(async () => (await circuitOf(g, 'deployments', 'flaky-a'))?.state === 'closed',
      { what: 'closed on every instance after the probe', timeoutMs: 1000, intervalMs: 20 });
  const after = await Promise.all(c.gateways.map((g) => ask(g)));
  assert.deepEqual(after.map((r) => r.status), [200, 200, 200]);
}), { timeout: 60000, skip: clusterSkip });
