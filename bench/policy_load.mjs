#!/usr/bin/env node
// Load measurement of the governed fallback policy's request budgets (issue 4, "Must show"):
//
//   1. deadline run: requests against a group whose upstream answers at random (fast, slow,
//      after the deadline, slow generations streamed or held back, 429 with a Retry-After shorter
//      or longer than the time left, 503, 500, hung requests), every 3rd request streaming,
//      deadline_ms 800: the distribution of (elapsed − deadline), measured by the client (to the
//      last body byte), by the gateway when it wrote the response head
//      (x-litellm-response-duration-ms) and when it finished (spend log request_duration_ms);
//   2. saturation run: half of all upstream answers are 429 (Retry-After 50-1500 ms), max_retries
//      2, max_fallbacks 1, deadline_ms 1500: upstream attempts per request (the mock's count),
//      retries and fallbacks per request (response headers and spend-log decisions), and the same
//      overrun distribution.
//
//   node bench/policy_load.mjs [--build-dir build] [--requests 1000] [--sat-requests 1000]
//                              [--concurrency 30] [--sat-concurrency 40] [--seed N] [--keep-tmp]
//
// Starts `BUILD_DIR/tollgate-mock` and `BUILD_DIR/tollgate serve` on free loopback ports from a
// temp dir (config, data_dir, logs), like bench/run.sh, and stops both on exit. The random upstream
// scripts come from a seeded PRNG; the seed is printed (same seed → same scripts; the interleaving
// of concurrent requests still varies). Prints a markdown section on stdout (progress on stderr);
// exit status 1 when a bound is violated (a request past deadline + deadline_slack_ms as measured
// by the gateway, attempts above (1 + max_retries + max_fallbacks) × requests, retries above
// max_retries × requests), 2 on bad usage or when a process fails. Plain Node ≥ 18, no dependencies.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MASTER_KEY = 'sk-tollgate-bench-policy-master';
const SLACK_MS = 50; // deadline_slack_ms (the default, written into the config below)

// ------------------------------------------------------------------ options
function parseArgs(argv) {
  const o = { buildDir: 'build', requests: 1000, satRequests: 1000, concurrency: 30, satConcurrency: 40,
              seed: Date.now() % 1e9, keepTmp: false };
  for (let i = 2; i < argv.length; i++) {
    let a = argv[i], v;
    const eq = a.indexOf('=');
    if (eq > 0) { v = a.slice(eq + 1); a = a.slice(0, eq); }
    const next = () => (v !== undefined ? v : argv[++i]);
    switch (a) {
      case '--build-dir': o.buildDir = next(); break;
      case '--requests': o.requests = Number(next()); break;
      case '--sat-requests': o.satRequests = Number(next()); break;
      case '--concurrency': o.concurrency = Number(next()); break;
      case '--sat-concurrency': o.satConcurrency = Number(next()); break;
      case '--seed': o.seed = Number(next()); break;
      case '--keep-tmp': o.keepTmp = true; break;
      default:
        console.error(`policy_load.mjs: unknown option ${a}\nusage: node bench/policy_load.mjs [--build-dir build] [--requests 1000] [--sat-requests 1000] [--concurrency 30] [--sat-concurrency 40] [--seed N] [--keep-tmp]`);
        process.exit(2);
    }
  }
  for (const k of ['requests', 'satRequests', 'concurrency', 'satConcurrency', 'seed']) {
    if (!Number.isInteger(o[k]) || o[k] < 1) { console.error(`policy_load.mjs: --${k} must be a positive integer`); process.exit(2); }
  }
  return o;
}
const opt = parseArgs(process.argv);
const BUILD = path.resolve(ROOT, opt.buildDir);
const log = (...a) => console.error('[policy_load]', ...a);

// ------------------------------------------------------------------ processes
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-policy-load-'));
const procs = [];
let failed = false;
function cleanup() {
  for (const p of procs) { try { p.kill('SIGTERM'); } catch { /* gone */ } }
  if (opt.keepTmp || failed) console.error(`[policy_load] temp dir kept: ${TMP}`);
  else fs.rmSync(TMP, { recursive: true, force: true });
}
process.on('exit', cleanup);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { failed = true; process.exit(2); });

/// SIGTERM to every process started here, SIGKILL after 3 s; resolves when all have exited.
async function stopAll() {
  await Promise.all(procs.map((p) => new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    const t = setTimeout(() => { try { p.kill('SIGKILL'); } catch { /* gone */ } }, 3000);
    p.once('exit', () => { clearTimeout(t); resolve(); });
    try { p.kill('SIGTERM'); } catch { resolve(); }
  })));
}

function start(name, bin, args) {
  if (!fs.existsSync(bin)) { console.error(`policy_load.mjs: ${bin} is missing; build it (ninja -C ${opt.buildDir} tollgate tollgate-mock)`); process.exit(2); }
  const errLog = fs.openSync(path.join(TMP, `${name}.log`), 'w');
  const child = spawn(bin, args, { cwd: TMP, stdio: ['ignore', 'pipe', errLog] });
  procs.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 15 s`)), 15000);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1].replace(/\/+$/, '') }); }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (code ${code}, signal ${signal}); see ${path.join(TMP, `${name}.log`)}`));
    });
  });
}

// ------------------------------------------------------------------ HTTP
const agents = new Map();
function agentFor(n) {
  if (!agents.has(n)) agents.set(n, new http.Agent({ keepAlive: true, maxSockets: n }));
  return agents.get(n);
}
function request(base, method, p, { body, headers = {}, agent } = {}) {
  const u = new URL(base + p);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const h = { ...headers };
  if (payload !== undefined) { h['content-type'] = 'application/json'; h['content-length'] = Buffer.byteLength(payload); }
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const req = http.request({ agent, host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers: h }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text, ms: performance.now() - t }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}
const json = (r) => { try { return JSON.parse(r.text); } catch { return null; } };
const admin = async (gw, p) => {
  const r = await request(gw, 'GET', p, { headers: { authorization: `Bearer ${MASTER_KEY}` } });
  if (r.status !== 200) throw new Error(`GET ${p} -> ${r.status}: ${r.text.slice(0, 300)}`);
  return json(r);
};

// ------------------------------------------------------------------ helpers
function seededRandom(seed) { // mulberry32, as tests/e2e/harness.mjs
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function distribution(values) {
  const s = [...values].sort((a, b) => a - b);
  const at = (p) => (s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : NaN);
  return { n: s.length, min: s[0], p50: at(50), p90: at(90), p99: at(99), max: s[s.length - 1] };
}
async function runPool(total, concurrency, fn) {
  const results = new Array(total);
  let next = 0;
  const worker = async () => { while (next < total) { const i = next++; results[i] = await fn(i); } };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return results;
}
const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : '—');
const row = (cells) => `| ${cells.join(' | ')} |`;
const distRow = (label, d) => row([label, d.n, f0(d.p50), f0(d.p90), f0(d.p99), f0(d.max)]);
const tally = (xs) => Object.entries(xs.reduce((a, x) => ({ ...a, [x]: (a[x] ?? 0) + 1 }), {})).map(([k, v]) => `${k}: ${v}`).join(', ');

// YAML: a minimal writer for the config below (maps, lists of maps, flow lists of scalars).
function yaml(v, indent = 0) {
  const pad = ' '.repeat(indent);
  const scalar = (x) => (typeof x === 'string' ? JSON.stringify(x) : String(x));
  const isScalar = (x) => x === null || typeof x !== 'object';
  let out = '';
  if (Array.isArray(v)) {
    for (const item of v) out += isScalar(item) ? `${pad}- ${scalar(item)}\n` : `${pad}- ${yaml(item, indent + 2).slice(indent + 2)}`;
    return out;
  }
  for (const [k, val] of Object.entries(v)) {
    const key = /^[A-Za-z0-9_./-]+$/.test(k) ? k : JSON.stringify(k);
    if (isScalar(val)) out += `${pad}${key}: ${scalar(val)}\n`;
    else if (Array.isArray(val) && val.every(isScalar)) out += `${pad}${key}: ${JSON.stringify(val)}\n`;
    else out += `${pad}${key}:\n${yaml(val, indent + 2)}`;
  }
  return out;
}

// ------------------------------------------------------------------ scenario
const DEADLINE = 800;
const SAT_DEADLINE = 1500;
const MAX_RETRIES = 2;
const MAX_FALLBACKS = 1;

function deployment(mockUrl, group, upstream) {
  return { model_name: group, litellm_params: { model: `openai/${upstream}`, api_base: `${mockUrl}/v1`, api_key: 'sk-mock' },
           model_info: { id: `${group}.${upstream}` } };
}
function config(mockUrl) {
  const budgets = (deadline) => ({ deadline_ms: deadline, max_retries: MAX_RETRIES, max_fallbacks: MAX_FALLBACKS });
  return {
    model_list: [
      deployment(mockUrl, 'dl', 'dl-a'), deployment(mockUrl, 'dl', 'dl-b'), deployment(mockUrl, 'dl-fb', 'dl-fb-up'),
      deployment(mockUrl, 'sat', 'sat-a'), deployment(mockUrl, 'sat', 'sat-b'), deployment(mockUrl, 'sat-fb', 'sat-fb-up'),
    ],
    litellm_settings: { fallbacks: [{ dl: ['dl-fb'] }, { sat: ['sat-fb'] }] },
    // No cooldown, no circuit: every deployment stays in play, the budgets alone bound the walk.
    router_settings: { num_retries: 0, allowed_fails: 1000000, cooldown_time: 1 },
    general_settings: { master_key: MASTER_KEY },
    tollgate_settings: { data_dir: path.join(TMP, 'data') },
    fallback_policy: {
      deadline_slack_ms: SLACK_MS,
      model_groups: { dl: { budgets: budgets(DEADLINE) }, sat: { budgets: budgets(SAT_DEADLINE) } },
    },
  };
}

/// The deadline run's upstream: as tests/e2e/policy_deadline.test.mjs (chaosScript).
function chaosScript(rand, n) {
  const u = (a, b) => Math.round(a + rand() * (b - a));
  return Array.from({ length: n }, () => {
    const x = rand();
    if (x < 0.25) return { latency_ms: u(0, 300) };
    if (x < 0.33) return { latency_ms: u(300, 750) };
    if (x < 0.43) return { latency_ms: u(850, 1300) };
    if (x < 0.51) return { latency_ms: u(0, 200), completion_tokens: 30, tokens_per_second: u(20, 100) };
    if (x < 0.60) return { error: 'rate_limit_exceeded', retry_after: 30 };
    if (x < 0.69) return { error: 'rate_limit_exceeded', retry_after_ms: u(50, 600) };
    if (x < 0.84) return { error: 'overloaded', latency_ms: u(0, 200) };
    if (x < 0.93) return { error: 'server_error', latency_ms: u(0, 100) };
    return { fault: 'hang' };
  });
}
/// The saturation run's upstream: half 429 (Retry-After 50-1500 ms), half success in 20-200 ms.
function half429Script(rand, n) {
  const u = (a, b) => Math.round(a + rand() * (b - a));
  return Array.from({ length: n }, () => (rand() < 0.5
    ? { error: 'rate_limit_exceeded', retry_after_ms: u(50, 1500) }
    : { latency_ms: u(20, 200) }));
}

async function loadRun(gw, model, total, concurrency, streamEvery) {
  const agent = agentFor(concurrency);
  await Promise.all(Array.from({ length: concurrency }, () => request(gw, 'GET', '/health/liveliness', { agent })));
  const t0 = performance.now();
  const res = await runPool(total, concurrency, async (i) => {
    const stream = streamEvery > 0 && i % streamEvery === 0;
    const body = { model, max_tokens: 40, user: `load-${i}`, messages: [{ role: 'user', content: 'Say something short.' }],
                   ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) };
    const r = await request(gw, 'POST', '/v1/chat/completions', { body, agent, headers: { authorization: `Bearer ${MASTER_KEY}` } });
    return { status: r.status, ms: r.ms, stream, head: Number(r.headers['x-litellm-response-duration-ms']),
             retries: Number(r.headers['x-litellm-attempted-retries']), fallbacks: Number(r.headers['x-litellm-attempted-fallbacks']),
             id: r.headers['x-litellm-call-id'] };
  });
  const wall = performance.now() - t0;
  // Spend-log rows are written by the store's writer just after each response: poll.
  const ids = new Set(res.map((r) => r.id));
  let rows = [];
  for (let tries = 0; tries < 200; tries++) {
    rows = (await admin(gw, `/spend/logs?limit=${total + 1000}`)).filter((r) => ids.has(r.request_id));
    if (rows.length === ids.size) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (rows.length !== ids.size) throw new Error(`only ${rows.length} of ${ids.size} spend-log rows were written`);
  const byId = new Map(rows.map((r) => [r.request_id, r]));
  for (const r of res) r.row = byId.get(r.id);
  return { res, wall };
}

// ------------------------------------------------------------------ main
const loadStart = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const mock = await start('tollgate-mock', path.join(BUILD, 'tollgate-mock'), ['--host', '127.0.0.1', '--port', '0', '--threads', '2']);
fs.writeFileSync(path.join(TMP, 'config.yaml'), yaml(config(mock.url)));
const tg = await start('tollgate', path.join(BUILD, 'tollgate'),
  ['serve', '--config', path.join(TMP, 'config.yaml'), '--host', '127.0.0.1', '--port', '0']);
const GW = tg.url;
log(`mock ${mock.url}, tollgate ${GW}, seed ${opt.seed}, temp ${TMP}`);

const rand = seededRandom(opt.seed);
const script = async (model, behaviors) => {
  const r = await request(mock.url, 'POST', '/mock/script', { body: { model, behaviors } });
  if (r.status !== 200) throw new Error(`mock script ${model}: ${r.status} ${r.text.slice(0, 300)}`);
};
const per = (1 + MAX_RETRIES + MAX_FALLBACKS);
for (const m of ['dl-a', 'dl-b', 'dl-fb-up']) await script(m, chaosScript(rand, per * opt.requests));
for (const m of ['sat-a', 'sat-b', 'sat-fb-up']) await script(m, half429Script(rand, per * opt.satRequests));

const violations = [];
const out = [];
const commit = (() => {
  try {
    const c = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    let dirty = '';
    try { execFileSync('git', ['-C', ROOT, 'diff', '--quiet', 'HEAD', '--', 'src'], { stdio: 'ignore' }); } catch { dirty = ' + uncommitted changes in src/'; }
    return c + dirty;
  } catch { return 'unknown'; }
})();
const built = fs.statSync(path.join(BUILD, 'tollgate')).mtime.toISOString().slice(0, 16).replace('T', ' ') + 'Z';
const buildType = (() => {
  try { return (fs.readFileSync(path.join(BUILD, 'CMakeCache.txt'), 'utf8').match(/^CMAKE_BUILD_TYPE:\w+=(.*)$/m) ?? [])[1] || 'unknown'; } catch { return 'unknown'; }
})();

// 1. deadline run
log(`deadline run: ${opt.requests} requests, concurrency ${opt.concurrency}, deadline ${DEADLINE} ms`);
const d = await loadRun(GW, 'dl', opt.requests, opt.concurrency, 3);
const overClient = distribution(d.res.map((r) => r.ms - DEADLINE));
const overHead = distribution(d.res.map((r) => r.head - DEADLINE));
const overLog = distribution(d.res.map((r) => r.row.request_duration_ms - DEADLINE));
const clientExtra = distribution(d.res.map((r) => r.ms - r.row.request_duration_ms));
const ranToDeadline = d.res.filter((r) => r.row.request_duration_ms >= DEADLINE - 10).length;
const dlPast = d.res.filter((r) => r.row.request_duration_ms > DEADLINE + SLACK_MS || r.head > DEADLINE + SLACK_MS);
if (dlPast.length) violations.push(`deadline run: ${dlPast.length} request(s) past deadline + slack (gateway-measured): ${dlPast.slice(0, 5).map((r) => `${r.id} ${r.row.request_duration_ms} ms`).join(', ')}`);
const metrics = (await request(GW, 'GET', '/metrics')).text;
const overrunMetric = metrics.split('\n').filter((l) => l.startsWith('tollgate_deadline_overruns_total{') && l.includes('model_group="dl"'))
  .reduce((a, l) => a + Number(l.trim().split(/\s+/).pop()), 0);

// 2. saturation run
log(`saturation run: ${opt.satRequests} requests, concurrency ${opt.satConcurrency}, deadline ${SAT_DEADLINE} ms`);
const statsBefore = json(await request(mock.url, 'GET', '/mock/stats'));
const s = await loadRun(GW, 'sat', opt.satRequests, opt.satConcurrency, 0);
const statsAfter = json(await request(mock.url, 'GET', '/mock/stats'));
const delta = (m, k) => (statsAfter.models?.[m]?.[k] ?? 0) - (statsBefore.models?.[m]?.[k] ?? 0);
const satModels = ['sat-a', 'sat-b', 'sat-fb-up'];
const attempts = satModels.reduce((a, m) => a + delta(m, 'requests'), 0);
const answered429 = satModels.reduce((a, m) => a + delta(m, 'failed'), 0);
const retries = s.res.reduce((a, r) => a + r.retries, 0);
const fallbacks = s.res.reduce((a, r) => a + r.fallbacks, 0);
const loggedAttempts = s.res.reduce((a, r) => a + (typeof r.row.attempts === 'string' ? JSON.parse(r.row.attempts) : r.row.attempts ?? []).length, 0);
const loggedRetries = s.res.reduce((a, r) => a + (r.row.decision?.consumed?.retries ?? 0), 0);
const N = opt.satRequests;
if (attempts > per * N) violations.push(`saturation: ${attempts} upstream attempts > ${per} × ${N}`);
if (retries > MAX_RETRIES * N) violations.push(`saturation: ${retries} retries > ${MAX_RETRIES} × ${N}`);
const perReqOver = s.res.filter((r) => r.retries > MAX_RETRIES || r.fallbacks > MAX_FALLBACKS);
if (perReqOver.length) violations.push(`saturation: ${perReqOver.length} request(s) over their per-request retry/fallback budget`);
const satPast = s.res.filter((r) => r.row.request_duration_ms > SAT_DEADLINE + SLACK_MS);
if (satPast.length) violations.push(`saturation: ${satPast.length} request(s) past deadline + slack (gateway-measured)`);
const satOverClient = distribution(s.res.map((r) => r.ms - SAT_DEADLINE));
const satOverLog = distribution(s.res.map((r) => r.row.request_duration_ms - SAT_DEADLINE));
const perAttempts = s.res.map((r) => (typeof r.row.attempts === 'string' ? JSON.parse(r.row.attempts) : r.row.attempts ?? []).length);
const loadEnd = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

for (const p of [mock.child, tg.child]) {
  if (p.exitCode !== null || p.signalCode !== null) { failed = true; console.error('policy_load.mjs: a process died during the run'); process.exit(2); }
}

// ------------------------------------------------------------------ report
const now = new Date();
// "## Run DATE" like bench/report.mjs's sections, so that a same-date re-run of bench/run.sh
// --write-results (which replaces its section up to the next "## Run" heading) leaves this one alone.
out.push(`## Run ${now.toISOString().slice(0, 10)} (${now.toISOString().slice(11, 16)}Z) — request budgets under load (bench/policy_load.mjs)`);
out.push('');
out.push(`Command: \`node bench/policy_load.mjs ${process.argv.slice(2).join(' ')}\`. Machine: ${os.cpus().length} × ${os.cpus()[0]?.model?.trim() ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.type()} ${os.release()}; ` +
  `1-minute load average ${loadStart} at start, ${loadEnd} at end. Node ${process.version}. Tollgate ${commit}, built ${built} (${buildType}), ` +
  `mock with 2 threads. Seed ${opt.seed}. Client: node:http, keep-alive, connections opened before each run.`);
out.push('');
out.push(`### Deadline: ${opt.requests} requests at concurrency ${opt.concurrency}, deadline_ms ${DEADLINE}, deadline_slack_ms ${SLACK_MS}`);
out.push('');
out.push(`Group \`dl\` (2 deployments, fallback \`dl-fb\`), max_retries ${MAX_RETRIES}, max_fallbacks ${MAX_FALLBACKS}; every upstream answer drawn at random: ` +
  `25% success in 0-300 ms, 8% in 300-750 ms, 10% headers after 850-1300 ms, 8% a 30-token generation at 20-100 tokens/s, ` +
  `9% 429 Retry-After 30 s, 9% 429 Retry-After 50-600 ms, 15% 503, 8% 500, 7% hung; every 3rd request streams. ` +
  `${(d.wall / 1000).toFixed(1)} s; statuses ${tally(d.res.map((r) => r.status))}; ${ranToDeadline} requests ran to their deadline (finished within 10 ms of it or later).`);
out.push('');
out.push('elapsed − deadline, ms (negative = ended before the deadline):');
out.push('');
out.push(row(['measured by', 'n', 'p50', 'p90', 'p99', 'max']));
out.push(row(['---', '---:', '---:', '---:', '---:', '---:']));
out.push(distRow('gateway, response head written (`x-litellm-response-duration-ms`)', overHead));
out.push(distRow('gateway, request finished (spend log `request_duration_ms`)', overLog));
out.push(distRow('client, last body byte', overClient));
out.push(distRow('client − gateway finished (client-side overhead, ms)', clientExtra));
out.push('');
out.push(`Past deadline + slack (${DEADLINE + SLACK_MS} ms), gateway-measured: ${dlPast.length}; \`tollgate_deadline_overruns_total{model_group="dl"}\`: ${overrunMetric}. ` +
  `Client-measured past ${DEADLINE + SLACK_MS} ms: ${d.res.filter((r) => r.ms > DEADLINE + SLACK_MS).length}.`);
out.push('');
out.push(`### Provider saturation: ${N} requests at concurrency ${opt.satConcurrency}, half of all upstream answers 429`);
out.push('');
out.push(`Group \`sat\` (2 deployments, fallback \`sat-fb\`), max_retries ${MAX_RETRIES}, max_fallbacks ${MAX_FALLBACKS}, deadline_ms ${SAT_DEADLINE}; ` +
  `each upstream answer is a 429 with Retry-After 50-1500 ms (p = 0.5) or a success in 20-200 ms. ${(s.wall / 1000).toFixed(1)} s; statuses ${tally(s.res.map((r) => r.status))}.`);
out.push('');
out.push(row(['figure', 'measured', 'bound', 'per request']));
out.push(row(['---', '---:', '---:', '---:']));
out.push(row(['upstream attempts (mock count)', attempts, `${per} × ${N} = ${per * N}`, (attempts / N).toFixed(2)]));
out.push(row(['share of upstream answers that were 429', (answered429 / attempts).toFixed(3), '—', '—']));
out.push(row(['retries (`x-litellm-attempted-retries`)', retries, `${MAX_RETRIES} × ${N} = ${MAX_RETRIES * N}`, (retries / N).toFixed(2)]));
out.push(row(['fallbacks (`x-litellm-attempted-fallbacks`)', fallbacks, `${MAX_FALLBACKS} × ${N} = ${MAX_FALLBACKS * N}`, (fallbacks / N).toFixed(2)]));
out.push(row(['attempts in the spend logs / retries in the decisions', `${loggedAttempts} / ${loggedRetries}`, '= mock count / = header sum', '—']));
out.push(row(['requests served (200)', s.res.filter((r) => r.status === 200).length, '—', '—']));
out.push('');
out.push(`Attempts per request: ${tally(perAttempts.map((n) => `${n}`))}. elapsed − deadline (ms), spend log: p50 ${f0(satOverLog.p50)}, p90 ${f0(satOverLog.p90)}, p99 ${f0(satOverLog.p99)}, max ${f0(satOverLog.max)}; ` +
  `client: p50 ${f0(satOverClient.p50)}, p90 ${f0(satOverClient.p90)}, p99 ${f0(satOverClient.p99)}, max ${f0(satOverClient.max)}. Past deadline + slack (gateway-measured): ${satPast.length}.`);
out.push('');
out.push(violations.length ? `**Bounds violated:**\n\n${violations.map((v) => `- ${v}`).join('\n')}` : 'All bounds held: no request past deadline + slack (gateway-measured), attempts ≤ (1 + max_retries + max_fallbacks) × requests, retries ≤ max_retries × requests.');
console.log(out.join('\n'));
for (const a of agents.values()) a.destroy();
if (violations.length) failed = true;
await stopAll();
process.exit(violations.length ? 1 : 0);
