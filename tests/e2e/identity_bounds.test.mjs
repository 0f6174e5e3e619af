// Who pays: (1) without a master key, a presented key must be a real one and a request without
// a key is served only while no budget applies to it; (2) names a caller chooses (end user,
// tags, admin ids) are bounded, so a stream of distinct huge names cannot grow the process or
// the database. Growth is measured on the real process (/proc/<pid>/status) and the real files.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { e2e, useMock, gatewayConfig, rejectsWith, waitFor } from './harness.mjs';
import { paidDeployment, paidAnthropicDeployment, hi } from './budget_helpers.mjs';

const state = useMock();

const NO_MASTER = { master_key: undefined };
const INVALID = 'Authentication Error, Invalid proxy server token passed';
const budgetRefusal = (kind) =>
  `Authentication Error, No api key passed in. A budget applies to this request (${kind}): present a virtual key.`;

/// SDK clients that send no key at all (the SDKs insist on one unless the header is omitted).
const keylessOpenAI = (gw) => new OpenAI({
  baseURL: `${gw.url}/v1`, apiKey: 'unused', defaultHeaders: { Authorization: null }, maxRetries: 0, timeout: 20000,
});
const keylessAnthropic = (gw) => new Anthropic({
  baseURL: gw.url, apiKey: null, authToken: null, defaultHeaders: { Authorization: null, 'x-api-key': null },
  maxRetries: 0, timeout: 20000,
});

const messagesBody = (model, extra = {}) => ({
  model, max_tokens: 16, messages: [{ role: 'user', content: 'Say something short.' }], ...extra,
});

function openConfig(mock, { litellm_settings, tollgate_settings } = {}) {
  return gatewayConfig({
    model_list: [paidDeployment(mock, 'open', 'open-up'), paidAnthropicDeployment(mock, 'claude', 'claude-up')],
    litellm_settings,
    general_settings: NO_MASTER,
    tollgate_settings,
  });
}

function assertOpenAI401(err, message) {
  assert.equal(err.status, 401, String(err));
  assert.equal(err.error?.message, message);
}

function assertAnthropic401(err, message) {
  assert.equal(err.status, 401, String(err));
  assert.equal(err.error?.type, 'error');
  assert.equal(err.error?.error?.type, 'authentication_error');
  assert.equal(err.error?.error?.message, message);
}

// ---------------------------------------------------------------------------------------------
// 1. No anonymous paid spend by accident

e2e('no master key: an unknown key is 401 on both APIs; no key is served while no budget applies; a virtual key is served; serve warns about the keys', async (ctx) => {
  const { mock } = state;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-open-'));
  try {
    // Keys and a tag budget can only be made with a master key: make them, then restart without one.
    const admin = await ctx.gateway(gatewayConfig({
      model_list: [paidDeployment(mock, 'open', 'open-up')], tollgate_settings: { data_dir: dataDir },
    }));
    const key = await admin.generateKey({ key_alias: 'real' });
    await admin.admin('/tag/new', { name: 'paid-tag', max_budget: 5 });
    assert.ok(!admin.proc.stderr.includes('no general_settings.master_key'), 'no warning while a master key is set');
    await admin.stop();

    const gw = await ctx.gateway(openConfig(mock, { tollgate_settings: { data_dir: dataDir } }));
    assert.match(gw.proc.stderr,
      /no general_settings\.master_key: 1 virtual key\(s\) in the database; requests without a key are served anonymously while no budget applies to them/);

    // A presented key that is not a virtual key: 401, whatever it looks like, on both APIs.
    for (const apiKey of ['sk-not-a-real-key-000000000000', 'anything-at-all']) {
      assertOpenAI401(await rejectsWith(gw.openai({ apiKey }).chat.completions.create(hi('open'))), INVALID);
      assertAnthropic401(await rejectsWith(gw.anthropic({ apiKey }).messages.create(messagesBody('claude'))), INVALID);
    }
    assert.equal((await mock.stats()).requests_total, 0, 'a refused key sends nothing upstream');

    // No key, no budget: the anonymous caller is served.
    const anon = await keylessOpenAI(gw).chat.completions.create(hi('open'));
    assert.ok(anon.choices[0].message.content);
    const anonMsg = await keylessAnthropic(gw).messages.create(messagesBody('claude'));
    assert.equal(anonMsg.type, 'message');
    // ... but not with a tag that has a budget.
    assertOpenAI401(await rejectsWith(keylessOpenAI(gw).chat.completions.create(hi('open', { metadata: { tags: ['paid-tag'] } }))),
      budgetRefusal('tag'));

    // The virtual key made before the restart is served on both APIs (and is charged as itself).
    const viaKey = await gw.openai({ apiKey: key.key }).chat.completions.create(hi('open', { metadata: { tags: ['paid-tag'] } }));
    assert.ok(viaKey.choices[0].message.content);
    const viaKeyMsg = await gw.anthropic({ apiKey: key.key }).messages.create(messagesBody('claude'));
    assert.equal(viaKeyMsg.type, 'message');

    assert.equal((await mock.model('open-up')).requests, 2);
    assert.equal((await mock.model('claude-up')).requests, 2);
    assert.equal((await mock.stats()).requests_total, 4);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

e2e('no master key: a request without a key where a budget applies is 401 (global max_budget; max_end_user_budget when a user is named), before anything is sent', async (ctx) => {
  const { mock } = state;
  const global = await ctx.gateway(openConfig(mock, { litellm_settings: { max_budget: 10 } }));
  assert.ok(!global.proc.stderr.includes('no general_settings.master_key'), 'no keys in the database: no warning');
  assertOpenAI401(await rejectsWith(keylessOpenAI(global).chat.completions.create(hi('open'))), budgetRefusal('global'));
  assertAnthropic401(await rejectsWith(keylessAnthropic(global).messages.create(messagesBody('claude'))), budgetRefusal('global'));
  // An unknown key is still "invalid", not "no key".
  assertOpenAI401(await rejectsWith(global.openai({ apiKey: 'sk-guess' }).chat.completions.create(hi('open'))), INVALID);

  const perUser = await ctx.gateway(openConfig(mock, { litellm_settings: { max_end_user_budget: 1 } }));
  const served = await keylessOpenAI(perUser).chat.completions.create(hi('open'));
  assert.ok(served.choices[0].message.content, 'no end user named: no end-user budget applies');
  assertOpenAI401(await rejectsWith(keylessOpenAI(perUser).chat.completions.create(hi('open', { user: 'cust-1' }))),
    budgetRefusal('end_user'));
  assertAnthropic401(await rejectsWith(keylessAnthropic(perUser).messages.create(messagesBody('claude', { metadata: { user_id: 'cust-1' } }))),
    budgetRefusal('end_user'));

  assert.equal((await mock.stats()).requests_total, 1, 'only the unbudgeted request went upstream');
});

// ---------------------------------------------------------------------------------------------
// 2. Bounded identities from callers

/// Runs `n` calls of `fn(i)` with at most `width` in flight; returns their results in order.
async function pool(n, width, fn) {
  const out = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  }));
  return out;
}

/// Under AddressSanitizer (scripts/sanitize.sh sets TOLLGATE_SANITIZED) RSS measures ASan's
/// allocator (quarantine, redzones), not the gateway's: the RSS bounds are printed, not held.
const SANITIZED = Boolean(process.env.TOLLGATE_SANITIZED);

/// The gateway's resident set size in bytes (VmRSS of /proc/<pid>/status).
function rssBytes(gw) {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${gw.proc.child.pid}/status`, 'utf8'));
  assert.ok(m, 'VmRSS in /proc/<pid>/status');
  return Number(m[1]) * 1024;
}

/// Bytes of the SQLite database: the file and its write-ahead log.
function dbBytes(dataDir) {
  const size = (f) => { try { return statSync(path.join(dataDir, f)).size; } catch { return 0; } };
  return size('tollgate.db') + size('tollgate.db-wal');
}

const MB = 1024 * 1024;
const mb = (n) => (n / MB).toFixed(2);

/// A distinct name of exactly `bytes` bytes.
const nameOf = (i, bytes) => `user-${i}-`.padEnd(bytes, 'x');

async function boundedGateway(ctx, mock) {
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  const dataDir = path.join(gw.dir, 'data');
  // Warm up: threads, pools, prepared statements and the first ledger rows exist before measuring.
  const client = gw.openai();
  await pool(20, 4, (i) => client.chat.completions.create(hi('paid-model', { user: `warm-${i}` })));
  await waitFor(async () => (await gw.admin('/global/spend')).requests >= 20, { what: 'the warm-up spend-log rows' });
  return { gw, dataDir, client };
}

e2e('1,000 requests with distinct 100 KB user values: all 400 before anything is reserved or sent; RSS and database barely move', async (ctx) => {
  const { mock } = state;
  const { gw, dataDir, client } = await boundedGateway(ctx, mock);
  const upstreamBefore = (await mock.stats()).requests_total;
  const spendBefore = await gw.admin('/global/spend');
  const rss0 = rssBytes(gw);
  const db0 = dbBytes(dataDir);

  const N = 1000;
  const BIG = 100 * 1024;
  const errors = await pool(N, 8, (i) => rejectsWith(client.chat.completions.create(hi('paid-model', { user: nameOf(i, BIG) }))));
  for (const e of errors) {
    assert.equal(e.status, 400, String(e));
    assert.equal(e.error?.type, 'invalid_request_error');
    assert.equal(e.error?.param, 'user');
    assert.equal(e.error?.code, 'name_too_long');
    assert.equal(e.error?.message, `user is ${BIG} bytes long; caller-supplied names are limited to 256 bytes`);
  }
  // Anthropic's end user (metadata.user_id) is bounded the same way, in Anthropic's error shape.
  const anth = await rejectsWith(gw.anthropic().messages.create(messagesBody('paid-model', { metadata: { user_id: nameOf(0, BIG) } })));
  assert.equal(anth.status, 400, String(anth));
  assert.equal(anth.error?.type, 'error');
  assert.equal(anth.error?.error?.type, 'invalid_request_error');
  assert.equal(anth.error?.error?.message, `metadata.user_id is ${BIG} bytes long; caller-supplied names are limited to 256 bytes`);

  const rss1 = rssBytes(gw);
  const db1 = dbBytes(dataDir);
  console.log(`# ${N} x 100 KB user values refused: RSS ${mb(rss0)} -> ${mb(rss1)} MB (+${mb(rss1 - rss0)} MB), ` +
    `DB+WAL ${mb(db0)} -> ${mb(db1)} MB (+${db1 - db0} bytes)`);
  assert.equal((await mock.stats()).requests_total, upstreamBefore, 'nothing reached the upstream');
  const spendAfter = await gw.admin('/global/spend');
  assert.equal(spendAfter.requests, spendBefore.requests, 'no spend-log row, nothing reserved');
  assert.equal(spendAfter.spend, spendBefore.spend);
  // 100 MB of names went in. Retaining even a fifth of one value per request would be 20 MB;
  // what is allowed is the allocator keeping a few freed request buffers (8 in flight × body,
  // parse tree and copies, per worker arena).
  if (!SANITIZED) assert.ok(rss1 - rss0 < 20 * MB, `RSS grew by ${mb(rss1 - rss0)} MB (bound 20 MB)`);
  // A refused request writes nothing: the files do not grow at all beyond a page or two of
  // anything unrelated that the writer thread flushes.
  assert.ok(db1 - db0 < 64 * 1024, `DB+WAL grew by ${db1 - db0} bytes (bound 64 KB)`);
  assert.ok(gw.alive);
});

e2e('1,000 requests with distinct 256-byte user ids are served; the per-end-user cost is measured', async (ctx) => {
  const { mock } = state;
  const { gw, dataDir, client } = await boundedGateway(ctx, mock);
  const N = 1000;
  let served = (await gw.admin('/global/spend')).requests;
  /// Sends N served requests, user `userOf(i)`; returns the RSS and DB+WAL growth once every
  /// spend-log row is written.
  const run = async (userOf) => {
    const upstream0 = (await mock.model('paid-upstream')).requests;
    const rss0 = rssBytes(gw);
    const db0 = dbBytes(dataDir);
    const replies = await pool(N, 8, (i) => client.chat.completions.create(hi('paid-model', { user: userOf(i) })));
    for (const r of replies) assert.ok(r.choices[0].message.content);
    assert.equal((await mock.model('paid-upstream')).requests - upstream0, N);
    served += N;
    // Spend-log rows are written just after each response: wait for all of them before measuring.
    await waitFor(async () => (await gw.admin('/global/spend')).requests >= served,
      { timeoutMs: 20000, what: `${served} spend-log rows` });
    return { rss: rssBytes(gw) - rss0, db: dbBytes(dataDir) - db0 };
  };
  const kb = (n) => (n / N / 1024).toFixed(2);

  const distinct = await run((i) => nameOf(i, 256));
  const row = (await gw.admin('/spend/logs?limit=1'))[0];
  assert.equal(row.end_user.length, 256, 'the 256-byte id is stored whole');
  console.log(`# ${N} requests, ${N} distinct 256-byte end users: RSS +${mb(distinct.rss)} MB (${kb(distinct.rss)} KB per ` +
    `request), DB+WAL +${mb(distinct.db)} MB (${kb(distinct.db)} KB per request)`);
  // The same load with one end user: what a request costs anyway (spend-log row, ledger records).
  const same = await run(() => nameOf(-1, 256));
  console.log(`# ${N} requests, 1 end user (control): RSS +${mb(same.rss)} MB (${kb(same.rss)} KB per request), ` +
    `DB+WAL +${mb(same.db)} MB (${kb(same.db)} KB per request)`);
  console.log(`# per distinct end user beyond the request itself: RSS ${kb(distinct.rss - same.rss)} KB, ` +
    `DB+WAL ${kb(distinct.db - same.db)} KB`);
  // Generous bounds (the figures above are what docs/budgets.md reports); they fail if one end
  // user ever costs as much as the 100 KB names refused above.
  if (!SANITIZED) assert.ok(distinct.rss / N < 32 * 1024, `RSS per end user ${distinct.rss / N} bytes (bound 32 KB)`);
  assert.ok(distinct.db / N < 32 * 1024, `DB+WAL per end user ${distinct.db / N} bytes (bound 32 KB)`);
});

e2e('request names: 257 bytes, 33 tags, non-string user or tags → 400 naming the field, nothing sent', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  const client = gw.openai();
  const cases = [
    [{ user: 'u'.repeat(257) }, 'user', 'name_too_long', 'user is 257 bytes long; caller-supplied names are limited to 256 bytes'],
    [{ user: 42 }, 'user', 'invalid_caller_name', 'user must be a string, got a number'],
    [{ metadata: { tags: ['ok', 't'.repeat(300)] } }, 'metadata.tags[1]', 'name_too_long',
      'metadata.tags[1] is 300 bytes long; caller-supplied names are limited to 256 bytes'],
    [{ tags: 'solo' }, 'tags', 'invalid_caller_name', 'tags must be an array of strings, got a string'],
    [{ tags: ['a', { b: 1 }] }, 'tags[1]', 'invalid_caller_name', 'tags[1] must be a string, got an object'],
    [{ metadata: { tags: Array.from({ length: 20 }, (_, i) => `m${i}`) }, tags: Array.from({ length: 13 }, (_, i) => `t${i}`) },
      'tags', 'too_many_tags', 'too many request tags: 33 in metadata.tags and tags together; the limit is 32'],
    // PostgreSQL's text parameters end at a NUL: "z\0q" would be stored, and its budget rebuilt, as "z".
    [{ user: 'z\u0000q' }, 'user', 'invalid_caller_name', 'user contains a control character (0x00 at byte 1); caller-supplied names must not'],
    [{ tags: ['ok', 'a\nb'] }, 'tags[1]', 'invalid_caller_name', 'tags[1] contains a control character (0x0a at byte 1); caller-supplied names must not'],
  ];
  for (const [extra, param, code, message] of cases) {
    const e = await rejectsWith(client.chat.completions.create(hi('paid-model', extra)));
    assert.equal(e.status, 400, `${JSON.stringify(extra).slice(0, 80)}: ${e}`);
    assert.equal(e.error?.type, 'invalid_request_error');
    assert.equal(e.error?.param, param);
    assert.equal(e.error?.code, code);
    assert.equal(e.error?.message, message);
  }
  const typed = await rejectsWith(gw.anthropic().messages.create(messagesBody('paid-model', { metadata: { user_id: 7 } })));
  assert.equal(typed.status, 400, String(typed));
  assert.equal(typed.error?.error?.type, 'invalid_request_error');
  assert.equal(typed.error?.error?.message, 'metadata.user_id must be a string, got a number');
  assert.equal((await mock.stats()).requests_total, 0);

  // At the limits: served.
  const ok = await client.chat.completions.create(hi('paid-model', {
    user: 'u'.repeat(256), metadata: { tags: Array.from({ length: 16 }, (_, i) => `m${i}`.padEnd(256, 'm')) },
    tags: Array.from({ length: 16 }, (_, i) => `t${i}`),
  }));
  assert.ok(ok.choices[0].message.content);
  assert.equal((await mock.stats()).requests_total, 1);
});

e2e('admin ids, aliases and tag names are limited to 256 bytes (400 naming the field)', async (ctx) => {
  const { mock } = state;
  const gw = await ctx.gateway(gatewayConfig({ model_list: [paidDeployment(mock, 'paid-model', 'paid-upstream')] }));
  const long = 'x'.repeat(257);
  const cases = [
    ['/key/generate', { key_alias: long }, 'key_alias'],
    ['/key/generate', { tags: ['fine', long] }, 'tags[1]'],
    ['/user/new', { user_id: long }, 'user_id'],
    ['/user/new', { user_alias: long }, 'user_alias'],
    ['/team/new', { team_id: long }, 'team_id'],
    ['/team/new', { team_alias: long }, 'team_alias'],
    ['/organization/new', { organization_id: long }, 'organization_id'],
    ['/customer/new', { user_id: long }, 'user_id'],
    ['/customer/block', { user_ids: ['ok', long] }, 'user_ids[1]'],
    ['/tag/new', { name: long }, 'name'],
  ];
  for (const [p, body, param] of cases) {
    const r = await gw.fetch(p, { body });
    assert.equal(r.status, 400, `${p} ${param}: ${r.text.slice(0, 300)}`);
    assert.equal(r.json?.error?.type, 'invalid_request_error');
    assert.equal(r.json?.error?.param, param);
    assert.equal(r.json?.error?.message, `${param} is 257 bytes long; caller-supplied names are limited to 256 bytes`);
  }
  const nul = await gw.fetch('/user/new', { body: { user_id: 'a\u0000b' } });
  assert.equal(nul.status, 400, nul.text);
  assert.equal(nul.json?.error?.param, 'user_id');
  assert.match(nul.json?.error?.message, /user_id contains a control character \(0x00 at byte 1\)/);
  const tooMany = await gw.fetch('/key/generate', { body: { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) } });
  assert.equal(tooMany.status, 400, tooMany.text);
  assert.equal(tooMany.json?.error?.param, 'tags');
  assert.equal(tooMany.json?.error?.message, 'tags has 33 entries; the limit is 32');
  // Nothing was created by the refusals; 256 bytes is accepted.
  assert.equal((await gw.admin('/tag/list')).length, 0);
  const team = await gw.admin('/team/new', { team_id: 'y'.repeat(256) });
  assert.equal(team.team_id.length, 256);
  const cust = await gw.admin('/customer/new', { user_id: 'z'.repeat(256) });
  assert.equal(cust.user_id.length, 256);
});
