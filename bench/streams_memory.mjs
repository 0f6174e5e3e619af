#!/usr/bin/env node
// Memory under many concurrent SSE streams (issue 16): Tollgate's RSS while N streaming chat
// completions are open at once through a budgeted virtual key, and after they end, over several
// rounds, so that a peak, a return to idle and growth across rounds all show.
//
//   node bench/streams_memory.mjs [--build-dir build] [--streams 10000] [--rounds 3]
//                                 [--stream-seconds 10] [--idle-seconds 6] [--json FILE]
//
// Each stream is paced by the simulator (tokens_per_second), so all N are open together for
// about --stream-seconds. RSS (VmRSS of the gateway) is sampled every 100 ms; "after" is read
// once the gateway has been idle for --idle-seconds (its idle trim runs after 1 s of idleness).
// Needs about 2N + 100 descriptors in the gateway and N in this process and the simulator: run
// under `ulimit -n 65536` (bench/streams_memory.sh does). Prints a markdown report.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : '1']);
  return acc;
}, []));
const BUILD = path.resolve(args['build-dir'] ?? path.join(here, '..', 'build'));
process.env.TOLLGATE_BIN ??= path.join(BUILD, 'tollgate');
process.env.TOLLGATE_MOCK_BIN ??= path.join(BUILD, 'tollgate-mock');
const N = Number(args.streams ?? 10000);
const ROUNDS = Number(args.rounds ?? 3);
const STREAM_S = Number(args['stream-seconds'] ?? 10);
const IDLE_S = Number(args['idle-seconds'] ?? 6);
const TOKENS = 40;

const { Mock, Gateway, gatewayConfig, openaiDeployment, sleep } = await import('../tests/e2e/harness.mjs');

const rssKb = (pid) => {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
    return m ? Number(m[1]) : 0;
  } catch { return 0; }
};
const mb = (kb) => (kb / 1024).toFixed(1);

const mock = await Mock.start();
const upstream = `stream-up?tokens_per_second=${(TOKENS / STREAM_S).toFixed(3)}&completion_tokens=${TOKENS}`;
const gw = await Gateway.start(gatewayConfig({
  model_list: [openaiDeployment(mock, 'stream-model', upstream, { input_cost_per_token: 0.000001, output_cost_per_token: 0.000002 })],
  tollgate_settings: { worker_threads: 2 },
  router_settings: { num_retries: 2 },
}));
const pid = gw.proc.child.pid;
const key = (await gw.generateKey({ max_budget: 1000000 })).key;
const u = new URL(gw.url);
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const STREAM = args['no-stream'] === undefined;
const body = JSON.stringify({ model: 'stream-model', stream: STREAM, stream_options: { include_usage: true }, max_tokens: 64, messages: [{ role: 'user', content: 'Tell me a story about a gate.' }] });

/// One streaming request: resolves {ok, bytes, done} when the response ends.
function stream() {
  return new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, path: '/v1/chat/completions', method: 'POST', agent,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'content-length': Buffer.byteLength(body) } }, (res) => {
      let bytes = 0, tail = '';
      let text = '';
      res.on('data', (d) => {
        bytes += d.length;
        tail = (tail + d.toString('latin1')).slice(-64);
        if (res.statusCode !== 200 && text.length < 400) text += d.toString('utf8');
      });
      res.on('end', () => resolve({ ok: res.statusCode === 200 && (!STREAM || tail.includes('[DONE]')), status: res.statusCode, bytes, text }));
      res.on('error', () => resolve({ ok: false, status: res.statusCode, bytes }));
    });
    req.on('error', (e) => resolve({ ok: false, status: 0, error: e.code }));
    req.end(body);
  });
}

await sleep(1500);
const idleKb = rssKb(pid);
const rounds = [];
for (let r = 1; r <= ROUNDS; r++) {
  let peak = 0, open = true;
  const sampler = (async () => { while (open) { peak = Math.max(peak, rssKb(pid)); await sleep(100); } })();
  const t0 = performance.now();
  const all = [];
  // Opened over about 4 s (batches of N/40 every 100 ms), so that the listen and SYN backlogs
  // (somaxconn, tcp_max_syn_backlog: 4096 and 2048 here) are not what is measured.
  for (let i = 0; i < N; i++) {
    all.push(stream());
    if ((i + 1) % Math.max(1, Math.floor(N / 40)) === 0) await sleep(100);
  }
  const results = await Promise.all(all);
  const ms = performance.now() - t0;
  open = false;
  await sampler;
  await sleep(IDLE_S * 1000);
  const afterKb = rssKb(pid);
  const heap = (await gw.admin('/tollgate/stats')).process ?? {};
  const metrics = (await gw.fetch('/metrics', { method: 'GET' })).text;
  heap.store_bytes = Number(metrics.match(/tollgate_heap_bytes\{state="store"\} (\S+)/)?.[1] ?? 0);
  const ok = results.filter((x) => x.ok).length;
  const errors = {};
  for (const x of results.filter((y) => !y.ok)) errors[x.error ?? x.status] = (errors[x.error ?? x.status] ?? 0) + 1;
  rounds.push({ round: r, ok, failed: N - ok, errors, seconds: ms / 1000, peakKb: peak, afterKb, heapInUseKb: (heap.heap_in_use_bytes ?? 0) / 1024 });
  const sample = results.find((y) => !y.ok && y.text);
  if (sample) process.stderr.write(`  a failure: ${sample.status} ${sample.text.slice(0, 300)}\n`);
  process.stderr.write(`round ${r}: ${ok}/${N} ok in ${(ms / 1000).toFixed(1)} s, peak ${mb(peak)} MB, after ${mb(afterKb)} MB (heap in use ${mb((heap.heap_in_use_bytes ?? 0) / 1024)} MB, SQLite ${mb(heap.store_bytes / 1024)} MB) ${JSON.stringify(errors)}\n`);
}
const stats = await gw.admin('/tollgate/stats');
await gw.stop();
await mock.proc.stop();

const peakMax = Math.max(...rounds.map((x) => x.peakKb));
const lastAfter = rounds.at(-1).afterKb;
const lines = [];
lines.push(`### ${N.toLocaleString('en-US')} concurrent SSE streams (bench/streams_memory.mjs, ${new Date().toISOString()})`);
lines.push('');
lines.push(`Budgeted virtual key, one priced OpenAI-compatible deployment on the simulator, ${TOKENS} tokens per stream paced over ~${STREAM_S} s, gateway with 2 worker threads. Idle RSS before the first round: **${mb(idleKb)} MB**.`);
lines.push('');
lines.push('| round | streams whole ([DONE]) | failed | wall s | peak RSS MB | per stream KB (peak − idle) | RSS after ' + IDLE_S + ' s idle MB | live heap after MB |');
lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const x of rounds)
  lines.push(`| ${x.round} | ${x.ok.toLocaleString('en-US')} | ${x.failed}${x.failed ? ' ' + JSON.stringify(x.errors) : ''} | ${x.seconds.toFixed(1)} | ${mb(x.peakKb)} | ${((x.peakKb - idleKb) / N).toFixed(1)} | ${mb(x.afterKb)} | ${mb(x.heapInUseKb)} |`);
lines.push('');
lines.push('| goal | measured | result |');
lines.push('|---|---|---|');
lines.push(`| ${N.toLocaleString('en-US')} concurrent streams ≤ 300 MB RSS | peak ${mb(peakMax)} MB | **${peakMax <= 300 * 1024 ? 'PASS' : 'FAIL'}** |`);
lines.push(`| after the load, RSS within 2x idle | ${mb(lastAfter)} MB vs 2 × ${mb(idleKb)} MB | **${lastAfter <= 2 * idleKb ? 'PASS' : 'FAIL'}** |`);
const grow = rounds.length > 1 ? rounds.at(-1).afterKb - rounds[0].afterKb : 0;
lines.push(`| repeated rounds do not grow it (last − first round's after, ≤ 10 % of idle) | ${grow >= 0 ? '+' : ''}${mb(grow)} MB | **${grow <= 0.1 * idleKb ? 'PASS' : 'FAIL'}** |`);
lines.push(`| every stream whole | ${rounds.reduce((a, x) => a + x.ok, 0)} of ${N * ROUNDS} | **${rounds.every((x) => x.failed === 0) ? 'PASS' : 'FAIL'}** |`);
lines.push('');
lines.push(`Gateway heap at the end (/tollgate/stats): in use ${mb((stats.process?.heap_in_use_bytes ?? 0) / 1024)} MB, free ${mb((stats.process?.heap_free_bytes ?? 0) / 1024)} MB.`);
const report = lines.join('\n') + '\n';
process.stdout.write(report);
if (args.json) fs.writeFileSync(args.json, JSON.stringify({ n: N, idleKb, rounds, stats: stats.process }, null, 2));
process.exit(rounds.every((x) => x.failed === 0) ? 0 : 1);
