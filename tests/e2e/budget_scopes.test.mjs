// The seed 000 refusal at every budget scope: for each scope, a caller whose scope cannot
// pay for one worst case (budget $0.00001 < $0.00005) asks for the zero-cost primary that
// always fails → the paid fallback is skipped (primary's 502, no attempted fallback, the skip
// header names the scope kind and id, the paid model is never called), and asks for the paid
// model directly → 429 budget_exceeded naming the scope. A caller outside that scope is served.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, waitFor } from './harness.mjs';
import { hi, chat, freeBrokenDeployment, paidDeployment, spendLogRow, expectSpend, mockBill, spendNanos } from './budget_helpers.mjs';

const state = useMock();
const TINY = 0.00001; // below one worst case of hi() (0.00005)

async function seedGateway(ctx, { litellm_settings = {}, general_settings = {} } = {}) {
  const { mock } = state;
  return ctx.gateway(gatewayConfig({
    model_list: [
      freeBrokenDeployment('free-model'),
      paidDeployment(mock, 'paid-model', 'paid-upstream'),
      paidDeployment(mock, 'paid-other', 'other-upstream'),
    ],
    litellm_settings: { fallbacks: [{ 'free-model': ['paid-model'] }], ...litellm_settings },
    general_settings,
  }));
}

/// The refusal for `auth` (a key, or true = master key) with body extras `extra`, by scope `kind`/`id`.
async function assertRefused(gw, auth, kind, id, extra = {}) {
  const { mock } = state;
  const before = (await mock.model('paid-upstream')).requests;
  const scope = kind === 'global' ? 'global' : `${kind} ${id}`;  // the global scope is named once

  // The fallback target is skipped: the client gets the free primary's own error.
  const fb = await gw.fetch('/v1/chat/completions', { auth, body: hi('free-model', extra) });
  assert.equal(fb.status, 502, fb.text);
  assert.equal(fb.json?.error?.code, 'upstream_unavailable', fb.text);
  assert.equal(fb.headers.get('x-litellm-attempted-fallbacks'), '0');
  assert.equal(fb.headers.get('x-tollgate-skipped-fallbacks'), `paid-model (budget_exceeded ${scope})`);
  const row = await spendLogRow(gw, fb);
  assert.deepEqual(row.skipped_fallbacks, [{ target: 'paid-model', reason: `budget_exceeded ${scope}` }]);
  assert.equal(Number(row.spend), 0);

  // The paid model as the primary: 429 budget_exceeded naming the scope.
  const direct = await gw.fetch('/v1/chat/completions', { auth, body: hi('paid-model', extra) });
  assert.equal(direct.status, 429, direct.text);
  assert.equal(direct.json.error.type, 'budget_exceeded');
  assert.ok(direct.json.error.message.includes(`: ${scope} cannot cover`), direct.json.error.message);
  assert.equal(direct.headers.get('x-litellm-attempted-fallbacks'), '0');

  assert.equal((await mock.model('paid-upstream')).requests, before, 'the paid model was never called');
}

/// A caller outside the refusing scope gets the paid fallback.
async function assertServed(gw, auth, extra = {}) {
  const r = await gw.fetch('/v1/chat/completions', { auth, body: hi('free-model', extra) });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal(r.headers.get('x-litellm-model-group'), 'paid-model');
}

e2e('scope key: max_budget', async (ctx) => {
  const gw = await seedGateway(ctx);
  const k = await gw.generateKey({ max_budget: TINY });
  await assertRefused(gw, k.key, 'key', k.token);
  await assertServed(gw, (await gw.generateKey({ max_budget: 1 })).key);
});

e2e('scope user: the personal budget of a personal key (and of team keys only with apply_user_budget_to_team_keys)', async (ctx) => {
  const gw = await seedGateway(ctx);
  const alice = await gw.admin('/user/new', { user_id: 'alice', max_budget: TINY });
  await assertRefused(gw, alice.key, 'user', 'alice');
  const other = await gw.generateKey({ user_id: 'alice', max_budget: 1 });
  await assertRefused(gw, other.key, 'user', 'alice');
  // A team key of alice: her personal budget does not apply by default.
  await gw.admin('/team/new', { team_id: 'team-a' });
  const teamKey = await gw.generateKey({ user_id: 'alice', team_id: 'team-a' });
  await assertServed(gw, teamKey.key);

  const g2 = await seedGateway(ctx, { general_settings: { apply_user_budget_to_team_keys: true } });
  const a2 = await g2.admin('/user/new', { user_id: 'alice', max_budget: TINY, auto_create_key: false });
  assert.equal(a2.key ?? null, null);
  await g2.admin('/team/new', { team_id: 'team-a' });
  const tk2 = await g2.generateKey({ user_id: 'alice', team_id: 'team-a' });
  await assertRefused(g2, tk2.key, 'user', 'alice');
});

e2e('scope team: team max_budget', async (ctx) => {
  const gw = await seedGateway(ctx);
  await gw.admin('/team/new', { team_id: 'team-poor', max_budget: TINY });
  await gw.admin('/team/new', { team_id: 'team-rich', max_budget: 1 });
  const k = await gw.generateKey({ team_id: 'team-poor', max_budget: 1 });
  await assertRefused(gw, k.key, 'team', 'team-poor');
  await assertServed(gw, (await gw.generateKey({ team_id: 'team-rich' })).key);
});

e2e('scope team_member: max_budget_in_team', async (ctx) => {
  const gw = await seedGateway(ctx);
  for (const u of ['bob', 'carol']) await gw.admin('/user/new', { user_id: u, auto_create_key: false });
  await gw.admin('/team/new', { team_id: 'team-1', max_budget: 1 });
  await gw.admin('/team/member_add', { team_id: 'team-1', member: { user_id: 'bob', role: 'user' }, max_budget_in_team: TINY });
  await gw.admin('/team/member_add', { team_id: 'team-1', member: { user_id: 'carol', role: 'user' }, max_budget_in_team: 1 });
  const bob = await gw.generateKey({ team_id: 'team-1', user_id: 'bob' });
  await assertRefused(gw, bob.key, 'team_member', 'team-1/bob');
  await assertServed(gw, (await gw.generateKey({ team_id: 'team-1', user_id: 'carol' })).key);
});

e2e('scope organization: the budget of the team\'s organization', async (ctx) => {
  const gw = await seedGateway(ctx);
  await gw.admin('/organization/new', { organization_id: 'org-poor', max_budget: TINY });
  await gw.admin('/organization/new', { organization_id: 'org-rich', max_budget: 1 });
  await gw.admin('/team/new', { team_id: 'team-p', organization_id: 'org-poor', max_budget: 1 });
  await gw.admin('/team/new', { team_id: 'team-r', organization_id: 'org-rich', max_budget: 1 });
  const k = await gw.generateKey({ team_id: 'team-p' });
  await assertRefused(gw, k.key, 'organization', 'org-poor');
  await assertServed(gw, (await gw.generateKey({ team_id: 'team-r' })).key);
  // A key of the organization directly (no team).
  const orgKey = await gw.generateKey({ organization_id: 'org-poor' });
  await assertRefused(gw, orgKey.key, 'organization', 'org-poor');
});

e2e('scope end_user: /customer/new budget of the request\'s `user`', async (ctx) => {
  const gw = await seedGateway(ctx);
  await gw.admin('/customer/new', { user_id: 'cust-poor', max_budget: TINY });
  await gw.admin('/customer/new', { user_id: 'cust-rich', max_budget: 1 });
  const k = await gw.generateKey({ max_budget: 1 });
  // A virtual key's end users live in its tenant (end_user_budget_scope: team → the key itself
  // when it has no team); the refusal names the end user and that tenant.
  await assertRefused(gw, k.key, 'end_user', `cust-poor (of key ${k.token})`, { user: 'cust-poor' });
  await assertRefused(gw, true, 'end_user', 'cust-poor', { user: 'cust-poor' }); // master key too
  await assertServed(gw, k.key, { user: 'cust-rich' });
  await assertServed(gw, k.key);
  // Anthropic format: the end user is metadata.user_id.
  const m = await gw.fetch('/v1/messages', {
    auth: k.key,
    body: { model: 'paid-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], metadata: { user_id: 'cust-poor' } },
  });
  assert.equal(m.status, 429, m.text);
  assert.equal(m.json?.type, 'error', 'an Anthropic-shaped error body');
  assert.equal(m.json?.error?.type, 'budget_exceeded', m.text);
  assert.match(m.json.error.message, /end_user cust-poor/);
});

e2e('scope end_user: litellm_settings.max_end_user_budget as the default', async (ctx) => {
  const gw = await seedGateway(ctx, { litellm_settings: { max_end_user_budget: TINY } });
  await gw.admin('/customer/new', { user_id: 'cust-rich', max_budget: 1 });
  const k = await gw.generateKey({ max_budget: 1 });
  await assertRefused(gw, k.key, 'end_user', `anyone (of key ${k.token})`, { user: 'anyone' });
  await assertServed(gw, k.key, { user: 'cust-rich' }); // its own budget replaces the default
  await assertServed(gw, k.key); // no end user named
});

e2e('scope global: litellm_settings.max_budget (the master key included)', async (ctx) => {
  const gw = await seedGateway(ctx, { litellm_settings: { max_budget: TINY } });
  const k = await gw.generateKey({ max_budget: 1 });
  await assertRefused(gw, k.key, 'global', 'global');
  await assertRefused(gw, true, 'global', 'global');
  const g = await gw.admin('/global/spend');
  assert.equal(Number(g.spend), 0);
  assert.equal(Number(g.max_budget), TINY);
});

e2e('scope key_model: model_max_budget on the key', async (ctx) => {
  const gw = await seedGateway(ctx);
  const k = await gw.generateKey({ max_budget: 1, model_max_budget: { 'paid-model': { max_budget: TINY } } });
  await assertRefused(gw, k.key, 'key_model', `${k.token}/paid-model`);
  // Another paid group on the same key is not limited by paid-model's budget.
  const other = await chat(gw, k.key, hi('paid-other'));
  assert.equal(other.status, 200, other.text);
  await expectSpend(gw, k.key, 25_000);
});

e2e('scope key_window: a budget_limits window of the key', async (ctx) => {
  const gw = await seedGateway(ctx);
  const k = await gw.generateKey({
    max_budget: 1,
    budget_limits: [{ budget_duration: '1d', max_budget: 1 }, { budget_duration: '1h', max_budget: TINY }],
  });
  await assertRefused(gw, k.key, 'key_window', `${k.token}/1h`);
  const info = await gw.keyInfo(k.key);
  assert.deepEqual(info.spend_windows.map((w) => [w.budget_duration, Number(w.spend)]), [['1d', 0], ['1h', 0]]);
});

e2e('a fallback target the key may not call (its models) is skipped the same way; enforce_fallback_model_access: false attempts it', async (ctx) => {
  const { mock } = state;
  const gw = await seedGateway(ctx);
  const k = await gw.generateKey({ models: ['free-model'] });
  const r = await chat(gw, k.key, hi('free-model'));
  assert.equal(r.status, 502, r.text);
  assert.equal(r.headers.get('x-litellm-attempted-fallbacks'), '0');
  assert.equal(r.headers.get('x-tollgate-skipped-fallbacks'), 'paid-model (model_access_denied)');
  assert.equal((await mock.model('paid-upstream')).requests, 0);

  const open = await seedGateway(ctx, { general_settings: { enforce_fallback_model_access: false } });
  const k2 = await open.generateKey({ models: ['free-model'] });
  const r2 = await chat(open, k2.key, hi('free-model'));
  assert.equal(r2.status, 200, r2.text);
  assert.equal(r2.headers.get('x-litellm-attempted-fallbacks'), '1');
  // Its budget still applies to that fallback.
  const k3 = await open.generateKey({ models: ['free-model'], max_budget: TINY });
  const r3 = await chat(open, k3.key, hi('free-model'));
  assert.equal(r3.status, 502, r3.text);
  assert.equal(r3.headers.get('x-tollgate-skipped-fallbacks'), `paid-model (budget_exceeded key ${k3.token})`);
  assert.equal((await mock.model('paid-upstream')).requests, 1);
});

e2e('tenant-safe tags: naming another tenant\'s tag neither charges nor exhausts its budget; its own keys and team are charged', async (ctx) => {
  const gw = await seedGateway(ctx);
  await gw.admin('/tag/new', { name: 'team-b-tag', max_budget: 0.00008 }); // one worst case of hi() and a bit
  const a = await gw.generateKey({ max_budget: 1 }); // tenant A: no claim on the tag
  const b = await gw.generateKey({ max_budget: 1, metadata: { allowed_tags: ['team-b-tag'] } });
  // Five requests of tenant A naming the tag would spend it several times over if charged.
  for (let i = 0; i < 5; i++) await assertServed(gw, a.key, { metadata: { tags: ['team-b-tag'] } });
  // Its budget is whole for tenant B, whose own requests are charged to it until it is spent.
  let served = 0;
  for (; served < 6; served++) {
    const r = await gw.fetch('/v1/chat/completions', { auth: b.key, body: hi('free-model', { tags: ['team-b-tag'] }) });
    if (r.status !== 200) break;
  }
  assert.ok(served >= 1 && served < 6, `tenant B was served ${served} times before its tag budget ran out`);
  await assertRefused(gw, b.key, 'tag', 'team-b-tag', { tags: ['team-b-tag'] });
  // A team's metadata.allowed_tags lets its keys charge the tag ("*": every tag).
  const team = await gw.admin('/team/new', { team_alias: 'tenant-b', metadata: { allowed_tags: ['*'] } });
  const member = await gw.generateKey({ max_budget: 1, team_id: team.team_id });
  await assertRefused(gw, member.key, 'tag', 'team-b-tag', { tags: ['team-b-tag'] });
  // Tenant A is still served naming it: a budget it may not charge never refuses it either.
  await assertServed(gw, a.key, { tags: ['team-b-tag'] });
});

// Issue 14 §5: end-user ids named by callers live in the caller's tenant, so one tenant naming
// another's end user neither charges nor exhausts that end user's budget there; `global` is
// LiteLLM's single namespace.
e2e('tenant-safe end users: another team naming the same end user spends its own budget of that size, never the first team\'s', async (ctx) => {
  const { mock } = state;
  const budget = 0.00008; // one worst case of hi() (0.00005) and a bit: a second request is refused
  for (const mode of ['team', 'global']) {
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [freeBrokenDeployment('free-model'), paidDeployment(mock, 'paid-model', 'paid-upstream')],
      litellm_settings: { fallbacks: [{ 'free-model': ['paid-model'] }] },
      tollgate_settings: { end_user_budget_scope: mode },
    }));
    await gw.admin('/customer/new', { user_id: 'shared-user', max_budget: budget });
    const teamA = await gw.admin('/team/new', { team_alias: `a-${mode}` });
    const teamB = await gw.admin('/team/new', { team_alias: `b-${mode}` });
    const a = await gw.generateKey({ max_budget: 1, team_id: teamA.team_id });
    const a2 = await gw.generateKey({ max_budget: 1, team_id: teamA.team_id });
    const b = await gw.generateKey({ max_budget: 1, team_id: teamB.team_id });
    const billBefore = (await mockBill(mock, 'paid-upstream')).nanos;
    // Team A spends shared-user's budget (the team's two keys share it) until it is refused.
    const spendUntilRefused = async (keys) => {
      let served = 0;
      for (; served < 8; served++) {
        const r = await gw.fetch('/v1/chat/completions', { auth: keys[served % keys.length].key, body: hi('free-model', { user: 'shared-user' }) });
        if (r.status !== 200) break;
      }
      return served;
    };
    const servedA = await spendUntilRefused([a, a2]);
    assert.ok(servedA >= 1 && servedA < 8, `team A was served ${servedA} times`);
    const aName = mode === 'team' ? `shared-user (of team ${teamA.team_id})` : 'shared-user';
    await assertRefused(gw, a2.key, 'end_user', aName, { user: 'shared-user' });
    if (mode === 'team') {
      // Team B's shared-user is whole: served as often as team A's, then refused in its own tenant.
      assert.equal(await spendUntilRefused([b]), servedA);
      await assertRefused(gw, b.key, 'end_user', `shared-user (of team ${teamB.team_id})`, { user: 'shared-user' });
    } else {
      // One namespace: team B is refused by what team A spent.
      await assertRefused(gw, b.key, 'end_user', 'shared-user', { user: 'shared-user' });
    }
    // Every served request was charged what the upstream billed, and /customer/info reports
    // shared-user's spend over every tenant.
    // (Settlement and the spend log are written just after each response: poll.)
    const billed = (await mockBill(mock, 'paid-upstream')).nanos - billBefore;
    assert.ok(billed > 0);
    let total = 0;
    let customer = 0;
    await waitFor(async () => {
      total = (await Promise.all([a, a2, b].map((k) => spendNanos(gw, k.key)))).reduce((x, y) => x + y, 0);
      customer = Math.round(Number((await gw.admin('/customer/info?end_user_id=shared-user')).spend) * 1e9);
      return Math.abs(total - billed) <= 3 && Math.abs(customer - total) <= 3;
    }, { what: 'key and customer spend equal to the upstream bill' }).catch((e) => {
      throw new Error(`${e.message}: keys charged ${total} nanos, customer ${customer}, the upstream billed ${billed}`);
    });
  }
});

e2e('scope tag: /tag/new budgets of the key\'s tags and the request\'s metadata.tags / tags', async (ctx) => {
  const gw = await seedGateway(ctx);
  const poor = await gw.admin('/tag/new', { name: 'tag-poor', description: 'the poor tag', max_budget: TINY });
  assert.equal(poor.name, 'tag-poor');
  assert.equal(Number(poor.max_budget), TINY);
  await gw.admin('/tag/new', { name: 'tag-rich', max_budget: 1, budget_duration: '1d', models: [] });
  await gw.admin('/tag/new', { name: 'tag-tracked' }); // no budget: spend tracked, never refused

  // A tag of the key.
  const tagged = await gw.generateKey({ max_budget: 1, tags: ['tag-poor'] });
  await assertRefused(gw, tagged.key, 'tag', 'tag-poor');
  // A tag of the request, in metadata.tags or top-level tags, from a key allowed to charge it
  // (its metadata.allowed_tags); the master key too.
  const k = await gw.generateKey({ max_budget: 1, metadata: { allowed_tags: ['tag-poor', 'tag-rich', 'tag-tracked'] } });
  await assertRefused(gw, k.key, 'tag', 'tag-poor', { metadata: { tags: ['tag-rich', 'tag-poor'] } });
  await assertRefused(gw, k.key, 'tag', 'tag-poor', { tags: ['tag-poor'] });
  await assertRefused(gw, true, 'tag', 'tag-poor', { tags: ['tag-poor'] });
  // Other tags (with a budget, tracked only, or without a record) and untagged requests are served.
  await assertServed(gw, k.key, { tags: ['tag-rich', 'tag-tracked', 'no-record'] });
  await assertServed(gw, k.key);

  // Admin API: info (GET and POST), list, validation, duplicates, unknown names.
  const info = await gw.admin('/tag/info?names=tag-poor,tag-rich');
  assert.deepEqual(Object.keys(info).sort(), ['tag-poor', 'tag-rich']);
  assert.equal(info['tag-rich'].budget_duration, '1d');
  assert.equal(info['tag-poor'].description, 'the poor tag');
  const infoPost = await gw.admin('/tag/info', { names: ['tag-tracked'] });
  assert.equal(infoPost['tag-tracked'].max_budget, null);
  const list = await gw.admin('/tag/list');
  assert.deepEqual(list.map((t) => t.name), ['tag-poor', 'tag-rich', 'tag-tracked']);
  const dup = await gw.fetch('/tag/new', { body: { name: 'tag-poor' } });
  assert.equal(dup.status, 409, dup.text);
  const bad = await gw.fetch('/tag/new', { body: { name: 'tag-x', max_budget: -1 } });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.error.param, 'max_budget');
  const badDur = await gw.fetch('/tag/new', { body: { name: 'tag-x', budget_duration: 'soon' } });
  assert.equal(badDur.status, 400, badDur.text);
  assert.equal(badDur.json.error.param, 'budget_duration');
  const noName = await gw.fetch('/tag/new', { body: { max_budget: 1 } });
  assert.equal(noName.status, 400, noName.text);
  assert.equal(noName.json.error.param, 'name');
  const unknownField = await gw.fetch('/tag/new', { body: { name: 'tag-x', colour: 'red' } });
  assert.equal(unknownField.status, 400, unknownField.text);
  assert.equal(unknownField.json.error.param, 'colour');
  const missing = await gw.fetch('/tag/info?names=tag-poor,nope', { method: 'GET' });
  assert.equal(missing.json?.error?.param, 'names', missing.text);
  assert.equal(missing.status, 404, missing.text);
  assert.equal((await gw.fetch('/tag/update', { body: { name: 'nope', max_budget: 1 } })).status, 404);
  assert.equal((await gw.fetch('/tag/list', { auth: k.key, method: 'GET' })).status, 403, 'master key only');

  // Raising the budget admits the tag at once; deleting the tag removes its budget.
  const up = await gw.admin('/tag/update', { name: 'tag-poor', max_budget: 1 });
  assert.equal(Number(up.max_budget), 1);
  assert.equal(up.description, 'the poor tag', 'fields absent from the update are kept');
  await assertServed(gw, tagged.key);
  await gw.admin('/tag/update', { name: 'tag-poor', max_budget: TINY });
  await assertRefused(gw, tagged.key, 'tag', 'tag-poor');
  await gw.admin('/tag/delete', { name: 'tag-poor' });
  await assertServed(gw, tagged.key);
  assert.equal((await gw.fetch('/tag/delete', { body: { name: 'tag-poor' } })).status, 404);
});
