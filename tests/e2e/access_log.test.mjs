// The access log (issue 10): one JSON line per request with what an operator greps for, and
// never an API key or prompt text, in it or in the process log.
import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import { paidDeployment, chat, hi } from './budget_helpers.mjs';

const state = useMock();
const SECRET_PROMPT = 'the launch code is swordfish-7731';

e2e('one JSON line per request, with ids, models, status, class, tokens, cost and timings; no key and no prompt in any log', async (ctx) => {
  const { mock } = state;
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'tollgate-access-')), 'access.jsonl');
  const gw = await ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'al-paid', 'al-up')],
    tollgate_settings: { access_log: file },
  }));
  const k = await gw.generateKey({ key_alias: 'al-key' });
  const body = { ...hi('al-paid'), messages: [{ role: 'user', content: SECRET_PROMPT }] };
  await mock.script('al-up', [{ content: 'ok then', completion_tokens: 2 }]);
  const ok = await chat(gw, k.key, body);
  assert.equal(ok.status, 200);
  const streamed = await chat(gw, k.key, { ...body, stream: true });
  assert.equal(streamed.status, 200);
  await mock.script('al-up', [{ status: 400, error: 'invalid_request_error' }]);
  const bad = await chat(gw, k.key, body);
  assert.equal(bad.status, 400);
  const lines = await waitFor(() => {
    if (!existsSync(file)) return null;
    const l = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    return l.length >= 3 ? l : null;
  }, { what: 'three access lines' });
  assert.equal(lines.length, 3);
  const rows = lines.map((l) => JSON.parse(l));
  const first = rows.find((r) => r.request_id === ok.headers.get('x-litellm-call-id'));
  assert.ok(first, lines.join('\n'));
  assert.equal(first.trace_id, ok.headers.get('x-tollgate-trace-id'));
  assert.equal(first.hashed_api_key, k.token);
  assert.equal(first.key_alias, 'al-key');
  assert.equal(first.model_requested, 'al-paid');
  assert.equal(first.model_served, 'al-up');
  assert.equal(first.status, 200);
  assert.equal(first.outcome, 'served');
  assert.equal(first.tokens.output, 2);
  assert.ok(first.tokens.input > 0);
  assert.ok(Number(first.cost) > 0);
  assert.ok(Number(first.reserved) >= Number(first.cost));
  assert.ok(first.duration_ms >= 0 && first.overhead_ms >= 0 && first.overhead_ms <= first.duration_ms);
  const s = rows.find((r) => r.request_id === streamed.headers.get('x-litellm-call-id'));
  assert.equal(s.stream, true);
  assert.ok(s.time_to_first_token_ms >= 0);
  const f = rows.find((r) => r.request_id === bad.headers.get('x-litellm-call-id'));
  assert.equal(f.status, 400);
  assert.equal(f.failure_class, 'caller_fix_required');
  const all = readFileSync(file, 'utf8') + gw.logs();
  assert.ok(!all.includes(k.key), 'the API key is never logged');
  assert.ok(!all.includes('swordfish'), 'prompt text is never logged');
});

e2e('an access_log that cannot be opened is a clear start error', async () => {
  const { Gateway } = await import('./harness.mjs');
  // Its directory is a regular file: the log cannot be created there.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-access-'));
  writeFileSync(path.join(dir, 'plain-file'), 'x');
  await assert.rejects(Gateway.start(gatewayConfig({
    model_list: [paidDeployment(state.mock, 'al-paid', 'al-up')],
    tollgate_settings: { access_log: path.join(dir, 'plain-file', 'access.jsonl') },
  })), /access_log/);
});
