// The CLI as a user meets it: `tollgate config check FILE` and `tollgate serve` on bad
// configs (exit 2 with a one-line reason naming the YAML path), `tollgate --config FILE`.
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, after } from 'node:test';
import { MASTER_KEY } from './harness.mjs';

const BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const GOOD = `model_list:
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_base: http://127.0.0.1:9/v1
      api_key: sk-unused
router_settings:
  num_retries: 2
  cooldown_time: 5
general_settings:
  master_key: ${MASTER_KEY}
tollgate_settings:
  data_dir: ${dir}/data
`;

function writeConfig(name, text) {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

function run(args, env = {}) {
  const r = spawnSync(BIN, args, {
    cwd: dir, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 10000,
  });
  return { code: r.status, signal: r.signal, out: `${r.stdout}\n${r.stderr}` };
}

test('config check accepts a valid LiteLLM config (exit 0)', () => {
  const r = run(['config', 'check', writeConfig('good.yaml', GOOD)]);
  assert.equal(r.code, 0, r.out);
});

test('config check: a wrong type is an error naming the YAML path (exit 2)', () => {
  const r = run(['config', 'check', writeConfig('badtype.yaml', GOOD.replace('num_retries: 2', 'num_retries: many'))]);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /router_settings\.num_retries/);
});

test('config check: a missing os.environ/ variable is a warning in a deployment (exit 0, as LiteLLM loads it) and an error for master_key (exit 2)', () => {
  const cfg = GOOD.replace('api_key: sk-unused', 'api_key: os.environ/TOLLGATE_E2E_SURELY_UNSET');
  const r = run(['config', 'check', writeConfig('env.yaml', cfg)], { TOLLGATE_E2E_SURELY_UNSET: undefined });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /model_list\[0\]\.litellm_params\.api_key.*TOLLGATE_E2E_SURELY_UNSET.*deployment_misconfigured/);
  const key = GOOD.replace(`master_key: ${MASTER_KEY}`, 'master_key: os.environ/TOLLGATE_E2E_SURELY_UNSET');
  const k = run(['config', 'check', writeConfig('env-key.yaml', key)], { TOLLGATE_E2E_SURELY_UNSET: undefined });
  assert.equal(k.code, 2, k.out);
  assert.match(k.out, /general_settings\.master_key.*TOLLGATE_E2E_SURELY_UNSET/);
});

test('config check: an unknown key is a warning that names it, not an error', () => {
  const r = run(['config', 'check', writeConfig('unknown.yaml', GOOD.replace('  cooldown_time: 5', '  cooldown_time: 5\n  surely_not_a_setting: 1'))]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /surely_not_a_setting/);
});

test('serve with a bad config exits 2 without listening', () => {
  const r = run(['serve', '--config', writeConfig('bad-serve.yaml', GOOD.replace('num_retries: 2', 'num_retries: [1]')), '--port', '0']);
  assert.equal(r.code, 2, r.out);
  assert.doesNotMatch(r.out, /listening on/);
});

test('bad usage exits 2', () => {
  assert.equal(run(['serve', '--no-such-flag']).code, 2);
  assert.equal(run(['config', 'check', path.join(dir, 'does-not-exist.yaml')]).code, 2);
});

test('`tollgate --config FILE` serves too', async () => {
  const child = spawn(BIN, ['--config', writeConfig('plain.yaml', GOOD), '--host', '127.0.0.1', '--port', '0'], {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "listening on" line: ${out}\n${err}`)), 10000);
      child.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/\S+)/);
        if (m) { clearTimeout(timer); resolve(m[1]); }
      });
      child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${out}\n${err}`)); });
    });
    const r = await fetch(`${url}/health/liveliness`);
    assert.equal(r.status, 200);
  } finally {
    child.kill('SIGKILL');
  }
});

test('a second gateway on the same SQLite database exits 1 naming the file and the holder\'s pid; the first keeps serving', async () => {
  const cfg = writeConfig('shared-db.yaml', GOOD.replace(`${dir}/data`, `${dir}/shared`));
  const first = spawn(BIN, ['serve', '--config', cfg, '--host', '127.0.0.1', '--port', '0'], {
    cwd: dir, stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "listening on" line: ${out}`)), 10000);
      first.stdout.on('data', (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/\S+)/);
        if (m) { clearTimeout(timer); resolve(m[1]); }
      });
      first.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${out}`)); });
    });
    const second = run(['serve', '--config', cfg, '--host', '127.0.0.1', '--port', '0']);
    assert.equal(second.code, 1, second.out);
    const line = second.out.split('\n').find((l) => l.includes('in use by another tollgate process'));
    assert.ok(line, second.out);
    assert.ok(line.includes(`${dir}/shared/tollgate.db`), line);
    assert.ok(line.includes(`(pid ${first.pid})`), line);
    assert.equal((await fetch(`${url}/health/liveliness`)).status, 200);
  } finally {
    first.kill('SIGKILL');
  }
  // Once the holder is gone (even killed), the database can be served again.
  await new Promise((r) => first.once('exit', r));
  const again = spawn(BIN, ['serve', '--config', cfg, '--host', '127.0.0.1', '--port', '0'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    await new Promise((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no "listening on" line: ${out}`)), 10000);
      again.stdout.on('data', (d) => { out += d; if (/listening on/.test(out)) { clearTimeout(timer); resolve(); } });
      again.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${out}`)); });
    });
  } finally {
    again.kill('SIGKILL');
  }
});
