// Admin API parity with LiteLLM (issue 11 §5): Tollgate's admin responses compared field by field
// with LiteLLM's documented shapes (key/generate, key/info, team/info, user/info, customer/info,
// spend/logs), the same comparison that docs/admin_api.md shows as a table (this test checks that
// the table says what the test asserts); then the list, budget and spend-report endpoints, a
// linked budget (budget_id) enforced by admission with money asserted against the simulator's
// bill, a budget_duration change that starts a new window (LiteLLM #34270), and bad input.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { useMock, e2e, gatewayConfig, sleep } from './harness.mjs';
import { hi, chat, paidDeployment, spendLogRow, expectSpend, mockBillNanos, nanos, IN_PRICE, OUT_PRICE } from './budget_helpers.mjs';

const state = useMock();
const PRICES = { input: IN_PRICE, output: OUT_PRICE };
const here = path.dirname(fileURLToPath(import.meta.url));

// LiteLLM's documented fields (docs.litellm.ai proxy/virtual_keys, proxy/users, proxy/team_budgets,
// proxy/customers, proxy/cost_tracking, and the proxy's Swagger schemas GenerateKeyResponse,
// LiteLLM_VerificationToken, LiteLLM_TeamTable, LiteLLM_UserTable, LiteLLM_EndUserTable,
// LiteLLM_SpendLogs). Each: [field, JSON type LiteLLM gives it, Tollgate's status].
// 'same': present in Tollgate with that type (or null); 'absent': Tollgate does not return it
// (docs/admin_api.md says why); 'other': owned by another part of issue 11, not checked here.
const S = 'same', A = 'absent', O = 'other';
const str = 'string', num = 'number', bool = 'boolean', arr = 'array', obj = 'object';
export const SHAPES = {
  'key/generate': [
    ['key', str, S], ['token', str, S], ['key_name', str, S], ['key_alias', str, S], ['expires', str, S],
    ['user_id', str, S], ['team_id', str, S], ['organization_id', str, S], ['budget_id', str, S],
    ['max_budget', num, S], ['soft_budget', num, S], ['budget_duration', str, S], ['budget_reset_at', str, S],
    ['models', arr, S], ['metadata', obj, S], ['tags', arr, S], ['spend', num, S], ['tpm_limit', num, S],
    ['rpm_limit', num, S], ['max_parallel_requests', num, S], ['model_max_budget', obj, S], ['blocked', bool, S],
    ['created_at', str, S], ['updated_at', str, S],
    ['token_id', str, A], ['created_by', str, A], ['updated_by', str, A], ['aliases', obj, A], ['config', obj, A],
    ['permissions', obj, A], ['allowed_cache_controls', arr, A], ['model_rpm_limit', obj, A],
    ['model_tpm_limit', obj, A], ['guardrails', arr, A], ['enforced_params', arr, A],
  ],
  'key/info': [
    ['key_name', str, S], ['key_alias', str, S], ['token', str, S], ['spend', num, S], ['max_budget', num, S],
    ['soft_budget', num, S], ['expires', str, S], ['models', arr, S], ['user_id', str, S], ['team_id', str, S],
    ['organization_id', str, S], ['budget_id', str, S], ['max_parallel_requests', num, S], ['metadata', obj, S],
    ['tpm_limit', num, S], ['rpm_limit', num, S], ['budget_duration', str, S], ['budget_reset_at', str, S],
    ['model_max_budget', obj, S], ['blocked', bool, S], ['tags', arr, S], ['created_at', str, S],
    ['updated_at', str, S],
    ['aliases', obj, A], ['config', obj, A], ['permissions', obj, A], ['allowed_cache_controls', arr, A],
    ['model_spend', obj, A], ['soft_budget_cooldown', bool, A], ['litellm_budget_table', obj, A],
    ['created_by', str, A], ['updated_by', str, A], ['team_alias', str, A],
  ],
  'team/info': [
    ['team_id', str, S], ['team_alias', str, S], ['organization_id', str, S], ['budget_id', str, S],
    ['members_with_roles', arr, S], ['metadata', obj, S], ['tpm_limit', num, S], ['rpm_limit', num, S],
    ['max_budget', num, S], ['budget_duration', str, S], ['budget_reset_at', str, S], ['models', arr, S],
    ['blocked', bool, S], ['spend', num, S], ['created_at', str, S], ['updated_at', str, S],
    ['admins', arr, A], ['members', arr, A], ['max_parallel_requests', num, A], ['model_id', num, A],
    ['litellm_model_table', obj, A], ['team_member_permissions', arr, A],
  ],
  'user/info': [
    ['user_id', str, S], ['user_email', str, S], ['user_alias', str, S], ['max_budget', num, S],
    ['spend', num, S], ['models', arr, S], ['tpm_limit', num, S], ['rpm_limit', num, S],
    ['budget_duration', str, S], ['budget_reset_at', str, S], ['metadata', obj, S], ['created_at', str, S],
    ['updated_at', str, S],
    ['user_role', str, A], ['teams', arr, A], ['sso_user_id', str, A], ['organization_memberships', arr, A],
  ],
  'customer/info': [
    ['user_id', str, S], ['alias', str, S], ['blocked', bool, S], ['spend', num, S], ['budget_id', str, S],
    ['litellm_budget_table', obj, S],
    ['allowed_model_region', str, S], ['default_model', str, A],
  ],
  'spend/logs': [
    ['request_id', str, S], ['call_type', str, S], ['api_key', str, S], ['spend', num, S],
    ['total_tokens', num, S], ['prompt_tokens', num, S], ['completion_tokens', num, S], ['startTime', str, S],
    ['endTime', str, S], ['completionStartTime', str, S], ['request_duration_ms', num, S], ['model', str, S],
    ['model_id', str, S], ['model_group', str, S], ['custom_llm_provider', str, S], ['api_base', str, S],
    ['user', str, S], ['metadata', obj, S], ['request_tags', arr, S], ['team_id', str, S],
    ['organization_id', str, S], ['end_user', str, S], ['requester_ip_address', str, S], ['session_id', str, S],
    ['status', str, S],
    ['cache_hit', str, O], ['cache_key', str, O],
    ['messages', obj, A], ['response', obj, A], ['proxy_server_request', obj, A], ['mcp_namespaced_tool_name', str, A],
  ],
};
// The user_api_key_* fields of a spend-log row's metadata (LiteLLM's SpendLogsMetadata).
const LOG_METADATA = ['user_api_key', 'user_api_key_alias', 'user_api_key_user_id', 'user_api_key_team_id',
  'user_api_key_team_alias', 'user_api_key_org_id', 'user_api_key_end_user_id', 'requester_ip_address'];

const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? arr : typeof v);

/// Asserts `o` against the expected fields of `endpoint`; returns the fields that were null.
function compare(endpoint, o) {
  assert.ok(o && typeof o === 'object', `${endpoint}: an object`);
  const nulls = [];
  for (const [field, type, status] of SHAPES[endpoint]) {
    if (status === O) continue;
    if (status === A) {
      assert.ok(!(field in o), `${endpoint}.${field}: documented as absent in Tollgate but present`);
      continue;
    }
    assert.ok(field in o, `${endpoint}.${field}: LiteLLM has it, Tollgate does not (${JSON.stringify(o)})`);
    const t = typeOf(o[field]);
    if (t === 'null') nulls.push(field);
    else assert.equal(t, type, `${endpoint}.${field}: LiteLLM type ${type}, Tollgate ${t}`);
  }
  return nulls;
}

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

async function adminGateway(ctx, extra = {}) {
  const { mock } = state;
  return ctx.gateway(gatewayConfig({
    model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')],
    ...extra,
  }));
}

e2e('LiteLLM shapes field by field: key/generate, key/info, team/info, user/info, customer/info, spend/logs; the docs table agrees', async (ctx) => {
  const { mock } = state;
  const gw = await adminGateway(ctx);
  await gw.admin('/organization/new', { organization_id: 'org-s', organization_alias: 'Org S' });
  await gw.admin('/budget/new', { budget_id: 'b-shapes', max_budget: 5 });
  await gw.admin('/team/new', { team_id: 'team-s', team_alias: 'Team S', organization_id: 'org-s', max_budget: 10, budget_duration: '1d', rpm_limit: 100, tpm_limit: 100000 });
  await gw.admin('/user/new', { user_id: 'user-s', user_email: 's@example.com', user_alias: 'S', max_budget: 3, budget_duration: '30d', rpm_limit: 100, tpm_limit: 100000, auto_create_key: false });
  await gw.admin('/customer/new', { user_id: 'cust-s', alias: 'Customer S', budget_id: 'b-shapes' });
  const k = await gw.generateKey({
    key_alias: 'shapes', user_id: 'user-s', team_id: 'team-s', organization_id: 'org-s', budget_id: 'b-shapes',
    max_budget: 2, soft_budget: 1, budget_duration: '1d', models: ['paid-model'], metadata: { app: 'x' }, tags: ['t1'],
    rpm_limit: 50, tpm_limit: 5000, max_parallel_requests: 4, duration: '1h',
  });
  const gen = compare('key/generate', k);
  assert.deepEqual(gen, [], 'every field set on the key is filled in');
  assert.match(k.budget_reset_at, iso, 'budget_reset_at is ISO 8601 (LiteLLM), not only *_ms');
  assert.equal(typeof k.budget_reset_at_ms, 'number', 'the _ms variant stays as an extra');

  await mock.script('paid-upstream', [{ content: 'ok', completion_tokens: 3 }]);
  const r = await chat(gw, k.key, hi('paid-model', { user: 'cust-s', litellm_session_id: 'sess-42' }));
  assert.equal(r.status, 200, r.text);
  const bill = await mockBillNanos(mock, 'paid-upstream', PRICES);
  await expectSpend(gw, k.key, bill);

  const info = await gw.admin(`/key/info?key=${k.key}`);
  assert.equal(info.key, k.token);
  assert.deepEqual(compare('key/info', info.info), []);
  assert.equal(nanos(info.info.spend), bill, 'key/info spend = the simulator\'s bill');

  const team = await gw.admin('/team/info?team_id=team-s');
  assert.equal(team.team_id, 'team-s');
  assert.ok(Array.isArray(team.keys) && team.keys.length === 1);
  assert.deepEqual(compare('team/info', team.team_info), ['budget_id'], 'the team links no budget');
  assert.equal(nanos(team.team_info.spend), bill, 'team spend is visible (LiteLLM #11: nowhere before)');
  assert.match(team.team_info.budget_reset_at, iso);

  const user = await gw.admin('/user/info?user_id=user-s');
  assert.equal(user.user_id, 'user-s');
  assert.deepEqual(compare('user/info', user.user_info), []);
  assert.equal(nanos(user.user_info.spend), bill);
  assert.deepEqual(user.teams, []);

  const cust = await gw.admin('/customer/info?end_user_id=cust-s');
  assert.deepEqual(compare('customer/info', cust), ['allowed_model_region']);  // none set here
  assert.equal(cust.budget_id, 'b-shapes');
  assert.equal(cust.litellm_budget_table.budget_id, 'b-shapes', 'litellm_budget_table is the linked budget row');
  assert.equal(cust.litellm_budget_table.max_budget, 5);
  assert.equal(nanos(cust.spend), bill, 'the linked budget makes the end user a budget scope with its spend');

  const org = await gw.admin('/organization/info?organization_id=org-s');
  assert.equal(nanos(org.spend), bill, 'organization spend');

  const row = await spendLogRow(gw, r);
  assert.deepEqual(compare('spend/logs', row), [], JSON.stringify(row));
  assert.equal(row.session_id, 'sess-42', 'litellm_session_id is read from the body');
  assert.equal(row.requester_ip_address, '127.0.0.1');
  assert.match(row.completionStartTime, iso, 'completionStartTime is the end time for a non-stream call');
  assert.ok(Date.parse(row.completionStartTime) >= Date.parse(row.startTime));
  for (const f of LOG_METADATA) assert.ok(f in row.metadata, `metadata.${f}`);
  assert.equal(row.metadata.user_api_key, k.token);
  assert.equal(row.metadata.user_api_key_alias, 'shapes');
  assert.equal(row.metadata.user_api_key_team_id, 'team-s');
  assert.equal(row.metadata.user_api_key_team_alias, 'Team S');
  assert.equal(row.metadata.user_api_key_user_id, 'user-s');
  assert.equal(row.metadata.user_api_key_org_id, 'org-s');
  assert.equal(row.metadata.user_api_key_end_user_id, 'cust-s');
  assert.equal(nanos(row.spend), bill);

  // A stream: completionStartTime is the first token's time, before the end; session from metadata.
  await mock.script('paid-upstream', [{ content: 'streamed answer', completion_tokens: 3 }]);
  const s = await chat(gw, k.key, hi('paid-model', { stream: true, metadata: { session_id: 'sess-meta' } }));
  assert.equal(s.status, 200, s.text);
  const srow = await spendLogRow(gw, s);
  assert.match(srow.completionStartTime, iso);
  assert.ok(Date.parse(srow.completionStartTime) <= Date.parse(srow.endTime));
  assert.equal(srow.session_id, 'sess-meta');

  // docs/admin_api.md's comparison table says the same, row by row.
  const doc = readFileSync(path.join(here, '../../docs/admin_api.md'), 'utf8');
  const label = { [S]: 'yes', [A]: 'no', [O]: 'see note' };
  for (const [endpoint, fields] of Object.entries(SHAPES)) {
    for (const [field, , status] of fields) {
      const re = new RegExp(`^\\| \`${endpoint}\` \\| \`${field}\` \\| yes \\| ${label[status]} \\|`, 'm');
      assert.match(doc, re, `docs/admin_api.md has the row for ${endpoint} ${field} (${label[status]})`);
    }
  }
});

e2e('/team/list, /user/list, /customer/list in LiteLLM shapes, with spend and filters; bad paging is a 400', async (ctx) => {
  const gw = await adminGateway(ctx);
  await gw.admin('/organization/new', { organization_id: 'org-l' });
  await gw.admin('/team/new', { team_id: 'tl-1', organization_id: 'org-l' });
  await gw.admin('/team/new', { team_id: 'tl-2' });
  for (const u of ['ul-1', 'ul-2', 'ul-3']) await gw.admin('/user/new', { user_id: u, user_email: `${u}@x.io`, auto_create_key: u === 'ul-1' });
  await gw.admin('/team/member_add', { team_id: 'tl-2', member: { user_id: 'ul-2', role: 'user' } });
  await gw.admin('/customer/new', { user_id: 'cl-1' });

  const teams = await gw.admin('/team/list');
  assert.deepEqual(teams.map((t) => t.team_id).sort(), ['tl-1', 'tl-2']);
  for (const t of teams) { assert.equal(t.spend, 0); assert.ok(Array.isArray(t.keys)); assert.ok(Array.isArray(t.members_with_roles)); }
  assert.deepEqual((await gw.admin('/team/list?organization_id=org-l')).map((t) => t.team_id), ['tl-1']);
  assert.deepEqual((await gw.admin('/team/list?user_id=ul-2')).map((t) => t.team_id), ['tl-2']);
  const unknownUser = await gw.fetch('/team/list?user_id=nobody', { method: 'GET' });
  assert.equal(unknownUser.status, 400);
  assert.equal(unknownUser.json.error.param, 'user_id');

  const users = await gw.admin('/user/list?page=1&page_size=2');
  assert.equal(users.total, 3);
  assert.equal(users.page, 1);
  assert.equal(users.page_size, 2);
  assert.equal(users.total_pages, 2);
  assert.deepEqual(users.users.map((u) => u.user_id), ['ul-1', 'ul-2']);
  assert.equal(users.users[0].key_count, 1);
  assert.equal(users.users[0].spend, 0);
  assert.deepEqual((await gw.admin('/user/list?page=2&page_size=2')).users.map((u) => u.user_id), ['ul-3']);
  assert.deepEqual((await gw.admin('/user/list?user_ids=ul-3,ul-1')).users.map((u) => u.user_id), ['ul-1', 'ul-3']);
  assert.deepEqual((await gw.admin('/user/list?team=tl-2')).users.map((u) => u.user_id), ['ul-2']);
  for (const [q, param] of [['page=0', 'page'], ['page_size=abc', 'page_size'], ['page_size=101', 'page_size']]) {
    const bad = await gw.fetch(`/user/list?${q}`, { method: 'GET' });
    assert.equal(bad.status, 400, q);
    assert.equal(bad.json.error.param, param, q);
  }

  let customers = await gw.admin('/customer/list');
  assert.deepEqual(customers.map((c) => c.user_id), ['cl-1']);
  assert.equal(customers[0].spend, 0);
  assert.ok('litellm_budget_table' in customers[0]);
  // A customer without any budget is no ledger scope: its spend is the spend log's.
  const { mock } = state;
  await mock.script('paid-upstream', [{ content: 'ok', completion_tokens: 5 }]);
  const k = await gw.generateKey({});
  const r = await chat(gw, k.key, hi('paid-model', { user: 'cl-1' }));
  assert.equal(r.status, 200, r.text);
  const row = await spendLogRow(gw, r);
  const bill = await mockBillNanos(mock, 'paid-upstream', PRICES);
  assert.equal(nanos(row.spend), bill);
  customers = await gw.admin('/customer/list');
  assert.equal(nanos(customers[0].spend), bill, 'customer/list spend = the simulator\'s bill');
  assert.equal(nanos((await gw.admin('/customer/info?end_user_id=cl-1')).spend), bill, 'customer/info too');
});

e2e('/budget/new|info|update|list|delete: LiteLLM budget rows; bad input is a 400 naming the field and stores nothing; a linked budget cannot be deleted', async (ctx) => {
  const gw = await adminGateway(ctx);
  const b = await gw.admin('/budget/new', { budget_id: 'b1', max_budget: 1.5, soft_budget: 1, budget_duration: '1d', rpm_limit: 10, tpm_limit: 1000, max_parallel_requests: 2 });
  for (const f of ['budget_id', 'max_budget', 'soft_budget', 'max_parallel_requests', 'tpm_limit', 'rpm_limit', 'model_max_budget', 'budget_duration', 'budget_reset_at', 'created_at', 'updated_at'])
    assert.ok(f in b, `budget field ${f}`);
  assert.equal(b.max_budget, 1.5);
  assert.equal(b.budget_duration, '1d');
  const auto = await gw.admin('/budget/new', { max_budget: 2 });
  assert.match(auto.budget_id, /^[0-9a-f-]{36}$/, 'budget_id generated when absent');

  for (const [body, param] of [
    [{ budget_id: 'bad1', max_budget: -1 }, 'max_budget'],
    [{ budget_id: 'bad2', max_budget: 'lots' }, 'max_budget'],
    [{ budget_id: 'bad3', budget_duration: '3 weeks' }, 'budget_duration'],
    [{ budget_id: 'bad4', rpm_limit: 1.5 }, 'rpm_limit'],
    [{ budget_id: 'bad5', max_budgets: 1 }, 'max_budgets'],
    [{ budget_id: 7 }, 'budget_id'],
  ]) {
    const r = await gw.fetch('/budget/new', { body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(r.json.error.param, param, r.text);
  }
  const dup = await gw.fetch('/budget/new', { body: { budget_id: 'b1' } });
  assert.equal(dup.status, 409);
  const list = await gw.admin('/budget/list');
  assert.deepEqual(list.map((x) => x.budget_id).sort(), ['b1', auto.budget_id].sort(), 'nothing of the bad calls was stored');

  const up = await gw.admin('/budget/update', { budget_id: 'b1', max_budget: 3 });
  assert.equal(up.max_budget, 3);
  assert.equal(up.rpm_limit, 10, 'fields not sent are kept');
  const badUp = await gw.fetch('/budget/update', { body: { budget_id: 'b1', tpm_limit: -5 } });
  assert.equal(badUp.status, 400);
  assert.equal(badUp.json.error.param, 'tpm_limit');
  assert.equal((await gw.admin('/budget/info', { budgets: ['b1'] }))[0].tpm_limit, 1000, 'a refused update changes nothing');
  const missing = await gw.fetch('/budget/update', { body: { budget_id: 'nope', max_budget: 1 } });
  assert.equal(missing.status, 404);
  const infoMissing = await gw.fetch('/budget/info', { body: { budgets: ['b1', 'nope'] } });
  assert.equal(infoMissing.status, 404);
  assert.equal(infoMissing.json.error.param, 'budgets');

  // Links: a key, a team and a customer; an unknown budget_id is refused.
  const k = await gw.generateKey({ key_alias: 'linked', budget_id: 'b1' });
  assert.equal(k.budget_id, 'b1');
  assert.equal(k.max_budget, null, 'the key itself sets no budget');
  assert.match(k.budget_reset_at, /Z$/, 'the linked budget\'s duration gives the key its window');
  await gw.admin('/team/new', { team_id: 'tb', budget_id: 'b1' });
  await gw.admin('/customer/new', { user_id: 'cb', budget_id: 'b1' });
  for (const [p, body] of [['/key/generate', { budget_id: 'ghost' }], ['/team/new', { team_id: 'tg', budget_id: 'ghost' }],
    ['/customer/new', { user_id: 'cg', budget_id: 'ghost' }], ['/key/update', { key: k.key, budget_id: 'ghost' }]]) {
    const r = await gw.fetch(p, { body });
    assert.equal(r.status, 400, `${p}: ${r.text}`);
    assert.equal(r.json.error.param, 'budget_id');
  }
  assert.equal((await gw.keyInfo(k.key)).budget_id, 'b1', 'a refused link changes nothing');
  const del = await gw.fetch('/budget/delete', { body: { id: 'b1' } });
  assert.equal(del.status, 400, del.text);
  assert.equal(del.json.error.param, 'id');
  for (const what of ['key linked', 'team tb', 'customer cb']) assert.ok(del.json.error.message.includes(what), del.json.error.message);
  assert.equal((await gw.admin('/budget/info', { budgets: ['b1'] })).length, 1, 'still there');
  const gone = await gw.admin('/budget/delete', { id: auto.budget_id });
  assert.equal(gone.budget_id, auto.budget_id);
  assert.deepEqual((await gw.admin('/budget/list')).map((x) => x.budget_id), ['b1']);
  const del404 = await gw.fetch('/budget/delete', { body: { id: auto.budget_id } });
  assert.equal(del404.status, 404);
});

/// Calls until the first 429; returns the number served. The refusal must be budget_exceeded at `scope`.
async function spendUntilRefused(gw, key, extra, scope) {
  for (let served = 0; served < 40; served++) {
    const r = await chat(gw, key, hi('paid-model', extra));
    if (r.status === 429) {
      assert.equal(r.json.error.type, 'budget_exceeded', r.text);
      assert.ok(r.json.error.message.includes(scope), `${r.json.error.message} names ${scope}`);
      return served;
    }
    assert.equal(r.status, 200, r.text);
  }
  assert.fail('never refused');
}

e2e('a linked budget (budget_id) is enforced by admission at the key, team and end-user scope: spend stops at it and equals the simulator\'s bill', async (ctx) => {
  const { mock } = state;
  const gw = await adminGateway(ctx);
  await mock.script('paid-upstream', [{ content: 'ok', completion_tokens: 10 }]);
  const LIMIT = 0.0002; // four worst cases of hi() ($0.00005 each)
  await gw.admin('/budget/new', { budget_id: 'tight', max_budget: LIMIT });

  // Key scope.
  const k = await gw.generateKey({ budget_id: 'tight' });
  const served = await spendUntilRefused(gw, k.key, {}, `key ${k.token}`);
  assert.ok(served >= 1, 'the budget allowed some calls');
  let bill = await mockBillNanos(mock, 'paid-upstream', PRICES);
  await expectSpend(gw, k.key, bill, 'key spend = the simulator\'s bill');
  assert.ok(bill <= nanos(LIMIT), `spend ${bill} within the linked budget`);

  // Team scope: two keys of the team share the budget.
  await gw.admin('/team/new', { team_id: 'team-b', budget_id: 'tight' });
  const t1 = await gw.generateKey({ team_id: 'team-b' });
  const t2 = await gw.generateKey({ team_id: 'team-b' });
  const before = bill;
  await spendUntilRefused(gw, t1.key, {}, 'team team-b');
  const other = await chat(gw, t2.key, hi('paid-model'));
  assert.equal(other.status, 429, 'the other key of the team is refused too');
  bill = await mockBillNanos(mock, 'paid-upstream', PRICES);
  const team = await gw.admin('/team/info?team_id=team-b');
  assert.equal(nanos(team.team_info.spend), bill - before, 'team spend = the simulator\'s bill for the team');
  assert.ok(bill - before <= nanos(LIMIT));

  // End-user scope: a customer linked to the budget, called by an unbudgeted key.
  await gw.admin('/customer/new', { user_id: 'end-b', budget_id: 'tight' });
  const free = await gw.generateKey({});
  const before2 = bill;
  await spendUntilRefused(gw, free.key, { user: 'end-b' }, 'end_user end-b');
  bill = await mockBillNanos(mock, 'paid-upstream', PRICES);
  const cust = await gw.admin('/customer/info?end_user_id=end-b');
  assert.equal(nanos(cust.spend), bill - before2);
  const stranger = await chat(gw, free.key, hi('paid-model', { user: 'someone-else' }));
  assert.equal(stranger.status, 200, 'another end user is not limited by that budget');

  // Raising the budget lets the key spend again (the link is live, not a copy).
  await gw.admin('/budget/update', { budget_id: 'tight', max_budget: 1 });
  const again = await chat(gw, k.key, hi('paid-model'));
  assert.equal(again.status, 200, again.text);
});

e2e('/key/update adding or changing budget_duration starts a new window with spend 0 (LiteLLM #34270); the next window resets again', async (ctx) => {
  const { mock } = state;
  const gw = await adminGateway(ctx);
  await mock.script('paid-upstream', [{ content: 'ok', completion_tokens: 10 }]);
  const k = await gw.generateKey({ max_budget: 1 });
  assert.equal(k.budget_reset_at, null, 'a lifetime budget has no reset');
  assert.equal((await chat(gw, k.key, hi('paid-model'))).status, 200);
  const first = await mockBillNanos(mock, 'paid-upstream', PRICES);
  await expectSpend(gw, k.key, first, 'spend before the update');
  assert.ok(first > 0);

  const up = await gw.admin('/key/update', { key: k.key, budget_duration: '1h' });
  assert.equal(nanos(up.spend), 0, 'a new window starts with spend 0');
  assert.match(up.budget_reset_at, /Z$/);
  assert.ok(Date.parse(up.budget_reset_at) > Date.now());
  assert.equal((await chat(gw, k.key, hi('paid-model'))).status, 200);
  const second = (await mockBillNanos(mock, 'paid-upstream', PRICES)) - first;
  await expectSpend(gw, k.key, second, 'only the spend after the update');
  // An update that leaves the duration as it is keeps the window's spend.
  await gw.admin('/key/update', { key: k.key, budget_duration: '1h', metadata: { x: 1 } });
  await expectSpend(gw, k.key, second, 'same duration: same window');

  // Changing the duration restarts the window again; then the windows run as usual.
  const up2 = await gw.admin('/key/update', { key: k.key, budget_duration: '10s' });
  assert.equal(nanos(up2.spend), 0);
  let resetAt = Date.parse(up2.budget_reset_at);
  assert.ok(resetAt - Date.now() <= 10000);
  await sleep(Math.max(0, resetAt - Date.now()) + 200);  // the start of a fresh 10 s window
  assert.equal((await chat(gw, k.key, hi('paid-model'))).status, 200);
  const third = (await mockBillNanos(mock, 'paid-upstream', PRICES)) - first - second;
  await expectSpend(gw, k.key, third, 'spend in the new window');
  resetAt = Date.parse((await gw.keyInfo(k.key)).budget_reset_at);
  await sleep(Math.max(0, resetAt - Date.now()) + 300);
  await expectSpend(gw, k.key, 0, 'after the next reset');
}, { timeout: 60000 });

e2e('/global/spend/report (group_by team, customer, api_key) and /spend/keys sum the spend log exactly; bad input is a 400', async (ctx) => {
  const { mock } = state;
  const gw = await adminGateway(ctx);
  await gw.admin('/team/new', { team_id: 'rep-a', team_alias: 'Alpha' });
  const ka = await gw.generateKey({ team_id: 'rep-a' });
  const kb = await gw.generateKey({});
  await mock.script('paid-upstream', [{ content: 'ok', completion_tokens: 7 }]);
  const rows = [];
  for (const [key, user] of [[ka.key, 'c1'], [ka.key, 'c2'], [kb.key, 'c1']]) {
    const r = await chat(gw, key, hi('paid-model', { user }));
    assert.equal(r.status, 200, r.text);
    rows.push(await spendLogRow(gw, r));
  }
  const cost = (pred) => rows.filter(pred).reduce((a, r) => a + nanos(r.spend), 0);
  const total = await mockBillNanos(mock, 'paid-upstream', PRICES);
  assert.equal(cost(() => true), total, 'the log rows add up to the simulator\'s bill');
  const today = new Date().toISOString().slice(0, 10);
  const q = `start_date=${today}&end_date=${today}`;

  const byTeam = await gw.admin(`/global/spend/report?${q}&group_by=team`);
  assert.equal(byTeam.length, 1);
  assert.equal(byTeam[0].group_by_day, today);
  const teams = Object.fromEntries(byTeam[0].teams.map((t) => [t.team_name, t]));
  assert.equal(nanos(teams.Alpha.total_spend), cost((r) => r.team_id === 'rep-a'));
  assert.equal(nanos(teams.Unassigned.total_spend), cost((r) => !r.team_id));
  assert.deepEqual(teams.Alpha.metadata.map((m) => m.model), ['paid-model']);
  assert.equal(teams.Alpha.metadata[0].total_tokens, rows.filter((r) => r.team_id === 'rep-a').reduce((a, r) => a + r.total_tokens, 0));

  const byCustomer = await gw.admin(`/global/spend/report?${q}&group_by=customer`);
  const cs = Object.fromEntries(byCustomer[0].customers.map((c) => [c.customer, nanos(c.total_spend)]));
  assert.deepEqual(cs, { c1: cost((r) => r.end_user === 'c1'), c2: cost((r) => r.end_user === 'c2') });

  const byKey = await gw.admin(`/global/spend/report?${q}&group_by=api_key`);
  const ks = Object.fromEntries(byKey.map((k) => [k.api_key, k]));
  assert.equal(nanos(ks[ka.token].total_cost), cost((r) => r.api_key === ka.token));
  assert.equal(ks[ka.token].total_input_tokens, rows.filter((r) => r.api_key === ka.token).reduce((a, r) => a + r.prompt_tokens, 0));
  assert.equal(ks[kb.token].model_details[0].model, 'paid-model');
  const one = await gw.admin(`/global/spend/report?${q}&group_by=api_key&api_key=${kb.key}`);
  assert.deepEqual(one.map((k) => k.api_key), [kb.token], 'filtered by api_key (secret accepted)');
  assert.deepEqual(await gw.admin('/global/spend/report?start_date=2001-01-01&end_date=2001-01-02'), [], 'no spend then');

  for (const [qs, param] of [['end_date=2025-01-01', 'start_date'], ['start_date=2025-01-01', 'end_date'],
    [`${q}&group_by=model`, 'group_by'], ['start_date=yesterday&end_date=2025-01-01', 'start_date'],
    ['start_date=2025-02-01&end_date=2025-01-01', 'end_date']]) {
    const r = await gw.fetch(`/global/spend/report?${qs}`, { method: 'GET' });
    assert.equal(r.status, 400, qs);
    assert.equal(r.json.error.param, param, `${qs}: ${r.text}`);
  }

  const keys = await gw.admin('/spend/keys');
  assert.deepEqual(keys.map((k) => k.token), [ka.token, kb.token], 'the most spent first');
  assert.equal(nanos(keys[0].spend), cost((r) => r.api_key === ka.token));
  assert.equal((await gw.admin('/spend/keys?limit=1')).length, 1);
  const badLimit = await gw.fetch('/spend/keys?limit=0', { method: 'GET' });
  assert.equal(badLimit.status, 400);
  assert.equal(badLimit.json.error.param, 'limit');
});
