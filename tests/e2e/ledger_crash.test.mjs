// The durable ledger: SIGKILL the gateway in the middle of a load of paid requests, restart
// it on the same data_dir, and compare the rebuilt spend with the simulator's bill.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import { hi, chat, worstNanos, costNanos, mockPromptTokens, paidDeployment, nanos, dollars, mockBill, expectSpend } from './budget_helpers.mjs';

const state = useMock();

e2e('SIGKILL under load: after restart no served attempt is missing from the ledger (bill ≤ spend ≤ bill + unknown outcomes)', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-crash-'));
  try {
    const config = gatewayConfig({
      model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')],
      tollgate_settings: { data_dir: dataDir },
    });
    let gw = await ctx.gateway(config);
    const k = await gw.generateKey({ max_budget: 10 });
    await mock.script('paid-upstream', [{ latency_ms: 50 }]);
    const body = hi('paid-model');
    const worst = worstNanos(body);
    const actual = costNanos(mockPromptTokens(body), 10);
    assert.ok(actual < worst);

    // 100 requests, 10 at a time; SIGKILL once 30 have been answered.
    const TOTAL = 100;
    const CONCURRENCY = 10;
    let next = 0;
    let answered = 0;
    let inFlight = 0;
    let inFlightAtKill = null;
    let killed = false;
    const outcomes = { ok: 0, failed: 0 };
    const worker = async () => {
      while (next < TOTAL && !killed) {
        next++;
        inFlight++;
        try {
          const r = await chat(gw, k.key, body);
          if (r.status === 200) outcomes.ok++;
          else outcomes.failed++;
          answered++;
        } catch {
          outcomes.failed++; // connection reset by the kill
        } finally {
          inFlight--;
        }
        if (answered >= 30 && !killed) {
          killed = true;
          inFlightAtKill = inFlight;
          gw.kill();
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    assert.ok(killed, 'the gateway was killed mid-load');
    assert.ok(next < TOTAL, `killed before the load ended (${next} of ${TOTAL} sent)`);
    await gw.proc.exited;
    assert.equal(gw.proc.exit.signal, 'SIGKILL');

    // Let the mock finish what it had in progress (the dropped connections end as cancelled).
    const bill = await waitFor(async () => {
      const m = await mockBill(mock, 'paid-upstream');
      return m.requests === m.succeeded + m.failed + m.cancelled ? m : null;
    }, { what: 'the mock to finish its in-progress requests' });
    assert.ok(bill.succeeded >= outcomes.ok, 'every 200 the client saw was billed by the mock');
    assert.equal(bill.nanos, bill.succeeded * actual);

    // Restart on the same data_dir: open reservations settle at their reserved amount.
    gw = await ctx.gateway(config);
    const m = /ledger recovery: (\d+) reservation\(s\) left open/.exec(gw.proc.stderr);
    const unknown = m ? Number(m[1]) : 0;
    const info = await gw.keyInfo(k.key);
    const spend = nanos(info.spend);
    assert.equal(nanos(info.reserved_spend), 0, 'nothing is left reserved after recovery');
    const detail = `spend ${spend}, bill ${bill.nanos} (${bill.succeeded} served, ${bill.cancelled} cancelled), ` +
      `${unknown} unknown outcome(s), ${inFlightAtKill} in flight at the kill, client saw ${outcomes.ok} OK`;
    assert.ok(spend >= bill.nanos, `no served attempt is missing: ${detail}`);
    // Open reservations: attempts in flight at the kill, plus answered ones whose settlement
    // record was not yet committed (each of the 10 connections has at most one of each).
    assert.ok(unknown <= 2 * CONCURRENCY, `unknown outcomes are bounded by the load's concurrency: ${detail}`);
    ctx.t.diagnostic(`crash: ${detail}`);
    const logged = nanos((await gw.admin('/global/spend')).spend);
    ctx.t.diagnostic(`crash: /global/spend (spend-log rows) after restart ${logged} nanos vs ledger ${spend}, bill ${bill.nanos}`);
    // Exact account: every settled attempt costs `actual`; every open one was charged `worst`,
    // and of those some may have been served (billed `actual`) by the mock before the kill.
    // So spend − bill = unknown × worst − (served among unknown) × actual.
    const excess = spend - bill.nanos;
    const servedAmongUnknown = (unknown * worst - excess) / actual;
    assert.ok(Number.isInteger(servedAmongUnknown) && servedAmongUnknown >= 0 && servedAmongUnknown <= unknown,
      `spend equals the bill once unknown outcomes are accounted for: ${detail}`);

    // The ledger keeps going after the restart.
    const after = await chat(gw, k.key, body);
    assert.equal(after.status, 200, after.text);
    await expectSpend(gw, k.key, spend + actual);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

e2e('after SIGKILL and restart every scope\'s spend is rebuilt from the ledger: a budget one request from full stays full', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-rebuild-'));
  try {
    const config = gatewayConfig({
      model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')],
      litellm_settings: { max_budget: 1 },
      tollgate_settings: { data_dir: dataDir },
    });
    let gw = await ctx.gateway(config);
    const body = hi('paid-model');
    const worst = worstNanos(body);
    const actual = costNanos(mockPromptTokens(body), 10);
    // Fits one request (0 + worst) but not a second (actual + worst).
    const B = dollars(worst + actual - 1);

    await gw.admin('/user/new', { user_id: 'u-member', auto_create_key: false });
    await gw.admin('/team/new', { team_id: 'team-b', max_budget: B });
    await gw.admin('/team/new', { team_id: 'team-m' });
    await gw.admin('/team/member_add', { team_id: 'team-m', member: { user_id: 'u-member', role: 'user' }, max_budget_in_team: B });
    await gw.admin('/organization/new', { organization_id: 'org-b', max_budget: B });
    await gw.admin('/team/new', { team_id: 'team-o', organization_id: 'org-b' });
    await gw.admin('/customer/new', { user_id: 'cust-b', max_budget: B });
    const personal = await gw.admin('/user/new', { user_id: 'u-personal', max_budget: B });
    const cases = [
      { kind: 'key', key: await gw.generateKey({ max_budget: B }) },
      { kind: 'key_window', key: await gw.generateKey({ budget_limits: [{ budget_duration: '1d', max_budget: B }] }) },
      { kind: 'key_model', key: await gw.generateKey({ model_max_budget: { 'paid-model': { max_budget: B } } }) },
      { kind: 'user', key: personal, id: 'u-personal' },
      { kind: 'team', key: await gw.generateKey({ team_id: 'team-b' }), id: 'team-b' },
      { kind: 'team_member', key: await gw.generateKey({ team_id: 'team-m', user_id: 'u-member' }), id: 'team-m/u-member' },
      { kind: 'organization', key: await gw.generateKey({ team_id: 'team-o' }), id: 'org-b' },
      { kind: 'end_user', key: await gw.generateKey({}), id: 'cust-b', extra: { user: 'cust-b' } },
    ];
    for (const c of cases) {
      const r = await chat(gw, c.key.key, { ...body, ...(c.extra ?? {}) });
      assert.equal(r.status, 200, `${c.kind}: ${r.text}`);
    }
    // /global/spend sums the spend-log rows, written just after each response: poll.
    const spentBefore = cases.length * actual;
    await waitFor(async () => nanos((await gw.admin('/global/spend')).spend) === spentBefore, { what: '/global/spend' });

    gw.kill();
    await gw.proc.exited;
    gw = await ctx.gateway(config);
    for (const c of cases) {
      const r = await chat(gw, c.key.key, { ...body, ...(c.extra ?? {}) });
      assert.equal(r.status, 429, `${c.kind} budget forgotten after restart: ${r.text}`);
      assert.equal(r.json.error.type, 'budget_exceeded');
      assert.match(r.json.error.message, new RegExp(`: ${c.kind} ${c.id ?? c.key.token}\\b`));
    }
    assert.equal(nanos((await gw.admin('/global/spend')).spend), spentBefore);
    assert.equal((await mock.model('paid-upstream')).requests, cases.length);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

// An upstream that reports absurd usage (10^15 tokens, which the readers accept) is charged at the
// saturation value of the ledger's money; two such charges once overflowed the database's SUM at
// recovery ("integer overflow": the gateway could never start again) and in /global/spend (503).
e2e('two charges at the ledger\'s saturation value: /global/spend answers, a restart recovers, the key stays refused', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-huge-'));
  try {
    const config = gatewayConfig({
      // $10 per million output tokens: 10^15 of them cost $10^10, beyond kMaxNanos ($9.22e9).
      model_list: [paidDeployment(mock, 'paid-model', 'huge-upstream', { outPrice: '0.00001' })],
      tollgate_settings: { data_dir: dataDir },
    });
    let gw = await ctx.gateway(config);
    const k = await gw.generateKey({ max_budget: 100 });
    await mock.script('huge-upstream', [{ usage: { prompt_tokens: 10, completion_tokens: 1e15, total_tokens: 1e15 + 10 }, latency_ms: 300 }]);
    const body = hi('paid-model');
    // Admitted together (each reserves a few cents of $100), both charged at the saturation value.
    const served = await Promise.all([chat(gw, k.key, body), chat(gw, k.key, body)]);
    for (const r of served) {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-litellm-response-cost'), '9223372036.854775807', 'the charge saturates');
    }
    const SATURATED = 9.2e18;  // kMaxNanos ≈ 9.223e18, read through a float
    const spend = nanos((await gw.keyInfo(k.key)).spend);
    assert.ok(spend >= SATURATED, `spend ${spend}`);
    // Two saturated rows: a plain SUM overflowed here (503, "integer overflow").
    const global = await gw.admin('/global/spend');
    assert.ok(Number(global.spend) * 1e9 >= SATURATED, JSON.stringify(global));
    const refused = await chat(gw, k.key, body);
    assert.equal(refused.status, 429, refused.text);
    gw.kill();
    await gw.proc.exited;
    gw = await ctx.gateway(config);
    assert.equal(nanos((await gw.keyInfo(k.key)).spend), spend, 'the spend is rebuilt, saturated, after the restart');
    const again = await chat(gw, k.key, body);
    assert.equal(again.status, 429, again.text);
    assert.equal(again.json.error.type, 'budget_exceeded');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
