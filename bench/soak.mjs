#!/usr/bin/env node
// Chaos soak (issue 14, item 6): mixed traffic (chat streaming and not, Anthropic Messages,
// embeddings, fallbacks, budgets near their caps, admin writes) against tollgate-mock injecting
// every fault of its catalogue, with the gateway SIGKILLed and restarted on a schedule, the
// store's disk (a small tmpfs) filled once and the gateway's wall clock stepped once
// (libfaketime). Afterwards the checks of the issue, each printed with its figures:
//   1. money: every reservation settled exactly once; charged == Σ actual + Σ unknown/recovered
//      reservations; bill ≤ charged ≤ bill + Σ unknown/recovered; per upstream model, and per
//      served response matched to its line of the simulator's bill;
//   2. no cap exceeded (keys, key windows, teams, end users, global), from the ledger;
//   3. RSS and descriptors of the last incarnation after the load ≤ 110 % of after warm-up;
//   4. no crash: every gateway exit was ours, the simulator never died, no unexplained
//      ERROR/sanitizer/abort line in the logs.
//
//   node bench/soak.mjs [--minutes N] [--tmpfs-dir DIR] [--tmpfs-size 64m] [--workers 12]
//                       [--think-ms 150,500] [--seed S] [--json FILE] [--write-results] [--keep]
//
// Root is needed to mount the tmpfs (bench/soak.sh mounts it and passes --tmpfs-dir; without
// --tmpfs-dir the driver mounts one itself). Every request goes to 127.0.0.1 and every loop is
// bounded in time (the run's end) and count. Exit status: 0 when every check passed.
// tests/e2e/soak.test.mjs runs runSoak() for about 80 s (one kill, one fill, one step).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Mock, Gateway, gatewayConfig, openaiDeployment, anthropicDeployment, MASTER_KEY, seededRandom, sleep, waitFor } from '../tests/e2e/harness.mjs';
import { picos, dollars } from '../tests/e2e/budget_helpers.mjs';

const FAKETIME_LIB = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1', '/usr/lib/faketime/libfaketimeMT.so.1']
  .find((p) => fs.existsSync(p));

// ---------------------------------------------------------------------------------
// Models, prices and the simulator's fault catalogue

/// Dollars per token; every price is a whole number of nano-dollars per token, so a bill is
/// exact whether it is summed per request or per model (no rounding anywhere).
const PRICES = {
  'up-chat-a': { input: '0.000001', output: '0.000002' },
  'up-chat-b': { input: '0.000001', output: '0.000002' },
  'up-long': { input: '0.000002', output: '0.000004' },
  'up-claude': { input: '0.000003', output: '0.000015' },
  'up-claude-fb': { input: '0.000003', output: '0.000015' },
  'up-embed': { input: '0.0000001', output: '0' },
  'up-probe': { input: '0.000001', output: '0.000002' }, // never scripted: the recovery probe's
};
/// The upstream models whose behaviour the soak scripts.
const SCRIPTED = Object.keys(PRICES).filter((m) => m !== 'up-probe');
const priced = (p) => ({ input_cost_per_token: p.input, output_cost_per_token: p.output });

function deployments(mock) {
  const embed = openaiDeployment(mock, 'soak-embed', 'up-embed', priced(PRICES['up-embed']));
  embed.model_info.mode = 'embedding';
  return [
    openaiDeployment(mock, 'soak-chat', 'up-chat-a', priced(PRICES['up-chat-a'])),
    openaiDeployment(mock, 'soak-chat', 'up-chat-b', priced(PRICES['up-chat-b'])),
    openaiDeployment(mock, 'soak-long', 'up-long', priced(PRICES['up-long'])),
    anthropicDeployment(mock, 'soak-claude', 'up-claude', priced(PRICES['up-claude'])),
    anthropicDeployment(mock, 'soak-fb', 'up-claude-fb', priced(PRICES['up-claude-fb'])),
    embed,
    openaiDeployment(mock, 'soak-probe', 'up-probe', priced(PRICES['up-probe'])),
  ];
}

/// Deployment id (the ledger's `model` column) → upstream model (the bill's `model`).
const upstreamOf = (deploymentId) => deploymentId.slice(deploymentId.indexOf('.') + 1);

/// Every fault and named error of tools/mock/README.md, except those that would stop the run
/// by design rather than exercise it: insufficient_quota / invalid_api_key / permission /
/// not_found (commercial and configuration errors: stop_and_alert, circuits kept open) and the
/// caller-error statuses (400/413 from the mock's request validation).
const FAULTS = [
  { fault: 'reset' }, { fault: 'empty' }, { fault: 'hang' }, { fault: 'truncate' }, { fault: 'garbage' },
  { fault: 'no_done' }, { fault: 'truncate_before_usage' }, { fault: 'malformed_event' }, { fault: 'stall' },
  { fault: 'conflicting_framing' }, { fault: 'extra_bytes' },
  { error: 'rate_limit_exceeded', retry_after: 1 }, { error: 'overloaded' }, { error: 'server_error' },
  { error: 'context_length_exceeded' }, { error: 'content_filter' },
  { error: 'overloaded_529' }, { error: 'timeout' }, { error: 'bad_gateway_html' },
];
const faultName = (b) => b.fault ?? b.error;

// ---------------------------------------------------------------------------------
// Small utilities

const now = () => Date.now();
const sec = (ms) => `${(ms / 1000).toFixed(1)} s`;
const mb = (kb) => `${(kb / 1024).toFixed(1)} MB`;
const usd = (n) => `$${dollars(n) || '0'}`;
const inc = (o, k, by = 1) => { o[k] = (o[k] ?? 0) + by; };

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

function sh(cmd, args, { allowFail = false } = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 2 ** 31 - 1 });
  if (!allowFail && r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr || r.error}`);
  return r;
}

function isMountpoint(dir) {
  return sh('mountpoint', ['-q', dir], { allowFail: true }).status === 0;
}

/// Mounts a tmpfs of `size` on `dir` (created); throws a clear error when that is impossible.
function mountTmpfs(dir, size) {
  fs.mkdirSync(dir, { recursive: true });
  const r = sh('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { allowFail: true });
  if (r.status !== 0) {
    throw new Error(`soak: cannot mount a tmpfs on ${dir} (needs root and a kernel that allows it): ${(r.stderr || '').trim()}`);
  }
}

function diskFree(dir) {
  const s = fs.statfsSync(dir);
  return { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
}

/// Fills the file system of `dir` to 100 % (a file of every free byte); returns its path.
function fillDisk(dir) {
  const file = path.join(dir, 'soak-filler');
  const { free } = diskFree(dir);
  sh('fallocate', ['-l', String(free), file], { allowFail: true });
  // Top up byte-exact with writes until ENOSPC (the gateway may have taken a page meanwhile).
  const fd = fs.openSync(file, 'a');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (let i = 0; i < 100000; i++) fs.writeSync(fd, chunk);
  } catch (e) {
    if (e.code !== 'ENOSPC') throw e;
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

/// The gateway's C heap from /metrics (tollgate_heap_bytes: in use, freed but kept by the
/// allocator, SQLite's share of in use), in kB, and the number of metric series (sample lines):
/// state that grows with the keys, models, statuses and failure classes seen, not with requests;
/// {} when it cannot be read.
async function heapSample(base) {
  try {
    const text = await (await fetch(base + '/metrics', { signal: AbortSignal.timeout(5000) })).text();
    const kb = (state) => Math.round(Number(new RegExp(`^tollgate_heap_bytes\\{state="${state}"\\} (\\S+)$`, 'm').exec(text)?.[1]) / 1024);
    const series = text.split('\n').filter((l) => l && !l.startsWith('#')).length;
    return { heap_in_use_kb: kb('in_use'), heap_free_kb: kb('free'), sqlite_kb: kb('store'), metric_series: series };
  } catch {
    return {};
  }
}

/// VmRSS (kB) and open descriptors of a process.
function procSample(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    const fds = fs.readdirSync(`/proc/${pid}/fd`).length;
    return { at: now(), rss_kb: rss, fds };
  } catch {
    return null;
  }
}

function sqliteJson(db, sql) {
  const r = sh('sqlite3', ['-json', '-readonly', db, sql]);
  const t = r.stdout.trim();
  return t ? JSON.parse(t) : [];
}

/// A bill line of GET /mock/stats in nanos (every kind this soak produces: input and output).
function billNanos(b) {
  const p = PRICES[b.model];
  if (!p) return 0;
  const total = BigInt(b.prompt_tokens) * picos(p.input) + BigInt(b.completion_tokens) * picos(p.output);
  return Number((total + 999n) / 1000n);
}

// ---------------------------------------------------------------------------------
// Traffic

const WORDS = 'the quick brown fox jumps over a lazy dog while seven wizards quietly hex many jolly boxers'.split(' ');
const promptText = (rng) => Array.from({ length: 1 + Math.floor(rng() * 40) }, () => WORDS[Math.floor(rng() * WORDS.length)]).join(' ');
const pick = (rng, items) => {
  const total = items.reduce((a, x) => a + x.weight, 0);
  let r = rng() * total;
  for (const x of items) { r -= x.weight; if (r < 0) return x; }
  return items[items.length - 1];
};

const KINDS = [
  { name: 'chat', weight: 26 },
  { name: 'chat_stream', weight: 24 },
  { name: 'messages', weight: 12 },
  { name: 'messages_stream', weight: 12 },
  { name: 'messages_to_openai', weight: 8 },
  { name: 'embeddings', weight: 10 },
  { name: 'chat_n2', weight: 4 },
];

/// One request of `kind` for `key`: {path, body, headers, stream, family}.
function buildRequest(kind, key, rng) {
  const max = 8 + Math.floor(rng() * 56);
  const user = key.endUsers ? key.endUsers[Math.floor(rng() * key.endUsers.length)] : undefined;
  const messages = [{ role: 'user', content: promptText(rng) }];
  const bearer = { authorization: `Bearer ${key.key}` };
  const anth = { 'x-api-key': key.key, 'anthropic-version': '2023-06-01' };
  switch (kind) {
    case 'chat':
      return { path: '/v1/chat/completions', headers: bearer, family: 'openai', stream: false,
        body: { model: 'soak-chat', messages, max_tokens: max, ...(user && { user }) } };
    case 'chat_n2':
      return { path: '/v1/chat/completions', headers: bearer, family: 'openai', stream: false,
        body: { model: 'soak-chat', messages, max_completion_tokens: max, n: 2, ...(user && { user }) } };
    case 'chat_stream':
      return { path: '/v1/chat/completions', headers: bearer, family: 'openai', stream: true,
        body: { model: 'soak-chat', messages, max_tokens: max, stream: true, ...(rng() < 0.5 && { stream_options: { include_usage: true } }), ...(user && { user }) } };
    case 'messages':
    case 'messages_stream':
      return { path: '/v1/messages', headers: anth, family: 'anthropic', stream: kind === 'messages_stream',
        body: { model: 'soak-claude', messages, max_tokens: max, ...(kind === 'messages_stream' && { stream: true }), ...(user && { metadata: { user_id: user } }) } };
    case 'messages_to_openai': {
      const stream = rng() < 0.5;
      return { path: '/v1/messages', headers: anth, family: 'anthropic', stream,
        body: { model: 'soak-chat', messages, max_tokens: max, ...(stream && { stream }), ...(user && { metadata: { user_id: user } }) } };
    }
    case 'embeddings':
      return { path: '/v1/embeddings', headers: bearer, family: 'openai', stream: false,
        body: { model: 'soak-embed', input: rng() < 0.3 ? [promptText(rng), promptText(rng)] : promptText(rng), ...(user && { user }) } };
    default:
      throw new Error(kind);
  }
}

/// The response id of a served answer (the upstream's, passed through), for the exact match.
function responseId(req, text, json) {
  if (!req.stream) return json?.id ?? null;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    try {
      const d = JSON.parse(line.slice(5));
      if (d.id) return d.id;
      if (d.message?.id) return d.message.id;
    } catch { /* [DONE] or a malformed event */ }
  }
  return null;
}

/// How a stream ended, from its text: complete, cut (an error event) or bare (neither).
function streamEnd(req, text) {
  if (/^event: error/m.test(text) || /^data: \{"error"/m.test(text)) return 'cut';
  if (req.family === 'anthropic' ? /message_stop/.test(text) : /data: \[DONE\]/.test(text)) return 'complete';
  return 'bare';
}

// ---------------------------------------------------------------------------------
// The run

export async function runSoak(opts = {}) {
  const o = {
    minutes: 30, workers: 12, seed: Number(process.env.SOAK_SEED ?? 0) || (Date.now() % 1e9), tmpfsSize: '64m',
    log: (s) => console.log(s), keep: false, ...opts,
  };
  const durationMs = Math.round(o.minutes * 60000);
  const short = durationMs < 10 * 60000;
  o.thinkMs ??= short ? [50, 200] : [150, 500]; // pause of a worker between two requests
  // The schedule (ms from the start of traffic). Full run: a kill every 2 minutes up to the last
  // 6 minutes, which the last incarnation runs without kills (warm-up, then the RSS/fd samples).
  const killEveryMs = o.killEveryMs ?? (short ? Infinity : 120000);
  const quietMs = o.quietMs ?? (short ? Math.round(durationMs * 0.78) : 6 * 60000);
  const kills = [];
  if (Number.isFinite(killEveryMs)) for (let t = killEveryMs; t <= durationMs - quietMs; t += killEveryMs) kills.push(t);
  else kills.push(durationMs - quietMs);
  const sched = {
    kills,
    diskFillAt: o.diskFillAt ?? (short ? Math.round(durationMs * 0.06) : Math.round(killEveryMs * 3.5)),
    diskFillHoldMs: o.diskFillHoldMs ?? (short ? 8000 : 20000),
    clockStepAt: o.clockStepAt ?? (short ? Math.round(durationMs * 0.4) : Math.round(killEveryMs * 6.5)),
    clockStep: o.clockStep ?? '+1h',
    warmupMs: o.warmupMs ?? (short ? Math.round(durationMs * 0.45) : 90000),
    idleMs: o.idleMs ?? (short ? 5000 : 15000),
  };
  const rng = seededRandom(o.seed);
  const log = o.log;
  log(`soak: seed ${o.seed}, ${o.minutes} min, ${o.workers} workers; kills at ${kills.map(sec).join(', ')}; ` +
    `disk fill at ${sec(sched.diskFillAt)} for ${sec(sched.diskFillHoldMs)}; clock step ${sched.clockStep} at ${sec(sched.clockStepAt)}`);

  if (!FAKETIME_LIB) throw new Error('soak: libfaketime is not installed (Debian packages faketime, libfaketime)');
  if (sh('sqlite3', ['-version'], { allowFail: true }).status !== 0) throw new Error('soak: the sqlite3 shell is not installed');

  // -- Places: the store on a small tmpfs; the clock file and logs outside it.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-soak-'));
  let tmpfs = o.tmpfsDir;
  let mountedHere = false;
  if (!tmpfs) {
    tmpfs = path.join(work, 'store');
    mountTmpfs(tmpfs, o.tmpfsSize);
    mountedHere = true;
  } else if (!isMountpoint(tmpfs)) {
    throw new Error(`soak: --tmpfs-dir ${tmpfs} is not a mount point (bench/soak.sh mounts it)`);
  }
  const dataDir = path.join(tmpfs, 'data');
  fs.mkdirSync(dataDir, { recursive: true });
  const dbFile = path.join(dataDir, 'tollgate.db');
  const clockFile = path.join(work, 'faketime');
  fs.writeFileSync(clockFile, '+0\n');
  const gwLog = path.join(work, 'gateway.log');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const gwEnv = {
    ...process.env,
    LD_PRELOAD: FAKETIME_LIB,
    FAKETIME_TIMESTAMP_FILE: clockFile,
    // Re-read the clock file at most once a second (FAKETIME_NO_CACHE would re-read it on every
    // clock call); only the wall clock moves: timers and deadlines stay on the real monotonic one.
    FAKETIME_CACHE_DURATION: '1',
    DONT_FAKE_MONOTONIC: '1',
    // A sanitized build (scripts/sanitize.sh) must accept libfaketime ahead of its runtime.
    ASAN_OPTIONS: [process.env.ASAN_OPTIONS, 'verify_asan_link_order=0'].filter(Boolean).join(':'),
  };

  const mock = await Mock.start();
  const gateways = [];   // every incarnation: {n, pid, started, exit, intent, recovery, g}
  let gw = null;
  let stopping = false;
  const events = [];     // timeline for the report
  const t0 = now();
  const at = () => now() - t0;
  // Markers in the gateway log, so its lines can be read against what the soak was doing.
  const mark = (what) => fs.appendFileSync(gwLog, `===== soak: ${what} at ${sec(at())} =====\n`);
  const note = (what, extra = {}) => { events.push({ at_ms: at(), what, ...extra }); log(`soak: [${sec(at())}] ${what}${Object.keys(extra).length ? ' ' + JSON.stringify(extra) : ''}`); };

  const config = gatewayConfig({
    model_list: deployments(mock),
    litellm_settings: {
      max_budget: 1000, // the global scope: every paid attempt is reserved and in the ledger
      fallbacks: [{ 'soak-chat': ['soak-fb'] }, { 'soak-claude': ['soak-chat'] }],
      context_window_fallbacks: [{ 'soak-chat': ['soak-long'] }, { 'soak-claude': ['soak-long'] }],
      content_policy_fallbacks: [{ 'soak-chat': ['soak-fb'] }],
    },
    router_settings: { num_retries: 2, timeout: 4, stream_timeout: 3, allowed_fails: 4, cooldown_time: 1 },
    tollgate_settings: { data_dir: dataDir, drain_timeout_ms: 5000, worker_threads: 2 },
  });

  async function startGateway(why) {
    let lastErr;
    for (let i = 0; i < 20; i++) {
      try {
        const g = await Gateway.start(config, { port, env: gwEnv });
        const life = { n: gateways.length + 1, pid: g.proc.child.pid, started_ms: at(), why, exit: null, intent: null, g };
        gateways.push(life);
        fs.appendFileSync(gwLog, `\n===== incarnation ${life.n} (pid ${life.pid}, ${why}) at ${sec(at())} =====\n${g.proc.stderr}`);
        g.proc.child.stderr.on('data', (d) => fs.appendFileSync(gwLog, d));
        const m = /ledger recovery: (\d+) reservation\(s\) left open/.exec(g.proc.stderr);
        life.recovered = m ? Number(m[1]) : 0;
        g.proc.exited.then((e) => {
          life.exit = e;
          life.exit_ms = at();
          if (!life.intent) {
            note(`gateway incarnation ${life.n} exited on its own`, e);
            if (!stopping) startGateway('restart after an unplanned exit').catch((err) => note(`restart failed: ${err.message}`));
          }
        });
        gw = g;
        return life;
      } catch (e) {
        lastErr = e;
        await sleep(250);
      }
    }
    throw lastErr;
  }

  async function killGateway() {
    const life = gateways[gateways.length - 1];
    life.intent = 'SIGKILL';
    life.g.kill();
    await life.g.proc.exited;
    fs.rmSync(life.g.dir, { recursive: true, force: true });
  }

  async function termGateway() {
    const life = gateways[gateways.length - 1];
    life.intent = 'SIGTERM';
    await life.g.stop();
  }

  const report = {
    seed: o.seed, minutes: o.minutes, workers: o.workers, schedule: sched, port, tmpfs_size: o.tmpfsSize,
    traffic: {}, admin: {}, scripts: { rounds: 0, behaviours: {} }, events,
  };
  let cleanedUp = false;
  const cleanup = async () => {
    if (cleanedUp) return;
    cleanedUp = true;
    stopping = true;
    for (const life of gateways) if (life.g.alive) { life.intent ??= 'cleanup'; life.g.kill(); }
    await mock.stop().catch(() => {});
    if (mountedHere && isMountpoint(tmpfs)) sh('umount', [tmpfs], { allowFail: true });
    if (!o.keep) fs.rmSync(work, { recursive: true, force: true });
  };

  try {
    await startGateway('first start');
    const admin = async (p, body) => {
      const res = await fetch(base + p, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${MASTER_KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10000),
      });
      const text = await res.text();
      if (res.status < 200 || res.status >= 300) throw new Error(`admin ${p} -> ${res.status}: ${text.slice(0, 300)}`);
      return JSON.parse(text);
    };

    // -- Identities. Budgets: a request costs about $0.00005-0.0005, so the "near" keys, the
    // capped team and the capped end user are hit within a minute or two and topped up by the
    // admin writer (caps only ever rise, so "spend ≤ the final cap" is the check).
    const keys = [];
    const teams = [];
    const customers = [];
    const mkKey = async (name, fields, weight, extra = {}) => {
      const k = await admin('/key/generate', { key_alias: `soak-${name}`, ...fields });
      const key = { name, key: k.key, token: k.token, weight, fields, ...extra };
      keys.push(key);
      return key;
    };
    await admin('/team/new', { team_id: 'soak-team-capped', max_budget: 0.004 });
    await admin('/team/new', { team_id: 'soak-team-rich', max_budget: 50 });
    teams.push({ id: 'soak-team-capped', topup: true }, { id: 'soak-team-rich' });
    for (const [id, b] of [['cust-capped', 0.002], ['cust-rich', 50]]) {
      await admin('/customer/new', { user_id: id, max_budget: b });
      customers.push({ id, topup: b < 1 });
    }
    await mkKey('rich-1', { max_budget: 100 }, 6);
    await mkKey('rich-2', { max_budget: 100 }, 6);
    for (let i = 1; i <= 3; i++) await mkKey(`near-${i}`, { max_budget: 0.003 }, 5, { topup: true });
    await mkKey('team-capped-1', { max_budget: 100, team_id: 'soak-team-capped' }, 4);
    await mkKey('team-capped-2', { max_budget: 100, team_id: 'soak-team-capped' }, 4);
    await mkKey('team-rich', { max_budget: 100, team_id: 'soak-team-rich' }, 4, { endUsers: ['cust-capped', 'cust-rich', 'anon-1'] });
    await mkKey('window-1h', { max_budget: 0.004, budget_duration: '1h' }, 5);
    await mkKey('end-users', { max_budget: 100 }, 4, { endUsers: ['cust-capped', 'cust-rich', 'anon-2'] });
    note('identities created', { keys: keys.length, teams: teams.length, customers: customers.length });

    // -- The simulator's scripts: per upstream model a queue of behaviours drawn from the
    // catalogue (about 40 % faults), re-drawn every few seconds; the last entry (repeated once
    // the queue runs out) is a plain success.
    let lastOversized = -Infinity;
    const scriptRound = async () => {
      for (const up of SCRIPTED) {
        const behaviours = [];
        for (let i = 0; i < 40; i++) {
          const r = rng();
          let b;
          if (r < 0.6) {
            b = { latency_ms: Math.floor(rng() * 60), completion_tokens: 2 + Math.floor(rng() * 48) };
            if (rng() < 0.5) b.tokens_per_second = 200 + Math.floor(rng() * 800);
            if (rng() < 0.15) b.fill_max_tokens = true;
            if (rng() < 0.1) b.first_token_ms = Math.floor(rng() * 300);
          } else if (up !== 'up-embed' && up !== 'up-long' && (rng() < 0.01 || (up === 'up-chat-a' && !report.scripts.behaviours.oversized)) &&
                     at() - lastOversized > (short ? 20000 : 150000)) {
            b = { fault: 'oversized' }; // 64 MiB through loopback: rare
            lastOversized = at();
          } else {
            b = { ...FAULTS[Math.floor(rng() * FAULTS.length)], latency_ms: Math.floor(rng() * 30) };
          }
          behaviours.push(b);
          inc(report.scripts.behaviours, faultName(b) ?? 'success');
        }
        behaviours.push({ latency_ms: 5 });
        await mock.script(up, behaviours);
      }
      report.scripts.rounds++;
    };
    await scriptRound();

    // -- Bills: the simulator keeps its newest 10,000 lines; gather them as the run goes.
    const bills = new Map();
    let billGap = false;
    const pollBills = async () => {
      const s = await mock.stats();
      const list = s.bills ?? [];
      if (list.length >= 10000 && bills.size > 0 && !bills.has(list[0].request_id)) billGap = true;
      for (const b of list) bills.set(b.request_id, b);
      return s;
    };

    // -- Traffic
    const stopAt = t0 + durationMs;
    const traffic = report.traffic;
    const served = []; // {callId, respId, kind}
    const answeredAt = new Map(); // call id → when its response ended (ms from the start)
    let diskFull = false;
    const duringFill = { paid_ok: 0, ledger_unavailable: 0, other: {} };
    const fillServed = []; // call ids answered 200 while the disk was full
    const window = { before_step: { ok: 0, budget: 0 }, after_step: { ok: 0, budget: 0 } };
    let stepped = false;
    const worker = async (w) => {
      const wr = seededRandom(o.seed * 31 + w);
      let n = 0;
      while (now() < stopAt && n < 1e6) {
        n++;
        const kind = pick(wr, KINDS).name;
        const key = pick(wr, keys);
        const req = buildRequest(kind, key, wr);
        const t = traffic[kind] ??= { sent: 0, outcomes: {}, samples: {} };
        t.sent++;
        let outcome;
        try {
          const res = await fetch(base + req.path, {
            method: 'POST', headers: { 'content-type': 'application/json', ...req.headers },
            body: JSON.stringify(req.body), signal: AbortSignal.timeout(30000),
          });
          const text = await res.text();
          let json = null;
          if (!req.stream || res.status !== 200) { try { json = JSON.parse(text); } catch { /* not JSON */ } }
          const err = json?.error;
          // The most telling name: OpenAI's code unless it is a bare status ("429"), else the type.
          let code = typeof err === 'object' ? (err.code && !/^\d+$/.test(err.code) ? err.code : err.type) : undefined;
          // Anthropic's error shape has no code: the ledger's 503 is an overloaded_error there.
          if (res.status === 503 && /spend ledger cannot be written/.test(err?.message ?? '')) code = 'ledger_unavailable';
          outcome = res.status === 200 ? (req.stream ? `200 ${streamEnd(req, text)}` : '200') : `${res.status}${code ? ' ' + code : ''}`;
          if (!t.samples[outcome] && outcome !== '200' && outcome !== '200 complete') t.samples[outcome] = text.slice(0, 300);
          if (res.headers.get('x-litellm-call-id')) answeredAt.set(res.headers.get('x-litellm-call-id'), at());
          if (res.status === 200) {
            const callId = res.headers.get('x-litellm-call-id');
            const respId = responseId(req, text, json);
            if (callId && respId && (!req.stream || streamEnd(req, text) === 'complete')) served.push({ callId, respId, kind });
          }
          if (diskFull) {
            if (res.status === 200) { duringFill.paid_ok++; fillServed.push(res.headers.get('x-litellm-call-id')); }
            else if (res.status === 503 && code === 'ledger_unavailable') duringFill.ledger_unavailable++;
            else inc(duringFill.other, outcome);
          }
          if (key.name === 'window-1h') {
            const bucket = stepped ? window.after_step : window.before_step;
            if (res.status === 200) bucket.ok++;
            else if (res.status === 429 && code === 'budget_exceeded') bucket.budget++;
          }
        } catch (e) {
          outcome = e.name === 'TimeoutError' ? 'client timeout' : 'connection error';
          await sleep(100 + wr() * 200); // the gateway is restarting: reconnect shortly
        }
        inc(t.outcomes, outcome);
        await sleep(o.thinkMs[0] + wr() * (o.thinkMs[1] - o.thinkMs[0]));
      }
    };

    // -- Admin writes, a few a minute: new keys (some in new teams), budget top-ups, teams,
    // customers. A write the kill interrupted is counted as failed and not relied on.
    const adminStats = report.admin;
    const adminWriter = async () => {
      let n = 0;
      while (now() < stopAt && n < 10000) {
        n++;
        await sleep(short ? 1500 : 3000 + rng() * 3000);
        if (now() >= stopAt) break;
        const r = rng();
        let op;
        try {
          if (r < 0.4) {
            op = 'key/update';
            const pool = [...keys.filter((k) => k.topup), ...teams.filter((x) => x.topup), ...customers.filter((c) => c.topup)];
            const x = pool[Math.floor(rng() * pool.length)];
            if (x.key) {
              x.fields.max_budget = Number((x.fields.max_budget + 0.002).toFixed(6));
              await admin('/key/update', { key: x.key, max_budget: x.fields.max_budget });
            } else if (x.id?.startsWith('cust-')) {
              op = 'customer/update';
              const info = await admin(`/customer/info?end_user_id=${x.id}`);
              await admin('/customer/update', { user_id: x.id, max_budget: Number((Number(info.max_budget) + 0.002).toFixed(6)) });
            } else {
              op = 'team/update';
              const info = await admin(`/team/info?team_id=${x.id}`);
              await admin('/team/update', { team_id: x.id, max_budget: Number((Number(info.team_info.max_budget) + 0.002).toFixed(6)) });
            }
          } else if (r < 0.65) {
            op = 'key/generate';
            const nk = keys.length + 1;
            const near = rng() < 0.5;
            await mkKey(`dyn-${nk}`, { max_budget: near ? 0.002 : 20 }, 2, near ? { topup: true } : {});
          } else if (r < 0.85) {
            op = 'team/new';
            const id = `soak-team-${teams.length + 1}-${o.seed}`;
            await admin('/team/new', { team_id: id, max_budget: 0.003 });
            teams.push({ id, topup: true });
            await mkKey(`team-${id}`, { max_budget: 50, team_id: id }, 3);
          } else {
            op = 'customer/new';
            const id = `cust-${customers.length + 1}-${o.seed}`;
            await admin('/customer/new', { user_id: id, max_budget: 0.002 });
            customers.push({ id, topup: true });
            const holder = keys.find((k) => k.name === 'end-users');
            holder.endUsers.push(id);
          }
          inc(adminStats, `${op} ok`);
        } catch (e) {
          inc(adminStats, `${op} failed`);
        }
      }
    };

    const scripter = async () => {
      while (now() < stopAt) {
        await sleep(short ? 4000 : 8000);
        if (now() >= stopAt) break;
        await scriptRound().catch((e) => note(`script round failed: ${e.message}`));
        await pollBills().catch(() => {});
      }
    };

    // -- RSS and descriptors of the current incarnation, every 15 s.
    const samples = [];
    const sampler = async () => {
      while (now() < stopAt) {
        await sleep(short ? 5000 : 15000);
        const life = gateways[gateways.length - 1];
        const s = life.g.alive ? procSample(life.pid) : null;
        if (s) samples.push({ ...s, ...(await heapSample(base)), at_ms: s.at - t0, incarnation: life.n });
        if (!diskFull) {
          const df = diskFree(tmpfs);
          report.tmpfs_peak_used = Math.max(report.tmpfs_peak_used ?? 0, df.total - df.free);
        }
      }
    };

    // -- The chaos: kills, the disk fill, the clock step, the warm-up sample.
    const chaos = async () => {
      const plan = [
        ...sched.kills.map((t) => ({ t, what: 'kill' })),
        { t: sched.diskFillAt, what: 'fill' },
        { t: sched.clockStepAt, what: 'step' },
        { t: (sched.kills.at(-1) ?? 0) + sched.warmupMs, what: 'warm' },
      ].sort((a, b) => a.t - b.t);
      for (const ev of plan) {
        const wait = t0 + ev.t - now();
        if (wait > 0) await sleep(wait);
        if (now() >= stopAt) break;
        if (ev.what === 'kill') {
          const life = gateways[gateways.length - 1];
          await killGateway();
          note(`SIGKILL incarnation ${life.n}`);
          const next = await startGateway('restart after SIGKILL');
          note(`incarnation ${next.n} listening`, { recovered_reservations: next.recovered, restart_ms: next.started_ms - life.exit_ms });
        } else if (ev.what === 'fill') {
          const before = diskFree(tmpfs);
          const file = fillDisk(tmpfs);
          const full = diskFree(tmpfs);
          diskFull = true;
          mark('disk filled');
          note('disk filled', { free_before: before.free, free_now: full.free, total: full.total });
          const mockBefore = (await mock.stats()).requests_total;
          await sleep(sched.diskFillHoldMs);
          diskFull = false;
          fs.rmSync(file, { force: true });
          const freed = now();
          mark('disk freed');
          note('disk freed', { during_fill: duringFill, upstream_requests_during_fill: (await mock.stats()).requests_total - mockBefore });
          // The gateway must serve paid requests again without a restart.
          const probeKey = keys.find((k) => k.name === 'rich-1').key;
          report.disk_fill = { ...duringFill, hold_ms: sched.diskFillHoldMs, gateway_alive: gw.alive };
          try {
            await waitFor(async () => {
              const r = await fetch(base + '/v1/chat/completions', {
                method: 'POST', headers: { authorization: `Bearer ${probeKey}`, 'content-type': 'application/json' },
                body: JSON.stringify({ model: 'soak-probe', messages: [{ role: 'user', content: 'probe' }], max_tokens: 4 }),
                signal: AbortSignal.timeout(5000),
              }).catch(() => null);
              return r?.status === 200;
            }, { timeoutMs: 30000, intervalMs: 250, what: 'a paid 200 after the disk was freed' });
            report.disk_fill.recovered_after_ms = now() - freed;
            note('paid requests served again', { after_ms: report.disk_fill.recovered_after_ms });
          } catch (e) {
            report.disk_fill.recovered_after_ms = null;
            note(`the gateway did not serve a paid request within 30 s of the disk being freed: ${e.message}`);
          }
          await sleep(2000); // alerts are delivered off the request path
          mark('fill window closed');
        } else if (ev.what === 'step') {
          const before = now();
          fs.writeFileSync(clockFile, `${sched.clockStep}\n`);
          stepped = true;
          // Observe the step: the gateway's own clock, as it stamps a new key's created_at.
          let seen = null;
          try {
            seen = await waitFor(async () => {
              const k = await admin('/key/generate', { key_alias: `soak-clock-probe-${at()}` }).catch(() => null);
              const created = Date.parse(k?.created_at ?? '');
              return created - now() > 30 * 60000 ? created - now() : null;
            }, { timeoutMs: 10000, intervalMs: 500, what: 'the gateway clock to move' });
          } catch { /* reported as null */ }
          report.clock_step = { step: sched.clockStep, observed_offset_ms: seen, took_ms: now() - before };
          note('wall clock stepped', report.clock_step);
        } else if (ev.what === 'warm') {
          const life = gateways[gateways.length - 1];
          report.warm = { ...procSample(life.pid), ...(await heapSample(base)), incarnation: life.n };
          note('warm-up sample', report.warm);
        }
      }
    };

    await Promise.all([
      ...Array.from({ length: o.workers }, (_, w) => worker(w)),
      adminWriter(), scripter(), sampler(), chaos(),
    ]);
    note('traffic stopped');

    // -- Wind down: the simulator answers plainly, finishes what it has in progress; a short
    // idle; the after-load sample; SIGTERM (exit 0 expected); one more start so recovery runs.
    for (const up of SCRIPTED) await mock.script(up, [{ latency_ms: 0 }]);
    await waitFor(async () => {
      const s = await mock.stats();
      const m = Object.values(s.models ?? {});
      return m.reduce((a, x) => a + x.requests - x.succeeded - x.failed - x.cancelled, 0) === 0;
    }, { timeoutMs: 30000, intervalMs: 250, what: 'the simulator to finish its requests in progress' });
    await sleep(sched.idleMs); // a deliberate idle period before the after-load sample
    const last = gateways[gateways.length - 1];
    report.after = { ...procSample(last.pid), ...(await heapSample(base)), incarnation: last.n };
    note('after-load sample', report.after);
    stopping = true;
    await termGateway();
    note(`SIGTERM incarnation ${last.n}`, last.exit);
    await startGateway('final start (recovery)');
    const fin = gateways[gateways.length - 1];
    note(`incarnation ${fin.n} started for recovery`, { recovered_reservations: fin.recovered });

    // Budgets as the gateway reports them after recovery (caps and spend).
    const caps = { key: [], team: [], end_user: [] };
    for (const k of keys) {
      const info = (await admin(`/key/info?key=${encodeURIComponent(k.key)}`)).info;
      caps.key.push({ name: k.name, id: k.token, max_budget: info.max_budget, spend: info.spend, budget_duration: info.budget_duration ?? null });
    }
    for (const t of teams) {
      const info = (await admin(`/team/info?team_id=${t.id}`)).team_info;
      caps.team.push({ name: t.id, id: t.id, max_budget: info.max_budget, spend: info.spend });
    }
    for (const c of customers) {
      const info = await admin(`/customer/info?end_user_id=${c.id}`);
      caps.end_user.push({ name: c.id, id: c.id, max_budget: info.max_budget, spend: info.spend });
    }
    await termGateway();
    note(`SIGTERM incarnation ${fin.n}`, fin.exit);
    const finalStats = await pollBills();
    if (o.keep) {
      // The tmpfs goes at exit: keep the store (and the simulator's bills) for a look afterwards.
      sh('sqlite3', [dbFile, `.backup ${path.join(work, 'tollgate.db')}`]);
      fs.writeFileSync(path.join(work, 'bills.json'), JSON.stringify([...bills.values()]));
      log(`soak: store and bills kept in ${work}`);
    }

    // ---------------------------------------------------------------------------
    // The checks
    const checks = [];
    const check = (name, ok, figures) => { checks.push({ name, ok, figures }); };

    // 1. Money.
    const bad = sqliteJson(dbFile, `SELECT COUNT(*) AS n FROM (SELECT reservation_id, SUM(kind='reserve') AS r, SUM(kind='settle') AS s
      FROM ledger GROUP BY reservation_id HAVING r <> 1 OR s <> 1)`)[0].n;
    const badOrder = sqliteJson(dbFile, `SELECT COUNT(*) AS n FROM ledger s JOIN ledger r ON r.reservation_id = s.reservation_id AND r.kind = 'reserve'
      WHERE s.kind = 'settle' AND (s.seq < r.seq OR s.amount_nanos <> r.amount_nanos)`)[0].n;
    const byKind = sqliteJson(dbFile, `SELECT model, settle_kind, COUNT(*) AS n, SUM(actual_nanos) AS actual, SUM(amount_nanos) AS reserved,
      SUM(CASE WHEN settle_kind IN ('unknown', 'recovered') THEN actual_nanos <> amount_nanos
               WHEN settle_kind = 'no_usage' THEN actual_nanos <> 0 ELSE 0 END) AS inconsistent
      FROM ledger WHERE kind = 'settle' GROUP BY 1, 2`);
    const reservations = sqliteJson(dbFile, `SELECT COUNT(*) AS n FROM ledger WHERE kind = 'reserve'`)[0].n;
    const kinds = {};
    const perModel = {};
    let charged = 0;
    let inconsistent = 0;
    for (const r of byKind) {
      const up = upstreamOf(r.model);
      const m = perModel[up] ??= { actual: 0, unknown: 0, recovered: 0, no_usage: 0, n: {} };
      const k = kinds[r.settle_kind] ??= { n: 0, charged: 0, reserved: 0 };
      k.n += r.n; k.charged += r.actual; k.reserved += r.reserved;
      charged += r.actual;
      inconsistent += r.inconsistent;
      m[r.settle_kind] = (m[r.settle_kind] ?? 0) + r.actual;
      m.n[r.settle_kind] = (m.n[r.settle_kind] ?? 0) + r.n;
    }
    const actualSum = kinds.actual?.charged ?? 0;
    const unknownRes = (kinds.unknown?.reserved ?? 0) + (kinds.recovered?.reserved ?? 0);
    // The simulator's bill from its per-model counters (cumulative, never truncated).
    let bill = 0;
    const billByModel = {};
    for (const [up, m] of Object.entries(finalStats.models ?? {})) {
      const p = PRICES[up];
      if (!p) continue;
      billByModel[up] = Number((BigInt(m.prompt_tokens) * picos(p.input) + BigInt(m.completion_tokens) * picos(p.output) + 999n) / 1000n);
      bill += billByModel[up];
    }
    const modelRows = [];
    let modelsOk = true;
    for (const up of Object.keys(PRICES)) {
      const m = perModel[up] ?? { actual: 0, unknown: 0, recovered: 0 };
      const b = billByModel[up] ?? 0;
      const u = (m.unknown ?? 0) + (m.recovered ?? 0);
      const ok = m.actual <= b && b <= m.actual + u;
      modelsOk &&= ok;
      modelRows.push({ model: up, bill: b, actual: m.actual, unknown_recovered: u, billed_beyond_actual: b - m.actual, ok });
    }
    // No settle lost: a reservation settled `recovered` by a restart must have been in flight at
    // the kill. An attempt holds its reservation for at most a few seconds here (timeout 4 s,
    // stream_timeout 3 s, clients give up at 30 s), so one reserved longer ago than that before
    // the restart had been answered and its settle record was lost (the durable ledger then
    // charges its whole reservation, not the answer's cost).
    const MAX_ATTEMPT_MS = 30000;
    // Likewise, one whose request the client saw answered more than 3 s before the kill.
    const recoveredRows = sqliteJson(dbFile, `SELECT r.request_id, r.model, r.amount_nanos, s.at_ms - r.at_ms AS age_ms
      FROM ledger s JOIN ledger r ON r.reservation_id = s.reservation_id AND r.kind = 'reserve'
      WHERE s.kind = 'settle' AND s.settle_kind = 'recovered'`);
    const stops = gateways.filter((g) => g.intent && g.exit_ms !== undefined).map((g) => g.exit_ms).sort((a, b) => a - b);
    const lost = recoveredRows.filter((r) => {
      if (r.age_ms > MAX_ATTEMPT_MS) return true;
      const answered = answeredAt.get(r.request_id);
      if (answered === undefined) return false;
      const stop = stops.find((x) => x >= answered);
      return stop !== undefined && stop - answered > 3000;
    });
    // Exact: each served answer's actual settle vs its line of the bill (matched by response id).
    const billByResp = new Map();
    for (const b of bills.values()) if (b.response_id) billByResp.set(b.response_id, b);
    const settleRows = sqliteJson(dbFile, `SELECT request_id, model, settle_kind, amount_nanos, actual_nanos FROM ledger WHERE kind = 'settle'`);
    const settlesByCall = new Map();
    for (const r of settleRows) (settlesByCall.get(r.request_id) ?? settlesByCall.set(r.request_id, []).get(r.request_id)).push(r);
    const match = { served: served.length, matched: 0, continued: 0, no_bill_line: {}, mismatched: [], by_kind: {} };
    for (const s of served) {
      const k = match.by_kind[s.kind] ??= { served: 0, matched: 0 };
      k.served++;
      const b = billByResp.get(s.respId);
      if (!b) { inc(match.no_bill_line, s.kind); continue; }
      const rows = (settlesByCall.get(s.callId) ?? []).filter((r) => upstreamOf(r.model) === b.model);
      const actual = rows.filter((r) => r.settle_kind === 'actual');
      const unknown = rows.filter((r) => r.settle_kind === 'unknown' || r.settle_kind === 'recovered');
      if (actual.some((r) => r.actual_nanos === billNanos(b))) {
        match.matched++;
        k.matched++;
      } else if (unknown.some((r) => billNanos(b) <= r.amount_nanos)) {
        // A stream cut after its first tokens and continued (on this deployment or another): the
        // part this line bills was charged its whole reservation (unknown), the continuation
        // `actual` (its own line carries another id).
        match.continued++;
        k.matched++;
      } else if (match.mismatched.length < 5) {
        match.mismatched.push({ ...s, model: b.model, bill: billNanos(b), ledger: rows });
      } else {
        match.more_mismatches = (match.more_mismatches ?? 0) + 1;
      }
    }
    const unbilled = Object.values(match.no_bill_line).reduce((a, n) => a + n, 0);
    const matchOk = match.matched + match.continued === served.length - unbilled && match.matched > 0 && match.mismatched.length === 0;
    report.money = { reservations, kinds, charged, actual: actualSum, unknown_recovered_reserved: unknownRes, bill, per_model: modelRows, match, bill_lines: bills.size, bill_gap: billGap };
    check('money: every reservation has exactly one settle (after it, same amount)', bad === 0 && badOrder === 0 && reservations > 0,
      `${reservations} reservations; ${bad} without exactly one settle; ${badOrder} settled before their reserve or with another amount`);
    check('money: no settle lost (every reservation recovered at a restart was in flight at the kill)', lost.length === 0,
      `${kinds.recovered?.n ?? 0} reservations recovered at restarts (${gateways.map((g) => g.recovered).join(' + ')}); ` +
      `${lost.length} of them reserved more than ${MAX_ATTEMPT_MS / 1000} s before the restart, or answered more than 3 s before the kill ` +
      `(their settle records were lost): ` +
      `${JSON.stringify(lost.slice(0, 5))}`);
    check('money: charged == Σ actual + Σ unknown/recovered reservations', inconsistent === 0 && charged === actualSum + unknownRes,
      `charged ${usd(charged)} = actual ${usd(actualSum)} (${kinds.actual?.n ?? 0}) + unknown ${usd(kinds.unknown?.reserved ?? 0)} (${kinds.unknown?.n ?? 0}) + recovered ${usd(kinds.recovered?.reserved ?? 0)} (${kinds.recovered?.n ?? 0}); no_usage ${kinds.no_usage?.n ?? 0} at $0; ${inconsistent} inconsistent settles`);
    check('money: bill ≤ charged ≤ bill + Σ unknown/recovered, overall and per upstream model', bill <= charged && charged <= bill + unknownRes && modelsOk,
      `bill ${usd(bill)} ≤ charged ${usd(charged)} ≤ ${usd(bill + unknownRes)}; charged − bill = ${usd(charged - bill)} of ${usd(unknownRes)} marked unknown; ` +
      modelRows.map((r) => `${r.model}: bill ${usd(r.bill)}, actual ${usd(r.actual)}, +${usd(r.billed_beyond_actual)} billed on ≤ ${usd(r.unknown_recovered)} unknown${r.ok ? '' : ' FAIL'}`).join('; '));
    check('money: every served answer settled `actual` == its line of the simulator\'s bill', matchOk,
      `${match.matched} of ${served.length} served answers matched their bill line exactly by response id, ${match.continued} more were ` +
      `continuations whose cut first part was charged as unknown; ${unbilled} carry no upstream id ${JSON.stringify(match.no_bill_line)}` +
      `${billGap ? ' (bill lines were lost between polls)' : ''}; by kind ${JSON.stringify(match.by_kind)}; ` +
      `${match.mismatched.length + (match.more_mismatches ?? 0)} mismatches ${JSON.stringify(match.mismatched).slice(0, 800)}`);

    // 2. Caps, from the ledger: spend per scope and window ≤ the scope's final cap.
    const spendRows = sqliteJson(dbFile, `SELECT sc.scope_kind AS kind, sc.scope_id AS id, sc.window_start_ms AS w, SUM(l.actual_nanos) AS spend, COUNT(*) AS n
      FROM ledger l JOIN ledger_scope sc ON sc.seq = l.seq WHERE l.kind = 'settle' GROUP BY 1, 2, 3`);
    const capRows = [];
    const nanosOf = (d) => Math.round(Number(d) * 1e9);
    const capOf = (kind, scopeId) => {
      if (kind === 'global') return { name: 'global', max_budget: 1000 };
      if (kind === 'key') return caps.key.find((k) => k.id === scopeId);
      if (kind === 'team') return caps.team.find((t) => t.id === scopeId);
      if (kind === 'end_user') return caps.end_user.find((c) => c.id === scopeId.slice(scopeId.lastIndexOf('/') + 1));
      return undefined;
    };
    let capsOk = true;
    let hit = 0;
    for (const r of spendRows) {
      const c = capOf(r.kind, r.id);
      if (!c || c.max_budget === null || c.max_budget === undefined) continue;
      const cap = nanosOf(c.max_budget);
      const ok = r.spend <= cap;
      capsOk &&= ok;
      const ratio = r.spend / cap;
      if (ratio >= 0.9) hit++;
      capRows.push({ kind: r.kind, name: c.name, window_start_ms: r.w, spend: r.spend, cap, ratio: Number(ratio.toFixed(4)), ok });
    }
    // The live figures after recovery agree with the ledger (lifetime keys).
    let liveMismatch = 0;
    for (const k of caps.key) {
      if (k.budget_duration) continue;
      const led = spendRows.filter((r) => r.kind === 'key' && r.id === k.id).reduce((a, r) => a + r.spend, 0);
      if (Math.abs(nanosOf(k.spend) - led) > 1) liveMismatch++;
    }
    report.caps = capRows;
    const worst = [...capRows].sort((a, b) => b.ratio - a.ratio).slice(0, 6);
    check('caps: no budget exceeded (ledger spend per scope and window ≤ max_budget)', capsOk && capRows.length > 0 && liveMismatch === 0,
      `${capRows.length} budgeted scope-windows, ${hit} at ≥ 90 % of their cap; highest: ` +
      worst.map((r) => `${r.kind} ${r.name}${r.window_start_ms ? '@' + new Date(r.window_start_ms).toISOString().slice(11, 16) : ''} ${usd(r.spend)}/${usd(r.cap)}`).join(', ') +
      `; /key/info spend ≠ ledger for ${liveMismatch} key(s)`);

    // 3. RSS and descriptors of the last incarnation under load.
    report.samples = samples;
    const warm = report.warm;
    const after = report.after;
    const rssOk = warm && after && after.incarnation === warm.incarnation && after.rss_kb <= warm.rss_kb * 1.1;
    const fdOk = warm && after && after.incarnation === warm.incarnation && after.fds <= Math.ceil(warm.fds * 1.1);
    check('resources: RSS and descriptors after the load within 10 % of after warm-up', Boolean(rssOk && fdOk),
      warm && after ? `incarnation ${warm.incarnation}: RSS ${mb(warm.rss_kb)} after warm-up → ${mb(after.rss_kb)} after the load and ${sec(sched.idleMs)} idle (${((after.rss_kb / warm.rss_kb - 1) * 100).toFixed(1)} %); ` +
        `descriptors ${warm.fds} → ${after.fds}; heap in use ${mb(warm.heap_in_use_kb)} → ${mb(after.heap_in_use_kb)} ` +
        `(SQLite ${mb(warm.sqlite_kb)} → ${mb(after.sqlite_kb)}), freed but kept by malloc ${mb(warm.heap_free_kb)} → ${mb(after.heap_free_kb)}, ` +
        `metric series ${warm.metric_series} → ${after.metric_series}` : `missing sample (warm ${JSON.stringify(warm)}, after ${JSON.stringify(after)})`);

    // 4. No crash.
    const exits = gateways.map((g) => ({ n: g.n, intent: g.intent, exit: g.exit }));
    const unplanned = exits.filter((e) => !((e.intent === 'SIGKILL' && e.exit?.signal === 'SIGKILL') || (e.intent === 'SIGTERM' && e.exit?.code === 0)));
    const logText = fs.readFileSync(gwLog, 'utf8');
    const flagged = { explained: {}, unexplained: [] };
    const SEVERE = /\[(error|critical)\]|AddressSanitizer|LeakSanitizer|runtime error:|terminate called|Assertion|Aborted|Segmentation|stack smashing|double free/i;
    let inFill = false;
    for (const line of logText.split('\n')) {
      if (line.startsWith('===== soak: disk filled')) inFill = true;
      if (line.startsWith('===== soak: fill window closed')) inFill = false;
      if (!SEVERE.test(line)) continue;
      let why = null;
      if (/\[error\] ALERT budget_threshold /.test(line)) why = 'budget_threshold alerts (budgets near their caps, by design)';
      else if (inFill && /\[error\] ALERT ledger_unavailable /.test(line)) why = 'ledger_unavailable alert while the disk was full';
      else if (inFill && /disk is full|SQLITE_FULL|disk I\/O error|No space left/i.test(line)) why = 'store writes refused while the disk was full';
      if (why) { inc(flagged.explained, why); continue; }
      if (flagged.unexplained.length < 20) flagged.unexplained.push(line.slice(0, 300));
      else flagged.more = (flagged.more ?? 0) + 1;
    }
    report.exits = exits;
    report.log_findings = flagged;
    const mockAlive = mock.proc.alive;
    check('no crash: every gateway exit was our SIGKILL or SIGTERM (exit 0); the simulator never died; no unexplained ERROR/sanitizer/abort',
      unplanned.length === 0 && mockAlive && flagged.unexplained.length === 0,
      `${exits.length} incarnations: ${exits.filter((e) => e.intent === 'SIGKILL').length} SIGKILLed, ${exits.filter((e) => e.intent === 'SIGTERM' && e.exit?.code === 0).length} SIGTERM → 0; ` +
      `unplanned exits ${JSON.stringify(unplanned)}; simulator ${mockAlive ? 'alive' : 'DEAD'}; log: ${JSON.stringify(flagged.explained)} explained, ` +
      `${flagged.unexplained.length + (flagged.more ?? 0)} unexplained ${flagged.unexplained.slice(0, 5).join(' | ')}`);

    // 5. The chaos happened as planned (a soak whose faults silently did not fire proves nothing).
    const killed = exits.filter((e) => e.intent === 'SIGKILL').length;
    const fill = report.disk_fill ?? {};
    const windowKey = caps.key.find((k) => k.name === 'window-1h');
    const windows = spendRows.filter((r) => r.kind === 'key' && r.id === windowKey?.id).map((r) => ({ start: new Date(r.w).toISOString(), spend: r.spend }));
    const faultsSeen = Object.keys(report.scripts.behaviours).filter((f) => f !== 'success');
    // Never served unpaid: every request answered while the disk was full has its reservation.
    const ids = fillServed.filter(Boolean);
    const reservedIds = new Set(ids.length ? sqliteJson(dbFile, `SELECT DISTINCT request_id FROM ledger WHERE kind = 'reserve' AND request_id IN (${ids.map((x) => `'${x.replace(/'/g, '')}'`).join(',')})`).map((r) => r.request_id) : []);
    const unpaid = ids.filter((x) => !reservedIds.has(x)).length;
    check('chaos: the kills, the disk fill (fail closed, then recovery without a restart) and the clock step all happened',
      killed === sched.kills.length && fill.ledger_unavailable > 0 && unpaid === 0 && fill.recovered_after_ms !== null && fill.recovered_after_ms !== undefined &&
        Math.abs((report.clock_step?.observed_offset_ms ?? 0) - 3600000) < 60000 && windows.length >= 2 && faultsSeen.length === FAULTS.length + 1,
      `${killed} of ${sched.kills.length} planned SIGKILLs; while the disk was full ${fill.ledger_unavailable} paid requests refused 503 ledger_unavailable, ` +
      `${fill.paid_ok} served, ${ids.length - unpaid} of them with their reservation in the ledger (written before the disk filled or into ` +
      `space SQLite already held); paid requests served again ` +
      `${fill.recovered_after_ms} ms after it was freed; clock observed ${report.clock_step?.observed_offset_ms} ms ahead; the 1h-window key spent in ` +
      `${windows.length} windows ${windows.map((w) => `${w.start.slice(11, 16)}Z ${usd(w.spend)}`).join(', ')}; ${faultsSeen.length} fault kinds scripted`);

    report.window_key = { ...window, windows };
    report.recovered_per_incarnation = gateways.map((g) => g.recovered);
    report.mock = { requests_total: finalStats.requests_total, cancelled_total: finalStats.cancelled_total,
      models: Object.fromEntries(Object.entries(finalStats.models ?? {}).map(([k, m]) => [k, { requests: m.requests, succeeded: m.succeeded, failed: m.failed, cancelled: m.cancelled, streams: m.streams }])) };
    report.db_bytes = fs.statSync(dbFile).size + (fs.existsSync(dbFile + '-wal') ? fs.statSync(dbFile + '-wal').size : 0);
    report.checks = checks;
    report.elapsed_ms = at();
    report.log_file = o.keep ? gwLog : null;

    log('');
    for (const c of checks) log(`${c.ok ? 'PASS' : 'FAIL'} ${c.name}\n     ${c.figures}`);
    const passed = checks.filter((c) => c.ok).length;
    log(`${passed} passed, ${checks.length - passed} failed`);
    return report;
  } catch (e) {
    try { e.message += `\n--- gateway log (last 6000 chars) ---\n${fs.readFileSync(gwLog, 'utf8').slice(-6000)}`; } catch { /* no log yet */ }
    throw e;
  } finally {
    await cleanup();
  }
}

// ---------------------------------------------------------------------------------
// The report in bench/RESULTS.md

/// A markdown section for bench/RESULTS.md from runSoak's report.
export function renderMarkdown(r, { binary } = {}) {
  const d = new Date();
  const lines = [];
  const p = (s = '') => lines.push(s);
  const cell = (s) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');
  p(`## Chaos soak (issue 14, item 6) — ${d.toISOString().slice(0, 16)}Z, ${r.minutes} min, bench/soak.sh`);
  p();
  p(`- Machine: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${os.type()} ${os.release()}; ` +
    `load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} (shared with other builds)`);
  if (binary) p(`- Binaries: ${binary}`);
  p(`- Setup: tollgate-mock (1 thread) and tollgate (2 worker threads, SQLite store in a ${r.tmpfs_size} tmpfs, fixed port, ` +
    `LD_PRELOAD libfaketime with DONT_FAKE_MONOTONIC=1); seed ${r.seed} (SOAK_SEED replays the scripts and the request mix)`);
  p('- Models: `soak-chat` = 2 OpenAI deployments (up-chat-a, up-chat-b), fallbacks → `soak-fb` (Anthropic), context-window fallback → ' +
    '`soak-long`, content-policy fallback → `soak-fb`; `soak-claude` (Anthropic) → fallback `soak-chat`; `soak-embed` (embeddings). ' +
    'router_settings: num_retries 2, timeout 4 s, stream_timeout 3 s, allowed_fails 4, cooldown_time 1 s; global max_budget $1000 ' +
    '(every paid attempt is reserved and in the ledger). Prices are whole nano-dollars per token, so every bill is exact.');
  p(`- Load: ${r.workers} workers, each sending one request then pausing; keys with budgets near their caps (3 "near" keys, ` +
    'a capped team, a capped end user, a key with a 1 h `budget_duration`, and more made by the admin writer), topped up by ' +
    '`/key/update`, `/team/update`, `/customer/update` a few times a minute (caps only rise, so "spend ≤ final cap" is the check).');
  p();
  p('### Traffic');
  p();
  p('| kind | sent | outcomes |');
  p('|---|---:|---|');
  let total = 0;
  for (const [k, t] of Object.entries(r.traffic).sort()) {
    total += t.sent;
    const o = Object.entries(t.outcomes).sort((a, b) => b[1] - a[1]).map(([n, c]) => `${n}: ${c}`).join(', ');
    p(`| ${k} | ${t.sent} | ${cell(o)} |`);
  }
  p(`| **all** | **${total}** | |`);
  p();
  p(`Admin writes: ${Object.entries(r.admin).map(([k, v]) => `${k} ${v}`).join(', ')}.`);
  p();
  p(`Simulator: ${r.mock.requests_total} upstream requests (${r.mock.cancelled_total} cancelled by the gateway); per model ` +
    Object.entries(r.mock.models).map(([m, x]) => `${m} ${x.requests} (${x.succeeded} ok, ${x.failed} failed, ${x.cancelled} cancelled, ${x.streams} streams)`).join('; ') + '.');
  p(`Scripts: ${r.scripts.rounds} rounds; behaviours queued: ` +
    Object.entries(r.scripts.behaviours).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ') + '.');
  p();
  p('### Chaos timeline');
  p();
  for (const e of r.events) {
    const { at_ms, what, ...rest } = e;
    p(`- ${(at_ms / 1000).toFixed(1)} s: ${what}${Object.keys(rest).length ? ' — `' + JSON.stringify(rest) + '`' : ''}`);
  }
  p();
  p('### Checks');
  p();
  p('| check | result | figures |');
  p('|---|---|---|');
  for (const c of r.checks) p(`| ${cell(c.name)} | ${c.ok ? 'PASS' : '**FAIL**'} | ${cell(c.figures)} |`);
  const passed = r.checks.filter((c) => c.ok).length;
  p();
  p(`**${passed} passed, ${r.checks.length - passed} failed.**`);
  p();
  const last = r.samples.filter((x) => x.incarnation === r.after?.incarnation);
  if (last.length) {
    p(`RSS / descriptors (heap in use, SQLite, malloc free) of the last incarnation every 15 s: ` +
      `${last.map((x) => `${(x.rss_kb / 1024).toFixed(1)} MB/${x.fds} (${(x.heap_in_use_kb / 1024).toFixed(1)}, ${(x.sqlite_kb / 1024).toFixed(1)}, ${(x.heap_free_kb / 1024).toFixed(1)})`).join(', ')}; ` +
      `store at the end ${(r.db_bytes / 2 ** 20).toFixed(1)} MB (database + WAL).`);
    p();
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------
// Command line

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const args = process.argv.slice(2);
  const opts = {};
  let jsonOut;
  let writeResults = false;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split('=', 2);
    const val = () => inline ?? args[++i];
    switch (flag) {
      case '--minutes': opts.minutes = Number(val()); break;
      case '--workers': opts.workers = Number(val()); break;
      case '--seed': opts.seed = Number(val()); break;
      case '--tmpfs-dir': opts.tmpfsDir = val(); break;
      case '--tmpfs-size': opts.tmpfsSize = val(); break;
      case '--think-ms': opts.thinkMs = val().split(',').map(Number); break;
      case '--json': jsonOut = val(); break;
      case '--write-results': writeResults = true; break;
      case '--keep': opts.keep = true; break;
      default: console.error(`soak.mjs: unknown option ${args[i]}`); process.exit(2);
    }
  }
  runSoak(opts).then((report) => {
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(report, null, 1));
    if (writeResults) {
      const results = path.join(path.dirname(fileURLToPath(import.meta.url)), 'RESULTS.md');
      const rev = sh('git', ['-C', path.dirname(results), 'describe', '--always', '--dirty'], { allowFail: true }).stdout.trim();
      fs.appendFileSync(results, '\n' + renderMarkdown(report, { binary: `${process.env.TOLLGATE_BIN} (source ${rev})` }));
      console.log(`soak: report appended to ${results}`);
    }
    process.exit(report.checks.every((c) => c.ok) ? 0 : 1);
  }, (e) => {
    console.error(`soak: ${e.stack ?? e}`);
    process.exit(1);
  });
}
