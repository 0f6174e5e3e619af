// Regenerates the screenshots of docs/ui.md: every page of the admin UI, once with light data
// and once with a busy gateway, into docs/ui/<page>-<light|busy>.png.
//   TOLLGATE_BIN=build/tollgate TOLLGATE_MOCK_BIN=build/tollgate-mock node tests/browser/screenshots.mjs
// (run from the repository root, after `npm ci` in tests/e2e and tests/browser).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Mock, Gateway, gatewayConfig, openaiDeployment, anthropicDeployment, MASTER_KEY, chatBody, runPool, sleep, toYaml }
  from '../e2e/harness.mjs';
import { launch, openPage, signIn } from './browser.mjs';

const OUT = path.resolve(process.env.SCREENSHOT_DIR ?? 'docs/ui');
mkdirSync(OUT, { recursive: true });
const price = (input, output) => ({ input_cost_per_token: input, output_cost_per_token: output });

function config(mock) {
  return gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'gpt-4o', 'gpt-4o-east', { id: 'gpt-4o-east', ...price(0.0000025, 0.00001) }),
      openaiDeployment(mock, 'gpt-4o', 'gpt-4o-west', { id: 'gpt-4o-west', ...price(0.0000025, 0.00001) }),
      openaiDeployment(mock, 'gpt-4o-mini', 'gpt-4o-mini', { id: 'gpt-4o-mini-a', ...price(0.00000015, 0.0000006) }),
      anthropicDeployment(mock, 'claude-sonnet', 'claude-sonnet', { id: 'claude-sonnet-a', ...price(0.000003, 0.000015) }),
      openaiDeployment(mock, 'reports', 'reports-large', { id: 'reports-a', ...price(0.00003, 0.00006) }),
      openaiDeployment(mock, 'local-llama', 'llama-3-8b', { id: 'llama-a' }),
    ],
    litellm_settings: {
      fallbacks: [{ 'gpt-4o': ['claude-sonnet', 'gpt-4o-mini'] }, { reports: ['gpt-4o'] }],
      context_window_fallbacks: [{ 'gpt-4o-mini': ['gpt-4o'] }],
      content_policy_fallbacks: [{ 'gpt-4o': ['claude-sonnet'] }],
    },
    router_settings: { allowed_fails: 3, cooldown_time: 30 },
    fallback_policy: { model_groups: { reports: { degradation: { mode: 'reduced', model: 'gpt-4o-mini', max_tokens: 256 } } } },
  });
}

async function populate(gw, mock, busy) {
  const keys = [];
  const teams = busy ? ['search', 'checkout', 'support', 'data-science', 'growth'] : ['search'];
  await gw.admin('/organization/new', { organization_id: 'org-acme', organization_alias: 'Acme Corp', max_budget: 500, budget_duration: '30d' });
  for (const t of teams) {
    await gw.admin('/team/new', { team_id: `team-${t}`, team_alias: t, organization_id: 'org-acme', max_budget: busy ? 2 : 50, budget_duration: '1d' });
  }
  await gw.admin('/budget/new', { budget_id: 'starter', max_budget: 5, budget_duration: '30d', rpm_limit: 60 });
  await gw.admin('/tag/new', { name: 'prod', description: 'production traffic', max_budget: 100, budget_duration: '30d' });
  await gw.admin('/customer/new', { user_id: 'cust-beta', alias: 'Beta Corp', max_budget: 3, budget_duration: '1mo' });
  await gw.admin('/user/new', { user_id: 'alice', user_email: 'alice@example.com', user_alias: 'Alice', max_budget: 10, auto_create_key: false });
  const nkeys = busy ? 24 : 3;
  for (let i = 0; i < nkeys; i++) {
    const team = teams[i % teams.length];
    const k = await gw.generateKey({
      key_alias: `${team}-svc-${i + 1}`, team_id: `team-${team}`, max_budget: busy ? [0.05, 0.2, 1, 5][i % 4] : 1,
      budget_duration: '1d', tags: i % 2 ? ['prod'] : [], metadata: { owner: `${team}@example.com` },
    });
    keys.push(k.key);
  }
  if (busy) {
    await gw.admin('/key/block', { key: keys[keys.length - 1] });
    for (let i = 0; i < 6; i++) await gw.admin('/customer/new', { user_id: `cust-${i}`, alias: `Customer ${i}`, max_budget: 1 + i });
    for (let i = 0; i < 5; i++) await gw.admin('/user/new', { user_id: `user-${i}`, user_email: `user${i}@example.com`, auto_create_key: false });
  }
  // Upstream behaviour: a flaky primary region, an overloaded Anthropic, a broken reports model.
  if (busy) {
    await mock.script('gpt-4o-east', [{ status: 503 }, {}, {}, { status: 500 }, {}]);
    await mock.script('claude-sonnet', [{ error: 'overloaded' }, {}, {}]);
    await mock.script('reports-large', [{ status: 500 }]);
  }
  const models = ['gpt-4o', 'gpt-4o', 'gpt-4o-mini', 'claude-sonnet', 'reports'];
  const total = busy ? 260 : 12;
  await runPool(total, busy ? 6 : 1, async (i) => {
    const key = keys[i % (keys.length - (busy ? 1 : 0))];
    const model = models[i % models.length];
    await gw.fetch('/v1/chat/completions', { auth: key, body: chatBody(model, { max_tokens: 60 + (i % 5) * 40, user: i % 3 ? 'cust-beta' : undefined }) });
  });
  if (busy) {
    // Open a circuit: the reports deployment fails every time.
    for (let i = 0; i < 5; i++) await gw.fetch('/v1/chat/completions', { body: chatBody('reports', { max_tokens: 50 }) });
  }
  await sleep(1500);  // settlement and spend-log rows are written just after the responses
  return keys;
}

const PAGES = [
  ['overview', '/'], ['keys', '/keys'], ['users', '/users'], ['teams', '/teams'], ['organizations', '/organizations'],
  ['customers', '/customers'], ['tags', '/tags'], ['budgets', '/budgets'], ['models', '/models'], ['logs', '/logs'],
];

async function shoot(browser, gw, label, keys, mock) {
  const { context, page } = await openPage(browser, gw.url);
  await page.goto('/ui/');
  await page.screenshot({ path: path.join(OUT, `login-${label}.png`) });
  await signIn(page, MASTER_KEY);
  for (const [name, route] of PAGES) {
    await page.goto(`/ui${route}`);
    await page.locator(`[data-testid=page-${name}]`).waitFor();
    await page.waitForLoadState('networkidle').catch(() => {});
    await sleep(400);
    await page.screenshot({ path: path.join(OUT, `${name}-${label}.png`), fullPage: name === 'models' });
  }
  // A request's decision trace: one with a fallback (or a skip) when there is one.
  const rows = await gw.admin('/spend/logs?limit=300');
  const has = (r, step) => JSON.stringify(r.decision ?? '').includes(`"${step}"`);
  const pick = rows.find((r) => r.key_alias && (has(r, 'skip') || has(r, 'fallback')))
    ?? rows.find((r) => has(r, 'skip'))
    ?? rows.find((r) => has(r, 'fallback')) ?? rows.find((r) => r.key_alias) ?? rows[0];
  if (pick) {
    await page.goto(`/ui/logs/${encodeURIComponent(pick.request_id)}`);
    await page.getByTestId('timeline').waitFor();
    await page.getByTestId('caller-budgets').or(page.getByTestId('caller-budgets-empty')).waitFor();
    await page.screenshot({ path: path.join(OUT, `log-detail-${label}.png`), fullPage: true });
  }
  await page.goto('/ui/policy');
  await page.getByTestId('run-simulation').click();
  await page.getByTestId('sim-report').waitFor();
  await page.screenshot({ path: path.join(OUT, `policy-${label}.png`), fullPage: true });
  await page.getByTestId('mode-diff').click();
  const b = config(mock);
  b.litellm_settings.fallbacks = [{ 'gpt-4o': ['gpt-4o-mini'] }];
  await page.getByTestId('config-b').fill(toYaml(b));
  await page.getByTestId('run-simulation').click();
  await page.getByTestId('sim-diff').waitFor();
  await page.screenshot({ path: path.join(OUT, `policy-diff-${label}.png`), fullPage: true });
  await context.close();
  // The read-only view of a virtual key.
  const v = await openPage(browser, gw.url);
  await signIn(v.page, keys[0]);
  await v.page.getByTestId('page-overview').waitFor();
  await sleep(600);
  await v.page.screenshot({ path: path.join(OUT, `key-view-${label}.png`) });
  await v.context.close();
}

const browser = await launch();
try {
  for (const label of ['light', 'busy']) {
    const mock = await Mock.start();
    const gw = await Gateway.start(config(mock));
    try {
      const keys = await populate(gw, mock, label === 'busy');
      await shoot(browser, gw, label, keys, mock);
      console.log(`screenshots (${label}) written to ${OUT}`);
    } finally {
      await gw.stop();
      await mock.stop();
    }
  }
} finally {
  await browser.close();
}
