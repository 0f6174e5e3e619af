// `tollgate pricing import` and `tollgate_settings.price_file` as a user meets them: LiteLLM's
// price file in, Tollgate's table out (stdout or an atomic --out), exit 2 with one line naming the
// entry and field on a malformed file, and the imported table used by `pricing check`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test, after } from 'node:test';

const BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../unit/budget/fixtures/litellm_small.json');
const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-pricing-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function run(args) {
  const r = spawnSync(BIN, args, { cwd: dir, encoding: 'utf8', timeout: 10000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function write(name, text) {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

const config = (priceFile) => `model_list:
  - model_name: fast
    litellm_params:
      model: xai/grok-4-fast-reasoning
      api_key: sk-unused
  - model_name: mine
    litellm_params:
      model: openai/my-org-model
      api_base: http://127.0.0.1:9/v1
      api_key: sk-unused
    model_info:
      base_model: my-org/model
tollgate_settings:
  data_dir: ${dir}/data
  price_file: ${priceFile}
`;

test('import writes the table to stdout and a one-line summary to stderr', () => {
  const r = run(['pricing', 'import', FIXTURE, '--as-of', '2026-07-24']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, 'imported 10 models, skipped 5 (no token price)\n');
  assert.match(r.stdout, /^# Imported by `tollgate pricing import`/);
  assert.match(r.stdout, /\nversion: 1\nmodels:\n/);
  assert.match(r.stdout, /\n  "gpt-5":\n    input_cost_per_token: "0.00000125"\n/);
  assert.match(r.stdout, /"together_ai\/baai\/bge-base-en-v1.5"/);  // keys lower-cased
  assert.doesNotMatch(r.stdout, /sample_spec|dall-e/);
  assert.match(r.stdout, /as_of: "2026-07-24"/);
});

test('import --out writes atomically, and the result is a usable price_file', () => {
  const out = path.join(dir, 'imported.yaml');
  const r = run(['pricing', 'import', FIXTURE, '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^imported 10 models, skipped 5 \(no token price\)$/m);
  assert.deepEqual(readdirSync(dir).filter((f) => f.includes('.tmp-')), []);  // no temporary left

  const cfg = write('with-imported.yaml', config(out));
  const check = run(['config', 'check', cfg]);
  assert.equal(check.code, 0, check.stdout + check.stderr);
  const prices = run(['pricing', 'check', '--config', cfg]);
  assert.equal(prices.code, 0, prices.stderr);
  // The bundled table has grok-4-fast; the imported xai/grok-4-fast-reasoning key is more specific.
  assert.match(prices.stdout, /^fast\t.*input \$0\.0000002\/token.*\(table: xai\/grok-4-fast-reasoning\)$/m);
  assert.match(prices.stdout, /^mine\t.*\tunpriced\t/m);  // my-org/model is in neither table
});

test('LiteLLM JSON works as price_file directly, and adds models the bundled table lacks', () => {
  const json = write('org-prices.json', JSON.stringify({
    'my-org/model': { input_cost_per_token: 1.5e-6, output_cost_per_token: 6e-6, max_output_tokens: 4096 },
  }));
  const prices = run(['pricing', 'check', '--config', write('with-json.yaml', config(json))]);
  assert.equal(prices.code, 0, prices.stderr);
  assert.match(prices.stdout, /^mine\t.*input \$0\.0000015\/token, output \$0\.000006\/token.*\(table: my-org\/model\)$/m);
  assert.match(prices.stdout, /^fast\t.*\(table: grok-4-fast\)$/m);  // bundled
});

test('a malformed file exits 2 with one line naming the entry and field, and writes nothing', () => {
  const out = path.join(dir, 'kept.yaml');
  writeFileSync(out, 'previous content\n');
  const cases = [
    ['{"gpt-5": {"input_cost_per_token": -1e-06}}', /entry "gpt-5": input_cost_per_token: .*negative/],
    ['{"gpt-5": {"input_cost_per_token": "0.1"}}', /entry "gpt-5": input_cost_per_token: expected a number, got a string/],
    ['{"gpt-5": {"input_cost_per_token": 1e-06, "max_input_tokens": 1.5}}', /entry "gpt-5": max_input_tokens: expected an integer/],
    ['{"gpt-5": "cheap"}', /entry "gpt-5": expected an object, got a string/],
    ['not json at all', /not valid JSON/],
  ];
  for (const [text, pattern] of cases) {
    const r = run(['pricing', 'import', write('bad.json', text), '--out', out]);
    assert.equal(r.code, 2, `${text}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, pattern);
    assert.equal(readFileSync(out, 'utf8'), 'previous content\n');
  }
  assert.deepEqual(readdirSync(dir).filter((f) => f.includes('.tmp-')), []);
});

test('bad usage and unreadable files exit 2', () => {
  assert.equal(run(['pricing', 'import']).code, 2);
  assert.equal(run(['pricing', 'import', path.join(dir, 'missing.json')]).code, 2);
  assert.equal(run(['pricing', 'import', FIXTURE, '--as-of', 'yesterday']).code, 2);
  const unwritable = run(['pricing', 'import', FIXTURE, '--out', path.join(dir, 'no-such-dir', 'x.yaml')]);
  assert.equal(unwritable.code, 1, unwritable.stderr);
  assert.match(unwritable.stderr, /cannot create/);
});

test('an invalid price_file is a config error: config check and serve exit 2 naming it', () => {
  const bad = write('bad-prices.json', '{"gpt-5": {"input_cost_per_token": -1}}');
  const cfg = write('bad-price-file.yaml', config(bad));
  const check = run(['config', 'check', cfg]);
  assert.equal(check.code, 2, check.stdout + check.stderr);
  assert.match(check.stdout, /error: tollgate_settings\.price_file \(line 15\): .*bad-prices\.json: entry "gpt-5": input_cost_per_token/);
  const serve = run(['serve', '--config', cfg, '--port', '0']);
  assert.equal(serve.code, 2, serve.stderr);
  assert.match(serve.stderr, /config error: tollgate_settings\.price_file/);
  assert.doesNotMatch(serve.stdout + serve.stderr, /listening on/);
  const missing = run(['config', 'check', write('missing-price-file.yaml', config(path.join(dir, 'nope.yaml')))]);
  assert.equal(missing.code, 2);
  assert.match(missing.stdout, /tollgate_settings\.price_file .*nope\.yaml: cannot read/);
});
