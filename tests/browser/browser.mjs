// Browser side of the UI tests: Debian's chromium (headless) driven by playwright-core, with
// every page guarded — a console error, an uncaught exception, a CSP violation or a JavaScript
// dialog fails the test (`page.guard.check()`), unless the test named it as expected.
import { chromium } from 'playwright-core';
import { existsSync } from 'node:fs';

export const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';

/// Starts headless chromium. `--no-sandbox` always: as root the sandbox cannot start, and as an
/// unprivileged user in a container without user namespaces neither can it; the browser only
/// loads the gateway under test on 127.0.0.1.
export async function launch() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`chromium not found at ${CHROMIUM}: apt-get install -y chromium (scripts/install-deps.sh does), or set TOLLGATE_CHROMIUM`);
  }
  const args = ['--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-sandbox'];
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args });
}

/// A new context and page on `baseUrl`, with the guard installed.
export async function openPage(browser, baseUrl, { viewport = { width: 1360, height: 900 } } = {}) {
  const context = await browser.newContext({ baseURL: baseUrl, viewport });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl }).catch(() => {});
  const page = await context.newPage();
  const guard = { problems: [], allowed: [] };
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const t = m.text();
    if (guard.allowed.some((re) => re.test(t))) return;
    guard.problems.push(`console error: ${t}`);
  });
  page.on('pageerror', (e) => guard.problems.push(`uncaught: ${e.message}`));
  page.on('dialog', async (d) => {
    guard.problems.push(`dialog (${d.type()}): ${d.message()}`);
    await d.dismiss().catch(() => {});
  });
  /// Expect console errors matching `re` (e.g. the browser's own "Failed to load resource: …
  /// status of 401" line for a request the test makes fail on purpose).
  guard.allow = (re) => guard.allowed.push(re);
  /// Throws if anything went wrong on the page so far (CSP violations included).
  guard.check = async () => {
    const csp = await page.evaluate(() => window.__csp ?? []).catch(() => []);
    const all = [...guard.problems, ...csp.map((c) => `CSP violation: ${c}`)];
    if (all.length) throw new Error(`the page reported problems:\n${all.join('\n')}`);
  };
  page.guard = guard;
  return { context, page };
}

/// The UI's own dollar format (ui/src/format.js), to compare what the page shows with the API.
export function money(v) {
  if (v === null || v === undefined || v === '') return '—';
  const n = Number(v);
  const abs = Math.abs(n);
  const digits = abs === 0 ? 2 : abs < 0.01 ? 6 : abs < 1 ? 4 : 2;
  return `$${n.toFixed(digits)}`;
}

/// Signs in on /ui with `key`; resolves once the shell shows who is signed in.
export async function signIn(page, key) {
  await page.goto('/ui/');
  await page.getByTestId('login-key').fill(key);
  await page.getByTestId('login-submit').click();
  await page.getByTestId('whoami').waitFor();
}
