#!/usr/bin/env node
// Scale-out benchmark (issue 9, "Performance"): budgeted requests through gateways sharing one
// PostgreSQL database and one Redis, side by side with one embedded instance (SQLite, in-process
// ledger), in one run on this machine:
//   1. latency at a fixed offered rate (bench/fixed_rate.mjs, open loop) against the embedded
//      instance and against one instance of the cluster, in interleaved rounds: the p50 each and
//      the difference (the added cost of the shared ledger: a Redis script to reserve, one to
//      settle, the reserve committed to Postgres before the upstream call);
//   2. closed-loop throughput (wrk, 32 connections) of the embedded instance and of one cluster
//      instance alone, and the ratio;
//   3. Redis commands per admitted attempt, from Redis's own INFO commandstats (evalsha, eval,
//      incrby on the ledger's keys) over the upstream requests the simulator counted.
// The cluster's other instances run (3 in all) but get no load: on a 2-core machine, loading all
// of them at once measures CPU sharing, not the ledger.
//
//   node bench/cluster_load.mjs [--build-dir build] [--rate 300] [--duration 5] [--rounds 3]
//                               [--wrk-duration 8] [--instances 3]
// Needs TOLLGATE_TEST_POSTGRES_URL and TOLLGATE_TEST_REDIS_URL (eval "$(scripts/services.sh start)"),
// wrk and redis-cli. Prints a markdown section on stdout; exit 1 when a goal is missed.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const opt = { buildDir: 'build', rate: 300, duration: 5, rounds: 3, wrkDuration: 8, instances: 3 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
  if (!(k in opt)) { console.error(`cluster_load: unknown option ${process.argv[i]}`); process.exit(2); }
  opt[k] = k === 'buildDir' ? process.argv[i + 1] : Number(process.argv[i + 1]);
}
process.env.TOLLGATE_BIN = path.resolve(ROOT, opt.buildDir, 'tollgate');
process.env.TOLLGATE_MOCK_BIN = path.resolve(ROOT, opt.buildDir, 'tollgate-mock');
const { Gateway, Mock, gatewayConfig, MASTER_KEY } = await import('../tests/e2e/harness.mjs');
const { Cluster, freshDatabase, dropDatabase, POSTGRES, REDIS } = await import('../tests/e2e/cluster.mjs');
if (!POSTGRES || !REDIS) {
  console.error('cluster_load: set TOLLGATE_TEST_POSTGRES_URL and TOLLGATE_TEST_REDIS_URL (eval "$(scripts/services.sh start)")');
  process.exit(2);
}
const log = (...a) => console.error('[cluster_load]', ...a);

const mock = await Mock.start();
const deployment = {
  model_name: 'bench-model',
  litellm_params: { model: 'openai/bench-model', api_base: `${mock.url}/v1`, api_key: 'sk-bench-upstream',
                    input_cost_per_token: 0.000001, output_cost_per_token: 0.000002 },
};
const prefix = `bench${process.pid}:`;
const db = freshDatabase();
let embedded, cluster;
const redisCli = (...a) => execFileSync('redis-cli', ['-u', REDIS, ...a]).toString();
function redisCalls() {
  const out = {};
  for (const line of redisCli('INFO', 'commandstats').split('\n')) {
    const m = line.match(/^cmdstat_(\w+):calls=(\d+)/);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}
function fixedRate(url, key) {
  const r = spawnSync('node', [path.join(ROOT, 'bench/fixed_rate.mjs'), '--url', `${url}/v1/chat/completions`, '--rate', String(opt.rate),
    '--duration', String(opt.duration), '--key', key, '--model', 'bench-model', '--connections', '32'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`fixed_rate failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}
function wrk(url, key) {
  const r = spawnSync('wrk', ['-t', '2', '-c', '32', '-d', `${opt.wrkDuration}s`, '-s', path.join(ROOT, 'bench/chat.lua'), `${url}/v1/chat/completions`],
    { encoding: 'utf8', env: { ...process.env, BENCH_KEY: key, BENCH_MODEL: 'bench-model' } });
  const m = r.stdout.match(/Requests\/sec:\s+([\d.]+)/);
  const non2xx = Number(r.stdout.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0);
  return { rps: m ? Number(m[1]) : 0, non2xx };
}
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

try {
  embedded = await Gateway.start(gatewayConfig({ model_list: [deployment] }));
  cluster = await Cluster.start(gatewayConfig({
    model_list: [deployment],
    general_settings: { database_url: db.url },
    router_settings: { redis_url: REDIS },
    tollgate_settings: { redis_key_prefix: prefix },
  }), opt.instances);
  const one = cluster.gateways[0];
  const big = { max_budget: 1000000 };
  const kEmb = (await embedded.generateKey(big)).key;
  const kClu = (await one.generateKey(big)).key;
  await new Promise((r) => setTimeout(r, 500));

  log('warm-up');
  wrk(embedded.url, kEmb);
  wrk(one.url, kClu);

  log(`fixed rate ${opt.rate} req/s × ${opt.duration} s, ${opt.rounds} interleaved rounds`);
  const lat = { embedded: [], cluster: [] };
  for (let r = 0; r < opt.rounds; r++) {
    lat.embedded.push(fixedRate(embedded.url, kEmb));
    lat.cluster.push(fixedRate(one.url, kClu));
  }
  for (const [name, runs] of Object.entries(lat))
    for (const x of runs) if (!x.ok) throw new Error(`${name}: no successful request: ${JSON.stringify(x.statuses)} ${JSON.stringify(x.error_samples ?? [])}`);
  const p50e = median(lat.embedded.map((x) => x.latency_ms.p50));
  const p50c = median(lat.cluster.map((x) => x.latency_ms.p50));
  const p99e = median(lat.embedded.map((x) => x.latency_ms.p99));
  const p99c = median(lat.cluster.map((x) => x.latency_ms.p99));

  log('throughput (wrk, 32 connections), each alone');
  const before = redisCalls();
  const upBefore = (await mock.model('bench-model')).requests;
  const tClu = wrk(one.url, kClu);
  const upAfter = (await mock.model('bench-model')).requests;
  const after = redisCalls();
  const tEmb = wrk(embedded.url, kEmb);
  const attempts = upAfter - upBefore;
  const delta = (n) => (after[n] ?? 0) - (before[n] ?? 0);
  const scripts = delta('evalsha') + delta('eval');
  const perAttempt = attempts ? (scripts + delta('incrby')) / attempts : NaN;
  const other = Object.keys(after).filter((k) => !['evalsha', 'eval', 'incrby', 'info'].includes(k))
    .map((k) => [k, delta(k)]).filter(([, n]) => n > 0);

  const added = p50c - p50e;
  const ratio = tEmb.rps ? tClu.rps / tEmb.rps : 0;
  const goals = [
    ['added p50 per request ≤ 0.3 ms over embedded', `${added.toFixed(3)} ms (${p50c.toFixed(3)} vs ${p50e.toFixed(3)})`, added <= 0.3],
    ['throughput per instance ≥ 70% of embedded', `${(ratio * 100).toFixed(0)}% (${tClu.rps.toFixed(0)} vs ${tEmb.rps.toFixed(0)} req/s)`, ratio >= 0.7],
    ['Redis round trips per admitted attempt ≤ 2', `${perAttempt.toFixed(3)} (${scripts} scripts + ${delta('incrby')} INCRBY over ${attempts} attempts)`, perAttempt <= 2.01],
  ];
  const out = [];
  out.push(`## Scale-out: ${opt.instances} instances on PostgreSQL + Redis vs one embedded instance (${new Date().toISOString()})`, '');
  out.push('| | embedded (SQLite, in-process ledger) | cluster instance (Postgres + Redis) |', '|---|---|---|');
  out.push(`| p50 latency at ${opt.rate} req/s (median of ${opt.rounds} rounds) | ${p50e.toFixed(3)} ms | ${p50c.toFixed(3)} ms |`);
  out.push(`| p99 latency | ${p99e.toFixed(3)} ms | ${p99c.toFixed(3)} ms |`);
  out.push(`| throughput, wrk 32 connections, ${opt.wrkDuration} s | ${tEmb.rps.toFixed(0)} req/s | ${tClu.rps.toFixed(0)} req/s |`);
  out.push(`| non-2xx | ${tEmb.non2xx} | ${tClu.non2xx} |`, '');
  out.push('| goal | measured | result |', '|---|---|---|');
  for (const [g, m, ok] of goals) out.push(`| ${g} | ${m} | **${ok ? 'PASS' : 'FAIL'}** |`);
  out.push('', `Other Redis commands during the throughput run (not round trips: Redis's commandstats also counts the commands each script runs inside the server, and the background duties' lease renewals, recovery and circuit polls): ${other.map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}.`);
  out.push(`Load average at the end: ${execFileSync('cat', ['/proc/loadavg']).toString().trim()}.`);
  console.log(out.join('\n'));
  process.exitCode = goals.every(([, , ok]) => ok) ? 0 : 1;
} finally {
  await embedded?.stop();
  await cluster?.stop();
  await mock.stop?.();
  dropDatabase(db);
  for (const k of redisCli('--scan', '--pattern', `${prefix}*`).split('\n').filter(Boolean)) redisCli('DEL', k);
}
