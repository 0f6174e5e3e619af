// Shared harness for the e2e suite: starts the real binaries (build/tollgate and
// build/tollgate-mock) on port 0, writes per-test LiteLLM configs, and hands out the
// official SDK clients. Every process started here is killed when its test (or file)
// ends, even on failure, and its stderr is attached to the failing test's output.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, before, after, beforeEach } from 'node:test';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

export const MASTER_KEY = 'sk-tollgate-e2e-master-key';
export const UPSTREAM_KEY = 'sk-mock-upstream-key';

const TOLLGATE_BIN = path.resolve(process.env.TOLLGATE_BIN ?? 'build/tollgate');
const MOCK_BIN = path.resolve(process.env.TOLLGATE_MOCK_BIN ?? 'build/tollgate-mock');
const READY_TIMEOUT_MS = 15000;
const LOG_CAP = 256 * 1024;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// Polls `fn` (sync or async) until it returns a truthy value; returns that value.
/// Throws with `what` and the last value seen when `timeoutMs` passes.
export async function waitFor(fn, { timeoutMs = 5000, intervalMs = 25, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
    }
    await sleep(intervalMs);
  }
}

// ---------------------------------------------------------------------------------
// Processes

const live = new Set();
process.on('exit', () => {
  for (const p of live) {
    try { p.child.kill('SIGKILL'); } catch { /* already gone */ }
  }
});

class Proc {
  constructor(name, child) {
    this.name = name;
    this.child = child;
    this.stdout = '';
    this.stderr = '';
    this.exit = null; // {code, signal} once exited
    this.stopping = false;
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.exit = { code, signal };
        live.delete(this);
        resolve(this.exit);
      });
    });
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => { this.stdout = (this.stdout + d).slice(-LOG_CAP); });
    child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-LOG_CAP); });
    live.add(this);
  }

  /// Spawns `bin args` and resolves with the URL from its `listening on http://...` line.
  static async start(name, bin, args, { cwd, env } = {}) {
    if (!existsSync(bin)) throw new Error(`${name}: binary not found: ${bin}`);
    const child = spawn(bin, args, { cwd, env: env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const proc = new Proc(name, child);
    proc.url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`${name} did not print "listening on" within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      const onData = () => {
        const m = proc.stdout.match(/listening on (http:\/\/[^\s]+)/);
        if (m) done(null, m[1].replace(/\/+$/, ''));
      };
      const onExit = (code, signal) => done(new Error(`${name} exited before it was ready (code ${code}, signal ${signal})`));
      const onError = (e) => done(e);
      function done(err, url) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.off('exit', onExit);
        child.off('error', onError);
        if (err) {
          try { child.kill('SIGKILL'); } catch { /* gone */ }
          err.message += `\n--- ${name} stderr ---\n${proc.stderr.slice(-8000)}`;
          reject(err);
        } else resolve(url);
      }
      child.stdout.on('data', onData);
      child.on('exit', onExit);
      child.on('error', onError);
    });
    return proc;
  }

  get alive() { return this.exit === null; }

  /// True when the process died on its own (crash or exit) rather than by our stop().
  get crashed() { return this.exit !== null && !this.stopping; }

  logs(maxChars = 12000) {
    const status = this.exit ? ` (exited: code ${this.exit.code}, signal ${this.exit.signal})` : '';
    return `--- ${this.name}${status} stderr (last ${maxChars} chars) ---\n${this.stderr.slice(-maxChars)}`;
  }

  kill() {
    if (!this.alive) return;
    this.stopping = true;
    try { this.child.kill('SIGKILL'); } catch { /* gone */ }
  }

  async stop() {
    if (!this.alive) return this.exit;
    this.stopping = true;
    try { this.child.kill('SIGTERM'); } catch { /* gone */ }
    const t = setTimeout(() => { try { this.child.kill('SIGKILL'); } catch { /* gone */ } }, 3000);
    const r = await this.exited;
    clearTimeout(t);
    return r;
  }
}

// ---------------------------------------------------------------------------------
// The upstream simulator

export class Mock {
  static async start() {
    const m = new Mock();
    m.proc = await Proc.start('tollgate-mock', MOCK_BIN, ['--host', '127.0.0.1', '--port', '0']);
    m.url = m.proc.url;
    return m;
  }

  async #call(method, p, body) {
    const res = await fetch(this.url + p, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`mock ${method} ${p} -> ${res.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  }

  reset() { return this.#call('POST', '/mock/reset', {}); }
  /// Queues behaviours for an upstream model: one per request, the last repeats.
  script(model, behaviors) { return this.#call('POST', '/mock/script', { model, behaviors }); }
  stats() { return this.#call('GET', '/mock/stats'); }

  /// Counters for one upstream model (zeros when the mock never saw it).
  async model(name) {
    const s = await this.stats();
    return {
      requests: 0, succeeded: 0, failed: 0, streams: 0, cancelled: 0,
      prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0,
      ...(s.models?.[name] ?? {}),
    };
  }

  /// The last 200 model requests the mock received (GET /mock/requests), oldest first:
  /// [{path, model, body}], `body` the JSON as received.
  async received() {
    const res = await fetch(this.url + '/mock/requests');
    return (await res.json()).requests;
  }

  /// Request counts for several models at once: {name: requests}.
  async requests(...names) {
    const s = await this.stats();
    return Object.fromEntries(names.map((n) => [n, s.models?.[n]?.requests ?? 0]));
  }

  /// Sends a request straight to the mock (bypassing the gateway), e.g. to learn the exact
  /// error body the provider would send for a behaviour.
  async direct(p, body, behavior) {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${UPSTREAM_KEY}` };
    if (behavior) headers['x-mock-behavior'] = JSON.stringify(behavior);
    const res = await fetch(this.url + p, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, headers: res.headers, text, json };
  }

  stop() { return this.proc.stop(); }
}

// ---------------------------------------------------------------------------------
// Config: LiteLLM proxy YAML

const isScalar = (v) => v === null || typeof v !== 'object';
const yamlScalar = (v) => (v === null ? 'null' : typeof v === 'string' ? JSON.stringify(v) : String(v));
const yamlKey = (k) => (/^[A-Za-z0-9_./-]+$/.test(k) ? k : JSON.stringify(k));

/// A small YAML writer: block mappings and sequences, flow style for lists of scalars
/// (the way LiteLLM's docs write `fallbacks: [{"a": ["b"]}]` entries).
export function toYaml(v, indent = 0) {
  const pad = ' '.repeat(indent);
  let out = '';
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isScalar(item)) out += `${pad}- ${yamlScalar(item)}\n`;
      else out += `${pad}- ${toYaml(item, indent + 2).slice(indent + 2)}`;
    }
    return out;
  }
  for (const [k, val] of Object.entries(v)) {
    if (val === undefined) continue;
    if (isScalar(val)) out += `${pad}${yamlKey(k)}: ${yamlScalar(val)}\n`;
    else if (Array.isArray(val) && val.every(isScalar)) out += `${pad}${yamlKey(k)}: ${JSON.stringify(val)}\n`;
    else if (!Array.isArray(val) && Object.keys(val).length === 0) out += `${pad}${yamlKey(k)}: {}\n`;
    else if (Array.isArray(val) && val.length === 0) out += `${pad}${yamlKey(k)}: []\n`;
    else out += `${pad}${yamlKey(k)}:\n${toYaml(val, indent + 2)}`;
  }
  return out;
}

/// A `model_list` entry for an OpenAI-compatible deployment on the mock.
export function openaiDeployment(mock, group, upstreamModel, { id, ...params } = {}) {
  return {
    model_name: group,
    litellm_params: { model: `openai/${upstreamModel}`, api_base: `${mock.url}/v1`, api_key: UPSTREAM_KEY, ...params },
    model_info: { id: id ?? `${group}.${upstreamModel}` },
  };
}

/// A `model_list` entry for an Anthropic deployment on the mock.
export function anthropicDeployment(mock, group, upstreamModel, { id, ...params } = {}) {
  return {
    model_name: group,
    litellm_params: { model: `anthropic/${upstreamModel}`, api_base: mock.url, api_key: UPSTREAM_KEY, ...params },
    model_info: { id: id ?? `${group}.${upstreamModel}` },
  };
}

/// A full config. Defaults keep mock counters exact: no retries unless a test asks,
/// and no cooldown surprises (allowed_fails high) unless a test asks.
export function gatewayConfig({ model_list, litellm_settings, router_settings, general_settings, tollgate_settings, fallback_policy } = {}) {
  return {
    model_list,
    litellm_settings: litellm_settings ?? undefined,
    router_settings: { num_retries: 0, allowed_fails: 100, cooldown_time: 1, ...(router_settings ?? {}) },
    general_settings: { master_key: MASTER_KEY, ...(general_settings ?? {}) },
    tollgate_settings: tollgate_settings ?? undefined,
    fallback_policy: fallback_policy ?? undefined,
  };
}

// ---------------------------------------------------------------------------------
// The gateway

export class Gateway {
  /// Starts `tollgate serve` on a config (an object written as YAML, or YAML text), on `port`
  /// (0 = any free port); `env` replaces the process environment (e.g. to preload libfaketime).
  static async start(config, { port = 0, env } = {}) {
    const g = new Gateway();
    g.dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-e2e-'));
    let cfg = config;
    if (typeof cfg !== 'string') {
      cfg = structuredClone(cfg);
      cfg.tollgate_settings = { data_dir: path.join(g.dir, 'data'), ...(cfg.tollgate_settings ?? {}) };
      cfg = toYaml(cfg);
    }
    g.configText = cfg;
    g.configPath = path.join(g.dir, 'config.yaml');
    writeFileSync(g.configPath, cfg);
    try {
      g.proc = await Proc.start('tollgate', TOLLGATE_BIN,
        ['serve', '--config', g.configPath, '--host', '127.0.0.1', '--port', String(port)], { cwd: g.dir, env });
    } catch (e) {
      e.message += `\n--- config ---\n${cfg}`;
      rmSync(g.dir, { recursive: true, force: true });
      throw e;
    }
    g.url = g.proc.url;
    return g;
  }

  openai(opts = {}) {
    return new OpenAI({ baseURL: `${this.url}/v1`, apiKey: MASTER_KEY, maxRetries: 0, timeout: 20000, ...opts });
  }

  anthropic(opts = {}) {
    return new Anthropic({ baseURL: this.url, apiKey: MASTER_KEY, maxRetries: 0, timeout: 20000, ...opts });
  }

  /// Plain fetch against the gateway. `body` objects are sent as JSON; strings as is.
  /// `auth: false` sends no key; `auth: 'x'` sends Bearer x.
  async fetch(p, { method = 'POST', body, headers = {}, auth = true, signal } = {}) {
    const h = { ...headers };
    if (auth === true) h.authorization = `Bearer ${MASTER_KEY}`;
    else if (typeof auth === 'string') h.authorization = `Bearer ${auth}`;
    let payload = body;
    if (body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      payload = JSON.stringify(body);
    }
    if (payload !== undefined && !Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) {
      h['content-type'] = 'application/json';
    }
    const res = await fetch(this.url + p, { method, headers: h, body: payload, signal });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, headers: res.headers, text, json };
  }

  /// An admin API call with the master key (POST with a JSON body, or GET with `body`
  /// undefined); throws with the response on any non-2xx status. Returns the JSON body.
  async admin(p, body) {
    const r = await this.fetch(p, body === undefined ? { method: 'GET' } : { body });
    if (r.status < 200 || r.status >= 300) throw new Error(`admin ${p} -> ${r.status}: ${r.text}`);
    return r.json;
  }

  /// `/key/generate` with `fields`; returns the response (`.key` is the secret, `.token` its hash).
  generateKey(fields = {}) { return this.admin('/key/generate', fields); }

  /// `/key/info` for a key (secret or hash): the `info` object.
  async keyInfo(key) {
    return (await this.admin(`/key/info?key=${encodeURIComponent(key)}`)).info;
  }

  get alive() { return this.proc.alive; }
  get crashed() { return this.proc.crashed; }
  logs() { return `${this.proc.logs()}\n--- config ---\n${this.configText}`; }
  kill() { this.proc.kill(); }

  async stop() {
    const r = await this.proc.stop();
    rmSync(this.dir, { recursive: true, force: true });
    return r;
  }
}

// ---------------------------------------------------------------------------------
// Test wiring

const fileProcs = [];

/// Per-file setup: one mock for the file, reset before every test; every process
/// still alive at the end of the file is killed.
export function useMock() {
  const state = { mock: null };
  let started;
  // Other before() hooks of the file may await state.ready (hook order is not relied on).
  state.ready = new Promise((resolve, reject) => { started = { resolve, reject }; });
  state.ready.catch(() => {});
  before(async () => {
    try {
      state.mock = await Mock.start();
      fileProcs.push(state.mock.proc);
      started.resolve(state.mock);
    } catch (e) {
      started.reject(e);
      throw e;
    }
  });
  beforeEach(async () => {
    await state.mock.reset();
  });
  after(async () => {
    await state.mock?.stop();
    for (const p of [...live]) await p.stop();
  });
  return state;
}

/// Registers a process (e.g. a gateway shared by a whole file) whose logs are
/// attached to any failing test of the file.
export function shareLogs(x) {
  fileProcs.push(x);
}

function attachLogs(err, procs) {
  const logs = procs.map((p) => p.logs()).join('\n');
  if (err && typeof err === 'object') {
    try {
      err.message = `${err.message}\n${logs}`;
      if (typeof err.stack === 'string' && !err.stack.includes(logs)) err.stack = `${err.stack}\n${logs}`;
    } catch { /* read-only */ }
  }
  return err;
}

/// An e2e test: `fn(ctx)` gets `ctx.gateway(config)` to start gateways owned by this
/// test; they are stopped when the test ends, and on failure their logs (and the shared
/// processes' logs) are attached to the error.
/// `todo: 'reason'` marks behaviour beyond the requirements: reported, never failing the run.
/// `skip: 'reason'` marks a requirement the gateway does not implement yet (not run).
export function e2e(name, fn, { timeout = 30000, todo, skip } = {}) {
  return test(name, { timeout, todo, skip }, async (t) => {
    const owned = [];
    const ctx = {
      t,
      async gateway(config) {
        const g = await Gateway.start(config);
        owned.push(g);
        return g;
      },
    };
    const onAbort = () => {
      console.error(owned.map((g) => g.logs()).join('\n'));
      for (const g of owned) g.kill();
    };
    t.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await fn(ctx);
      for (const g of owned) {
        if (g.crashed) throw new Error(`the gateway died during the test (${JSON.stringify(g.proc.exit)})`);
      }
    } catch (err) {
      throw attachLogs(err, [...owned, ...fileProcs]);
    } finally {
      t.signal?.removeEventListener('abort', onAbort);
      await Promise.all(owned.map((g) => g.stop()));
    }
  });
}

/// Runs `promise` and returns the SDK/HTTP error it rejects with; fails if it resolves.
export async function rejectsWith(promise) {
  try {
    const v = await promise;
    throw Object.assign(new Error(`expected a rejection, got ${JSON.stringify(v)?.slice(0, 500)}`), { notRejected: true });
  } catch (e) {
    if (e?.notRejected) throw e;
    return e;
  }
}

export const chatBody = (model, extra = {}) => ({
  model,
  messages: [{ role: 'user', content: 'Say something short.' }],
  ...extra,
});

// ---------------------------------------------------------------------------------
// Operator endpoints: metrics, circuits, alerts, spend-log rows

/// `GET /metrics` (no auth): the Prometheus text.
export async function metricsText(gw) {
  const r = await gw.fetch('/metrics', { method: 'GET', auth: false });
  if (r.status !== 200) throw new Error(`GET /metrics -> ${r.status}: ${r.text}`);
  return r.text;
}

const parseLabels = (s) => {
  const out = {};
  for (const m of (s ?? '').matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
    out[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
  }
  return out;
};

/// The value of the sample `name` whose labels include every label in `labels`, summed over
/// all such samples; `undefined` when there is none.
export function metricValue(text, name, labels = {}) {
  let sum;
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!m || m[1] !== name) continue;
    const l = parseLabels(m[2]);
    if (!Object.entries(labels).every(([k, v]) => l[k] === String(v))) continue;
    sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

/// `GET /tollgate/circuits` (master key).
export const circuitsOf = (gw) => gw.admin('/tollgate/circuits');

/// One circuit from `GET /tollgate/circuits`: scope 'deployments' | 'providers' | 'features'.
export async function circuitOf(gw, scope, id) {
  const c = await circuitsOf(gw);
  return (c[scope] ?? []).find((x) => x.id === id);
}

/// `GET /tollgate/alerts` (master key).
export const alertsOf = (gw) => gw.admin('/tollgate/alerts');

/// The spend-log row of a request, by its `x-litellm-call-id` (a Headers object, a response
/// with `.headers`, or the id itself); polls, since rows are written just after the response.
export async function spendLogOf(gw, from, { timeoutMs = 3000 } = {}) {
  const headers = from?.headers ?? from;
  const id = typeof from === 'string' ? from : headers?.get?.('x-litellm-call-id');
  if (!id) throw new Error('no x-litellm-call-id to look the spend log row up by');
  return waitFor(async () => {
    const rows = await gw.admin(`/spend/logs?request_id=${encodeURIComponent(id)}`);
    return rows?.length ? rows[0] : null;
  }, { timeoutMs, what: `the spend log row of ${id}` });
}

// ---------------------------------------------------------------------------------
// Load runs and distributions (policy_deadline.test.mjs, bench/policy_load.mjs)

/// A small seeded PRNG (mulberry32): the same seed gives the same sequence, so a random
/// upstream script can be replayed from the seed printed by a failing run.
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/// Runs `fn(i)` for i in [0, total) with at most `concurrency` calls in flight; returns the
/// results in index order.
export async function runPool(total, concurrency, fn) {
  const results = new Array(total);
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      results[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return results;
}

/// Nearest-rank percentiles of a list of numbers: {n, min, p50, p90, p99, max}.
export function distribution(values) {
  const s = [...values].sort((a, b) => a - b);
  const at = (p) => (s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : NaN);
  return { n: s.length, min: s[0], p50: at(50), p90: at(90), p99: at(99), max: s[s.length - 1] };
}

/// The `data:` payloads of an OpenAI event stream body: parsed JSON objects, and the string
/// '[DONE]' for the terminator.
export function sseData(text) {
  const out = [];
  for (const line of text.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const payload = line.slice(5).trim();
    out.push(payload === '[DONE]' ? payload : JSON.parse(payload));
  }
  return out;
}
