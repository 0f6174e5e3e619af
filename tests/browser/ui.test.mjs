// The admin UI (/ui) in a real browser (Debian's chromium, headless, via playwright-core)
// against a running gateway and the upstream simulator (tests/e2e/harness.mjs), as issue 15
// asks: sign in, create a key with a budget, send traffic, see the spend move and the budget bar
// fill, read the key's own view, open a request whose fallback was skipped and read the reason
// in its timeline, block the key and see requests refused, watch a circuit open and close, run a
// simulation and a config diff, and markup in aliases, tags and metadata shown as text.
// Every page fails its test on a console error, an uncaught exception, a CSP violation or a
// dialog (browser.mjs). The tests run in order on one gateway (each builds on the last).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  useMock, Gateway, gatewayConfig, openaiDeployment, MASTER_KEY, shareLogs, waitFor, sleep, chatBody, toYaml,
} from '../e2e/harness.mjs';
import { launch, openPage, money, signIn } from './browser.mjs';

const m = useMock();
let gw;
let browser;
let config;
const state = {};  // what one test leaves for the next: the key, request ids…

const price = (input, output) => ({ input_cost_per_token: input, output_cost_per_token: output });

function uiConfig(mock, { withFallbacks = true } = {}) {
  return gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'chat', 'ui-chat', { id: 'chat-a', ...price(0.0001, 0.0002) }),
      openaiDeployment(mock, 'flaky', 'ui-flaky', { id: 'flaky-a', ...price(0.0001, 0.0002) }),
      openaiDeployment(mock, 'pricey', 'ui-pricey', { id: 'pricey-a', ...price(0.01, 0.05) }),
      openaiDeployment(mock, 'wobbly', 'ui-wobbly', { id: 'wobbly-a', ...price(0.000001, 0.000002) }),
      openaiDeployment(mock, 'mystery', 'ui-mystery-model', { id: 'mystery-a' }),  // no price anywhere
    ],
    litellm_settings: withFallbacks
      ? { fallbacks: [{ flaky: ['pricey'] }, { chat: ['wobbly'] }], context_window_fallbacks: [{ chat: ['pricey'] }] }
      : { fallbacks: [{ chat: ['wobbly'] }] },
    // A deployment circuit opens after more than 2 failures in a row and sits out 5 s (room for
    // a loaded machine to show it open before it turns half-open).
    router_settings: { allowed_fails: 2, cooldown_time: 5 },
  });
}

before(async () => {
  const mock = await m.ready;
  config = uiConfig(mock);
  gw = await Gateway.start(config);
  shareLogs(gw);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await gw?.stop();
});

/// A page signed in as `key` (the master key by default), run through `fn`, its guard checked.
async function withPage(fn, { key = MASTER_KEY, signedIn = true } = {}) {
  const { context, page } = await openPage(browser, gw.url);
  try {
    if (signedIn) await signIn(page, key);
    await fn(page);
    await page.guard.check();
  } catch (e) {
    e.message += `\n${gw.logs().slice(-4000)}`;
    throw e;
  } finally {
    await context.close();
  }
}

/// A chat completion as `key`, bounded output (so the reservation fits a small budget).
function chat(key, model = 'chat', extra = {}) {
  return gw.fetch('/v1/chat/completions', { auth: key, body: chatBody(model, { max_tokens: 20, ...extra }) });
}

test('the static files: no key needed, CSP and the other headers, SPA fallback, 404 for a missing asset', async () => {
  const index = await fetch(`${gw.url}/ui/keys`);
  assert.equal(index.status, 200);
  const html = await index.text();
  assert.match(index.headers.get('content-type'), /^text\/html/);
  assert.match(index.headers.get('content-security-policy'), /script-src 'self'/);
  assert.equal(index.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(index.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  const script = html.match(/src="(\/ui\/assets\/[^"]+\.js)"/)?.[1];
  assert.ok(script, html);
  const js = await fetch(gw.url + script);
  assert.equal(js.status, 200);
  assert.match(js.headers.get('content-type'), /^text\/javascript/);
  assert.match(js.headers.get('cache-control'), /immutable/);
  const again = await fetch(gw.url + script, { headers: { 'if-none-match': js.headers.get('etag') } });
  assert.equal(again.status, 304);
  assert.equal((await fetch(`${gw.url}/ui/assets/nope-123.js`)).status, 404);
  // Data calls need the key.
  assert.equal((await fetch(`${gw.url}/tollgate/overview`)).status, 401);
});

test('the UI source never builds HTML from strings (every value is a text node)', () => {
  const dir = path.resolve('ui/src');
  const files = readdirSync(dir, { recursive: true }).filter((f) => /\.(jsx?|mjs)$/.test(f));
  assert.ok(files.length >= 10, files.join());
  for (const f of files) {
    const src = readFileSync(path.join(dir, f), 'utf8');
    for (const bad of ['dangerouslySetInnerHTML', 'innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'new Function']) {
      assert.ok(!src.includes(bad), `${f} uses ${bad}`);
    }
  }
});

test('sign-in: a wrong key is refused with the API\'s reason; empty lists say so', async () => {
  await withPage(async (page) => {
    page.guard.allow(/status of 401/);  // the browser logs the refused whoami itself
    await page.goto('/ui/');
    await page.getByTestId('login-key').fill('sk-not-a-key-of-this-gateway');
    await page.getByTestId('login-submit').click();
    await page.getByTestId('login-error').waitFor();
    assert.match(await page.getByTestId('login-error').textContent(), /refused this key/);
    await page.getByTestId('login-key').fill(MASTER_KEY);
    await page.getByTestId('login-submit').click();
    await page.getByTestId('page-overview').waitFor();
    assert.match(await page.getByTestId('whoami').textContent(), /master key/);
    // The key is in sessionStorage only: no cookie, nothing in the URL.
    assert.deepEqual(await page.context().cookies(), []);
    assert.ok(!page.url().includes(MASTER_KEY));
    assert.equal(await page.evaluate(() => sessionStorage.getItem('tollgate.key')), MASTER_KEY);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByTestId('keys-table-empty').waitFor();
    assert.match(await page.getByTestId('keys-table-empty').textContent(), /No keys yet/);
    await page.getByRole('link', { name: 'Tags', exact: true }).click();
    await page.getByTestId('tags-table-empty').waitFor();
  }, { signedIn: false });
});

test('create a key with a budget (a field error shown at its field), send traffic, see the spend move and the bar fill', async () => {
  await withPage(async (page) => {
    page.guard.allow(/status of 400/);  // the refused create below
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByTestId('create').click();
    const form = page.getByTestId('keys-form');
    await form.locator('input[name=key_alias]').fill('checkout-app');
    await form.locator('input[name=max_budget]').fill('-1');
    await form.getByTestId('submit').click();
    // The API's 400 names max_budget: shown beside that field.
    const fieldError = form.getByTestId('field-error-max_budget');
    await fieldError.waitFor();
    assert.match(await fieldError.textContent(), /max_budget must be >= 0/);
    await form.locator('input[name=max_budget]').fill('0.05');
    await form.locator('input[name=tags]').fill('checkout, web');
    await form.getByTestId('submit').click();
    // The new key, shown once, with a copy button.
    const secret = await page.getByTestId('new-secret-value').inputValue();
    assert.match(secret, /^sk-/);
    await page.getByTestId('copy-secret').click();
    await page.getByTestId('copy-secret').getByText('Copied', { exact: true }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
    state.key = secret;
    const row = page.getByTestId('keys-table').locator('tr', { hasText: 'checkout-app' });
    const bar = row.getByTestId('budget-bar');
    assert.equal(Number(await bar.getAttribute('data-spend')), 0);
    assert.equal(Number(await bar.getAttribute('data-max')), 0.05);

    for (let i = 0; i < 4; i++) assert.equal((await chat(secret)).status, 200);
    const info = await waitFor(async () => {
      const k = await gw.keyInfo(secret);
      return k.spend > 0 && !(k.reserved_spend > 0) ? k : null;
    }, { what: 'settled spend on the key' });
    state.spendAfterTraffic = info.spend;
    await page.reload();
    await page.getByTestId('keys-table').waitFor();
    const filled = page.getByTestId('keys-table').locator('tr', { hasText: 'checkout-app' }).getByTestId('budget-bar');
    // The page shows the API's figure, and the bar is filled by it.
    assert.equal(Number(await filled.getAttribute('data-spend')), info.spend);
    assert.ok(Number(await filled.getAttribute('data-ratio')) > 0);
    assert.match(await filled.textContent(), new RegExp(`\\${money(info.spend)} of \\$0\\.0500`));
    const width = Number(await filled.locator('rect.bar-spend').getAttribute('width'));
    assert.ok(Math.abs(width - (info.spend / 0.05) * 200) < 0.01, `bar width ${width}`);

    // Search narrows the list; the overview's figures are the API's.
    await page.getByTestId('search').fill('no-such-alias');
    await page.getByText('No match.').waitFor();
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    const ov = await gw.admin('/tollgate/overview');
    await page.getByTestId('spend-today').waitFor();
    await waitFor(async () => (await page.getByTestId('spend-today').textContent()) === money(ov.spend.today),
      { what: `spend today ${money(ov.spend.today)} on the page` });
    assert.ok(ov.spend.today >= info.spend);
    const budgetRow = page.getByTestId('top-budgets').locator('tr', { hasText: 'checkout-app' });
    await budgetRow.waitFor();
    assert.equal(Number(await budgetRow.getByTestId('budget-bar').getAttribute('data-spend')), info.spend);
    await page.getByTestId('top-keys').getByText('checkout-app').waitFor();
    await page.getByTestId('spend-chart').locator('canvas').first().waitFor();

    // More traffic: the overview (polled) moves without a reload.
    const before = await page.getByTestId('spend-today').textContent();
    for (let i = 0; i < 2; i++) assert.equal((await chat(secret)).status, 200);
    await waitFor(async () => (await page.getByTestId('spend-today').textContent()) !== before,
      { timeoutMs: 12000, what: 'the spend figure to move' });
    const ov2 = await gw.admin('/tollgate/overview');
    await waitFor(async () => (await page.getByTestId('spend-today').textContent()) === money(ov2.spend.today),
      { timeoutMs: 12000, what: `spend today ${money(ov2.spend.today)}` });
  });
});

test('a request whose fallback was skipped: the reason in its timeline', async () => {
  await m.mock.script('ui-flaky', [{ status: 500 }]);
  // The key's budget cannot pay for the pricey fallback's worst case: skipped, primary's error.
  const r = await chat(state.key, 'flaky');
  assert.equal(r.status, 500, r.text);
  assert.match(r.headers.get('x-tollgate-skipped-fallbacks') ?? '', /pricey/);
  const id = r.headers.get('x-litellm-call-id');
  const row = await waitFor(async () => (await gw.admin(`/spend/logs?request_id=${id}`))[0], { what: 'the spend-log row' });
  const decision = typeof row.decision === 'string' ? JSON.parse(row.decision) : row.decision;
  const skip = decision.steps.find((s) => s.step === 'skip');
  assert.ok(skip?.reason, JSON.stringify(decision));
  state.skippedId = id;

  await withPage(async (page) => {
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    await page.locator('select[name=status]').selectOption('failure');
    await page.locator('input[name=model]').fill('flaky');
    await page.getByTestId('apply-filters').click();
    const rows = page.getByTestId('logs-table').locator('tbody tr');
    await waitFor(async () => (await rows.count()) === 1, { what: 'one failed flaky request in the list' });
    await rows.first().getByText('skipped fallback').waitFor();
    await rows.first().click();
    await page.getByTestId('timeline').waitFor();
    const attempt = page.locator('[data-step=attempt]').first();
    assert.match(await attempt.textContent(), /flaky\/flaky-a/);
    assert.equal(await attempt.getByTestId('step-class').textContent(), 'transient_provider_error');
    assert.ok(await attempt.getByTestId('step-action').textContent());
    assert.equal(await attempt.getByTestId('step-charged').textContent(), '$0.00');
    const skipStep = page.locator('[data-step=skip]');
    assert.match(await skipStep.textContent(), /pricey/);
    assert.equal(await skipStep.getByTestId('step-reason').textContent(), skip.reason);
    assert.match(skip.reason, /budget/);
    // The caller's money budgets, with the key's among them.
    await page.getByTestId('caller-budgets').getByText('checkout-app').waitFor();
    assert.ok(page.url().endsWith(`/ui/logs/${encodeURIComponent(id)}`));
    // A deep link to the request works after a reload (SPA route served as index.html).
    await page.reload();
    await page.getByTestId('timeline').waitFor();
  });
});

test('a virtual key sees a read-only view of its own data', async () => {
  await chat(MASTER_KEY);  // a request of another caller, which the key must not see
  await withPage(async (page) => {
    assert.match(await page.getByTestId('whoami').textContent(), /checkout-app.*read-only/);
    const links = await page.locator('nav.side a').allTextContents();
    assert.deepEqual(links, ['Overview', 'My key', 'Logs']);
    const own = await gw.fetch('/tollgate/overview', { method: 'GET', auth: state.key });
    assert.equal(own.status, 200, own.text);
    await waitFor(async () => (await page.getByTestId('spend-today').textContent()) === money(own.json.spend.today),
      { what: 'the key\'s own spend today' });
    await page.getByRole('link', { name: 'My key', exact: true }).click();
    await page.getByTestId('my-alias').waitFor();
    assert.equal(await page.getByTestId('my-alias').textContent(), 'checkout-app');
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    const cells = page.getByTestId('logs-table').locator('tbody tr td:nth-child(3)');
    await waitFor(async () => (await cells.count()) >= 7, { what: 'the key\'s 7 requests in its logs' });
    const keys = await cells.allTextContents();
    assert.ok(keys.every((k) => k === 'checkout-app'), keys.join());
    // Admin pages are not offered, nor reachable by URL; no create button anywhere.
    await page.goto('/ui/keys');
    await page.getByText('needs the master key').waitFor();
    assert.equal(await page.getByTestId('create').count(), 0);
  }, { key: state.key });
});

test('block the key: its requests are refused, and it cannot sign in', async () => {
  await withPage(async (page) => {
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    const row = page.getByTestId('keys-table').locator('tr', { hasText: 'checkout-app' });
    // Edit: only the changed field is sent; the bar follows the new cap.
    await row.getByTestId('edit').click();
    await page.getByTestId('keys-form').locator('input[name=max_budget]').fill('0.08');
    await page.getByTestId('keys-form').getByTestId('submit').click();
    await waitFor(async () => Number(await row.getByTestId('budget-bar').getAttribute('data-max')) === 0.08, { what: 'the new cap' });
    const k = await gw.keyInfo(state.key);
    assert.equal(k.max_budget, 0.08);
    assert.deepEqual(k.tags, ['checkout', 'web']);
    await row.getByTestId('block').click();
    await row.getByText('blocked').waitFor();
    await row.getByTestId('unblock').waitFor();
  });
  const refused = await chat(state.key);
  assert.equal(refused.status, 401);
  assert.match(refused.json.error.message, /blocked/);
  await withPage(async (page) => {
    await page.goto('/ui/');
    await page.getByTestId('login-key').fill(state.key);
    await page.getByTestId('login-submit').click();
    await page.getByTestId('login-error').waitFor();
    assert.match(await page.getByTestId('login-error').textContent(), /blocked/);
  }, { signedIn: false });
});

test('a circuit opens (time left shown) and closes again, live on the models page', async () => {
  await m.mock.script('ui-wobbly', [{ status: 500 }, { status: 500 }, { status: 500 }, {}]);
  await withPage(async (page) => {
    await page.getByRole('link', { name: 'Models', exact: true }).click();
    const group = page.locator('[data-testid=model-group][data-name=wobbly]');
    const circuit = group.getByTestId('circuit');
    await waitFor(async () => (await circuit.getAttribute('data-state')) === 'closed', { what: 'wobbly closed' });
    // Prices: priced deployments show theirs, the one with no price is flagged.
    await page.locator('[data-testid=model-group][data-name=mystery]').getByTestId('unpriced').waitFor();
    assert.match(await page.locator('[data-testid=model-group][data-name=pricey]').textContent(), /\$10000\.00 in · \$50000\.00 out/);
    // The fallback graph: an edge per list entry, labelled with the classes that take it.
    const edge = page.locator('[data-testid=graph-edge][data-from=flaky][data-to=pricey]');
    assert.equal(await edge.getAttribute('data-kind'), 'fallbacks');
    assert.match(await edge.getAttribute('data-classes'), /transient_provider_error/);
    assert.equal(await page.locator('[data-testid=graph-edge][data-kind=context_window_fallbacks]').getAttribute('data-classes'), 'context_overflow');

    for (let i = 0; i < 3; i++) assert.equal((await chat(MASTER_KEY, 'wobbly')).status, 500);
    const opened = Date.now();
    await waitFor(async () => (await circuit.getAttribute('data-state')) === 'open', { timeoutMs: 4500, what: 'wobbly open' });
    const left = await group.getByTestId('circuit-left').textContent();
    assert.match(left, /probe in [0-5]\.\d s/);
    // While open, requests are refused without reaching the upstream.
    const upstream = (await m.mock.model('ui-wobbly')).requests;
    assert.notEqual((await chat(MASTER_KEY, 'wobbly')).status, 200);
    assert.equal((await m.mock.model('ui-wobbly')).requests, upstream);
    await sleep(Math.max(0, opened + 5100 - Date.now()));
    // After the cool-down one probe goes through, succeeds, and the circuit closes.
    const probe = await chat(MASTER_KEY, 'wobbly');
    assert.equal(probe.status, 200, probe.text);
    await waitFor(async () => (await circuit.getAttribute('data-state')) === 'closed', { timeoutMs: 4000, what: 'wobbly closed again' });
  });
});

test('simulate a scenario on the live config, then diff two configs\' decisions', async () => {
  const scenario = [
    'name: browser test',
    'requests:',
    '  - name: flaky falls back',
    '    model: flaky',
    '    max_tokens: 20',
    '    upstream: {flaky: [500]}',
    '  - name: healthy chat',
    '    model: chat',
    '    max_tokens: 20',
    '',
  ].join('\n');
  const api = await gw.admin('/tollgate/simulate', { scenario });
  assert.equal(api.requests.length, 2);
  await withPage(async (page) => {
    await page.getByRole('link', { name: 'Policy', exact: true }).click();
    await page.getByTestId('scenario').fill(scenario);
    await page.getByTestId('run-simulation').click();
    await page.getByTestId('sim-report').waitFor();
    const paths = await page.getByTestId('sim-path').allTextContents();
    assert.match(paths[0], /flaky-a:500 .*pricey-a:200/);
    assert.match(paths[1], /^chat-a:200$/);
    assert.equal(await page.getByTestId('sim-charged').textContent(), money(api.summary.charged));
    await page.getByTestId('timeline').locator('[data-step=attempt]').first().waitFor();

    // The same scenario on a config without the flaky → pricey fallback: one decision changes.
    await page.getByTestId('mode-diff').click();
    await page.getByTestId('config-b').fill(toYaml(uiConfig(m.mock, { withFallbacks: false })));
    await page.getByTestId('run-simulation').click();
    await page.getByTestId('sim-diff').waitFor();
    assert.equal(await page.getByTestId('diff-count').textContent(), '1');
    assert.equal(await page.getByTestId('diff-changed').count(), 1);

    // A bad scenario: the API's problems, with their YAML path, on the page.
    page.guard.allow(/status of 400/);
    await page.getByTestId('mode-live').click();
    await page.getByTestId('scenario').fill('requests: 3\n');
    await page.getByTestId('run-simulation').click();
    await page.getByTestId('sim-error').waitFor();
    assert.match(await page.getByTestId('sim-error').textContent(), /requests/);
  });
});

test('markup in aliases, tags, metadata and request tags is shown as text (XSS)', async () => {
  const alias = '<img src=x onerror=alert(1)>';
  const tag = '<script>alert(2)</script>';
  const note = '"><svg onload=alert(3)>';
  const tagName = '<b>bold</b><img src=x onerror=alert(4)>';
  const requestTag = '<iframe src=javascript:alert(5)>';
  await withPage(async (page) => {
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    await page.getByTestId('create').click();
    const form = page.getByTestId('keys-form');
    await form.locator('input[name=key_alias]').fill(alias);
    await form.locator('input[name=tags]').fill(tag);
    await form.locator('textarea[name=metadata]').fill(JSON.stringify({ note }));
    await form.getByTestId('submit').click();
    const secret = await page.getByTestId('new-secret-value').inputValue();
    const names = await page.getByTestId('keys-table').getByTestId('row-name').allTextContents();
    assert.ok(names.includes(alias), names.join('|'));
    assert.match(await page.getByTestId('keys-table').textContent(), /<script>alert\(2\)<\/script>/);
    // Its edit form shows the metadata as text in the textarea.
    await page.getByTestId('keys-table').locator('tr', { hasText: alias }).getByTestId('edit').click();
    assert.equal(JSON.parse(await page.locator('textarea[name=metadata]').inputValue()).note, note);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });

    await page.getByRole('link', { name: 'Tags', exact: true }).click();
    await page.getByTestId('create').click();
    await page.getByTestId('tags-form').locator('input[name=name]').fill(tagName);
    await page.getByTestId('tags-form').getByTestId('submit').click();
    await page.getByTestId('tags-table').getByText(tagName, { exact: true }).waitFor();

    const r = await chat(secret, 'chat', { tags: [requestTag] });
    assert.equal(r.status, 200, r.text);
    const id = r.headers.get('x-litellm-call-id');
    await waitFor(async () => (await gw.admin(`/spend/logs?request_id=${id}`)).length, { what: 'the row' });
    await page.goto(`/ui/logs/${encodeURIComponent(id)}`);
    await page.getByTestId('timeline').waitFor();
    const facts = await page.locator('dl.facts').textContent();
    assert.ok(facts.includes(alias), facts);
    assert.ok(facts.includes(requestTag), facts);
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.getByTestId('top-keys').getByText(alias, { exact: true }).waitFor();

    // Delete the key (two clicks: the second names it).
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    const xrow = page.getByTestId('keys-table').locator('tr', { hasText: alias });
    await xrow.getByTestId('delete').click();
    assert.equal(await xrow.getByTestId('confirm-delete').textContent(), `Delete ${alias}?`);
    await xrow.getByTestId('confirm-delete').click();
    await waitFor(async () => (await page.getByTestId('keys-table').locator('tr', { hasText: alias }).count()) === 0, { what: 'the row gone' });
    assert.equal((await gw.fetch(`/key/info?key=${encodeURIComponent(secret)}`, { method: 'GET' })).status, 404);

    // Nothing was parsed as markup anywhere.
    assert.equal(await page.locator('img[src=x], main script, iframe, svg[onload]').count(), 0);
  });
});

test('team members: added (an unknown user refused at its field) and removed', async () => {
  await gw.admin('/team/new', { team_id: 'team-ui', team_alias: 'ui team', max_budget: 10 });
  await gw.admin('/user/new', { user_id: 'ui-alice', auto_create_key: false });
  await withPage(async (page) => {
    page.guard.allow(/status of 400/);
    await page.getByRole('link', { name: 'Teams', exact: true }).click();
    await page.getByTestId('teams-table').locator('tr', { hasText: 'ui team' }).getByTestId('members').click();
    const form = page.getByTestId('member-form');
    await form.locator('input[name=user_id]').fill('nobody-here');
    await form.getByTestId('submit').click();
    await form.getByTestId('field-error-user_id').waitFor();
    await form.locator('input[name=user_id]').fill('ui-alice');
    await form.locator('input[name=role]').fill('admin');
    await form.locator('input[name=max_budget_in_team]').fill('2.5');
    await form.getByTestId('submit').click();
    const row = page.getByTestId('members-table').locator('tr', { hasText: 'ui-alice' });
    await row.waitFor();
    assert.match(await row.textContent(), /admin.*\$2\.50/);
    const team = (await gw.admin('/team/info?team_id=team-ui')).team_info;
    assert.deepEqual(team.members_with_roles.map((m) => [m.user_id, m.role, m.max_budget_in_team]), [['ui-alice', 'admin', 2.5]]);
    await row.getByText('Remove').click();
    await page.getByTestId('members-table-empty').waitFor();
  });
});

test('edges: a long alias, the API answering an error, a refused whoami sends back to sign-in', async () => {
  const long = `a-very-long-alias-${'x'.repeat(238)}`;
  assert.equal(long.length, 256);
  await gw.generateKey({ key_alias: long, max_budget: 1 });
  await withPage(async (page) => {
    await page.getByRole('link', { name: 'Keys', exact: true }).click();
    // allTextContents() does not wait: the list is fetched after the click, so wait for its row.
    const rowNames = page.getByTestId('keys-table').getByTestId('row-name');
    await rowNames.filter({ hasText: long }).waitFor();
    const names = await rowNames.allTextContents();
    assert.ok(names.includes(long));
    // The page does not grow sideways with it (the alias wraps).
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `page wider than the window by ${overflow}px`);

    // The API failing: its message on the page, the rest of the UI still usable.
    page.guard.allow(/status of 500/);
    await page.route('**/tollgate/routing', (route) => route.fulfill({
      status: 500, contentType: 'application/json',
      body: JSON.stringify({ error: { message: 'store unavailable <b>now</b>', type: 'api_error', param: null, code: '500' } }),
    }));
    await page.getByRole('link', { name: 'Models', exact: true }).click();
    await page.getByTestId('error').waitFor();
    assert.match(await page.getByTestId('error').textContent(), /Routing: store unavailable <b>now<\/b> \(HTTP 500\)/);
    await page.unroute('**/tollgate/routing');
    await page.getByRole('link', { name: 'Logs', exact: true }).click();
    await page.getByTestId('logs-table').waitFor();

    // The key stops working mid-session (here: any 401): back to sign-in with the reason.
    page.guard.allow(/status of 401/);
    await page.route('**/spend/logs*', (route) => route.fulfill({
      status: 401, contentType: 'application/json',
      body: JSON.stringify({ error: { message: 'Authentication Error, key is blocked', type: 'auth_error', param: null, code: '401' } }),
    }));
    await page.reload();
    await page.getByTestId('login-form').waitFor();
    assert.match(await page.locator('.notice').textContent(), /key is blocked/);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('tollgate.key')), null);
  });
});
