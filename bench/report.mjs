#!/usr/bin/env node
// Turns the raw outputs of bench/run.sh (a results directory) into the markdown report:
//   node bench/report.mjs RESULTS_DIR [--write-results bench/RESULTS.md]
// Prints the report on stdout; with --write-results it also appends it to the given file as a
// dated section "## Run YYYY-MM-DD …", replacing an existing section of the same date.
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const dir = args[0];
const wi = args.indexOf('--write-results');
const resultsFile = wi >= 0 ? args[wi + 1] : null;
if (!dir) { console.error('usage: report.mjs RESULTS_DIR [--write-results FILE]'); process.exit(2); }

const read = (f) => { try { return fs.readFileSync(path.join(dir, f), 'utf8'); } catch { return null; } };
const readJson = (f) => { const s = read(f); return s ? JSON.parse(s) : null; };
const readNum = (f) => { const s = read(f); return s === null ? null : Number(s.trim()); };
const meta = readJson('meta.json');

function toMs(v, unit) { const x = Number(v); return unit === 'us' ? x / 1000 : unit === 's' ? x * 1000 : x; }
function parseWrk(text) {
  if (!text) return null;
  const r = {};
  let m;
  r.rps = (m = text.match(/Requests\/sec:\s+([\d.]+)/)) ? Number(m[1]) : null;
  m = text.match(/(\d+) requests in ([\d.]+)(us|ms|s|m)\b/);
  r.requests = m ? Number(m[1]) : null;
  r.seconds = m ? (m[3] === 'm' ? Number(m[2]) * 60 : toMs(m[2], m[3]) / 1000) : null;
  r.non2xx = (m = text.match(/Non-2xx or 3xx responses: (\d+)/)) ? Number(m[1]) : 0;
  m = text.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/);
  r.socket = m ? { connect: +m[1], read: +m[2], write: +m[3], timeout: +m[4] } : { connect: 0, read: 0, write: 0, timeout: 0 };
  r.socketTotal = r.socket.connect + r.socket.read + r.socket.write + r.socket.timeout;
  r.pct = {};
  for (const mm of text.matchAll(/^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$/gm)) r.pct[mm[1]] = toMs(mm[2], mm[3]);
  // Successful responses per second: wrk's Requests/sec also counts error responses, which a
  // gateway may answer much faster (e.g. 429 while its deployment cools down).
  r.ok_rps = r.requests !== null && r.seconds ? (r.requests - r.non2xx) / r.seconds : r.rps;
  return r;
}

function pct(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

// Pools the fixed-rate rounds of one target: percentiles over all samples of all rounds.
function pooledFixed(t) {
  const rounds = [];
  for (let r = 1; ; r++) {
    const j = readJson(`${t}-fixed-r${r}.json`);
    if (!j) break;
    const text = read(`${t}-fixed-r${r}.samples`) || '';
    rounds.push({ json: j, samples: text.split('\n').filter(Boolean).map(Number) });
  }
  if (!rounds.length) return null;
  const all = Float64Array.from(rounds.flatMap((x) => x.samples)).sort();
  return {
    rounds: rounds.length,
    achieved_rps: Math.min(...rounds.map((x) => x.json.achieved_rps)),
    sent: rounds.reduce((a, x) => a + x.json.sent, 0),
    ok: rounds.reduce((a, x) => a + x.json.ok, 0),
    non2xx: rounds.reduce((a, x) => a + x.json.non2xx, 0),
    errors: rounds.reduce((a, x) => a + x.json.errors, 0),
    statuses: rounds.reduce((a, x) => { for (const [k, v] of Object.entries(x.json.statuses)) a[k] = (a[k] || 0) + v; return a; }, {}),
    latency_ms: { p50: pct(all, 50), p90: pct(all, 90), p99: pct(all, 99), max: pct(all, 100) },
    round_p50: rounds.map((x) => x.json.latency_ms.p50),
    send_lag_ms: { p99: Math.max(...rounds.map((x) => x.json.send_lag_ms.p99)) },
  };
}

const targets = ['direct', 'nginx', 'tollgate', 'tollgate+budget', 'tollgate+telemetry'];
if (read('portkey-wrk.txt')) targets.push('portkey');  // bench/run.sh --portkey: the peer
const T = {};
for (const t of targets) {
  T[t] = {
    wrk: parseWrk(read(`${t}-wrk.txt`)),
    stream: parseWrk(read(`${t}-stream.txt`)),
    fixed: pooledFixed(t),
    recovery: (read(`${t}-recovery.txt`) || '').split('\n').filter(Boolean).map((l) => l.split(' ')),
    hwm: readNum(`${t}-hwm-kb.txt`),
    rss: readNum(`${t}-rss-kb.txt`),
    upstream: readNum(`${t}-upstream-requests.txt`),
    cpu: readNum(`${t}-cpu-s.txt`),
  };
}
const gen = readJson('generator-max.json');
const B = 'tollgate+budget';

const f1 = (x) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(1));
const f2 = (x) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(2));
const f3 = (x) => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(3));
const int = (x) => (x === null || x === undefined ? 'n/a' : Math.round(x).toLocaleString('en-US'));
const mb = (kb) => (kb === null || kb === undefined ? 'n/a' : (kb / 1024).toFixed(1) + ' MB');
const signed = (x) => (x === null || Number.isNaN(x) ? 'n/a' : (x >= 0 ? '+' : '') + x.toFixed(3));
const pass = (ok) => (ok ? '**PASS**' : '**FAIL**');

const lines = [];
const out = (s = '') => lines.push(s);

out(`## Run ${meta.date} (${meta.time_utc}) — ${meta.uname}, ${meta.nproc} CPUs`);
out();
out(`- Machine: ${meta.cpu}, ${meta.nproc} CPUs (\`nproc\`), ${meta.mem_total} RAM; \`uname -srm\`: ${meta.uname}`);
out(`- Tools: ${meta.wrk}; nginx ${meta.nginx}; node ${meta.node}; Tollgate binary built ${meta.tollgate_built} (${meta.build_type || 'unknown'} build), source tree at run time: ${meta.tollgate_commit}`);
out(`- Setup: tollgate-mock ${meta.mock_threads} threads, zero latency; Tollgate ${meta.tollgate_threads} worker threads; ` +
    `nginx ${meta.nginx_workers} worker processes (upstream keepalive 64, access_log off). All on the same ${meta.nproc} CPUs as the load generators, nothing pinned.`);
out(`- Load: throughput = \`wrk -t${meta.wrk_threads} -c${meta.conns} -d${meta.duration_s}s\` after a ${meta.warmup_s} s warm-up; ` +
    `latency = bench/fixed_rate.mjs, open loop at ${meta.rate} req/s, ${meta.rounds} rounds × ${meta.lat_duration_s} s per target interleaved (direct, nginx, tollgate, tollgate+budget, direct, …) and pooled, ≤ ${meta.conns} keep-alive sockets; ` +
    `body: non-streaming chat completion, max_tokens 16, bearer key.`);
out(`- Targets: direct = tollgate-mock; nginx = plain reverse proxy; tollgate = Tollgate with the master key (no budget scope: no reservation, no ledger record, only a spend-log row); ` +
    `${B} = the same Tollgate process with a virtual key created by \`POST /key/generate {"max_budget":1000000}\`: an atomic reservation at the key scope, a durable reserve record before the upstream call (written to the ledger journal; docs/storage.md) and a settle record after it, per request. ` +
    'The bench model is priced (input $0.000001, output $0.000002 per token) for both Tollgate targets.');
out();

out(`### Throughput at ${meta.conns} connections (wrk)`);
out();
out('| target | req/s (2xx) | wrk Requests/sec | p50 ms | p90 ms | p99 ms | requests | non-2xx | socket errors |' + (meta.stream ? ' streaming req/s (2xx) |' : ''));
out('|---|---:|---:|---:|---:|---:|---:|---:|---:|' + (meta.stream ? '---:|' : ''));
for (const t of targets) {
  const w = T[t].wrk, s = T[t].stream;
  out(`| ${t} | ${int(w?.ok_rps)} | ${int(w?.rps)} | ${f2(w?.pct['50'])} | ${f2(w?.pct['90'])} | ${f2(w?.pct['99'])} | ${int(w?.requests)} | ${w?.non2xx ?? 'n/a'} | ${w?.socketTotal ?? 'n/a'} |` +
      (meta.stream ? ` ${int(s?.ok_rps)}${s && (s.non2xx || s.socketTotal) ? ` (${s.non2xx} non-2xx, ${s.socketTotal} socket errors)` : ''} |` : ''));
}
out();
out('(Latency columns here are under saturation, closed loop; the fixed-rate table below is the latency measure.)');
out();
out('CPU time of the target process(es) during the throughput run (utime + stime from /proc; nginx: master + workers). ' +
    'Less sensitive than req/s to other load on the machine:');
out();
out('| target | CPU s during the run | CPU µs per request |');
out('|---|---:|---:|');
for (const t of targets) {
  const w = T[t].wrk;
  out(`| ${t}${t === 'direct' ? ' (tollgate-mock)' : ''}${t === B ? ' (the same process, incl. its store writer thread)' : ''} | ${f2(T[t].cpu)} | ${w?.requests ? f1((T[t].cpu * 1e6) / w.requests) : 'n/a'} |`);
}
out();

const d = T.direct.fixed, n = T.nginx.fixed, g = T.tollgate.fixed;
const added = (x, p) => (x && d ? x.latency_ms[p] - d.latency_ms[p] : null);
out(`### Latency at a fixed offered rate of ${meta.rate} req/s (open loop)`);
out();
out('| target | achieved req/s (min of rounds) | p50 ms | p90 ms | p99 ms | max ms | added p50 | added p90 | added p99 | p50 per round | non-2xx | errors | send lag p99 ms |');
out('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|');
for (const t of targets) {
  const x = T[t].fixed;
  if (!x) { out(`| ${t} | n/a |||||||||||`); continue; }
  const a = (p) => (t === 'direct' ? '—' : signed(added(x, p)));
  out(`| ${t} | ${f1(x.achieved_rps)} | ${f3(x.latency_ms.p50)} | ${f3(x.latency_ms.p90)} | ${f3(x.latency_ms.p99)} | ${f2(x.latency_ms.max)} | ${a('p50')} | ${a('p90')} | ${a('p99')} | ${x.round_p50.map(f3).join(' / ')} | ${x.non2xx} | ${x.errors} | ${f2(x.send_lag_ms.p99)} |`);
}
out();
out('Latency is measured by the generator from handing the request to `http.request()` to the last body byte, ' +
    `percentiles over all ${meta.rounds} rounds' samples; "added" = target − direct at the same percentile, in ms.`);
out();

out('### Memory');
out();
out('| process | idle RSS (after start) | RSS after the runs | peak RSS (VmHWM) |');
out('|---|---:|---:|---:|');
out(`| tollgate-mock (direct target) | — | ${mb(T.direct.rss)} | ${mb(T.direct.hwm)} |`);
out(`| nginx (master + ${meta.nginx_workers} workers, summed) | ${mb(meta.nginx_idle_rss_kb)} | ${mb(T.nginx.rss)} | ${mb(T.nginx.hwm)} |`);
out(`| tollgate (serves both Tollgate targets) | ${mb(meta.tollgate_idle_rss_kb)} | ${mb(T.tollgate.rss)} | ${mb(T.tollgate.hwm)} |`);
if (T.portkey) out(`| portkey (Node) | ${mb(meta.portkey_idle_rss_kb)} | ${mb(T.portkey.rss)} | ${mb(T.portkey.hwm)} |`);
out();

const thrRatio = T.tollgate.wrk?.ok_rps && T.nginx.wrk?.ok_rps ? T.tollgate.wrk.ok_rps / T.nginx.wrk.ok_rps : null;
const gA = { p50: added(g, 'p50'), p90: added(g, 'p90'), p99: added(g, 'p99') };
const nA = { p50: added(n, 'p50'), p90: added(n, 'p90'), p99: added(n, 'p99') };
const addRatio = nA.p50 > 0 ? gA.p50 / nA.p50 : null;
out('### Ratios');
out();
out(`- Throughput (2xx req/s) tollgate / nginx: **${f2(thrRatio)}** (${int(T.tollgate.wrk?.ok_rps)} / ${int(T.nginx.wrk?.ok_rps)}); tollgate / direct: ${f2(T.tollgate.wrk?.ok_rps / T.direct.wrk?.ok_rps)}; nginx / direct: ${f2(T.nginx.wrk?.ok_rps / T.direct.wrk?.ok_rps)}` +
    (meta.stream ? `; streaming tollgate / nginx: ${f2(T.tollgate.stream?.ok_rps / T.nginx.stream?.ok_rps)}` : ''));
out(`- Tollgate added latency vs direct: p50 ${signed(gA.p50)} ms, p90 ${signed(gA.p90)} ms, p99 ${signed(gA.p99)} ms`);
out(`- nginx added latency vs direct: p50 ${signed(nA.p50)} ms, p90 ${signed(nA.p90)} ms, p99 ${signed(nA.p99)} ms`);
out(`- Added p50 tollgate / nginx: **${addRatio === null ? 'n/a (nginx added p50 ≤ 0)' : f2(addRatio)}**` +
    (nA.p90 > 0 ? `; added p90: ${f2(gA.p90 / nA.p90)}` : '') + (nA.p99 > 0 ? `; added p99: ${f2(gA.p99 / nA.p99)}` : ''));
out();

// ---- Admission + durable ledger (issue 3, "Performance")
const b = T[B].fixed;
const vsTg = (p) => (b && g ? b.latency_ms[p] - g.latency_ms[p] : null);
const bA = { p50: vsTg('p50'), p90: vsTg('p90'), p99: vsTg('p99') };
const cpuPer = (t) => (T[t].wrk?.requests && T[t].cpu !== null ? (T[t].cpu * 1e6) / T[t].wrk.requests : null);
const gc = (f) => readJson(f)?.group_commit ?? null;
const gcEnd = gc('tg-stats-end.json'), gcThr0 = gc('tg-stats-before-budget-throughput.json'), gcThr1 = gc('tg-stats-after-throughput.json');
const storeWritable = readJson('tg-stats-end.json')?.store_writable;
const keyInfo = readJson('budget-key-info.json');
out(`### Admission + durable ledger: ${B} vs tollgate (issue 3)`);
out();
out('| figure | tollgate (master key) | tollgate+budget | added by admission + ledger |');
out('|---|---:|---:|---:|');
for (const p of ['p50', 'p90', 'p99']) {
  const us = bA[p] === null ? 'n/a' : `${(bA[p] * 1000) >= 0 ? '+' : ''}${(bA[p] * 1000).toFixed(0)} µs`;
  out(`| fixed-rate ${p} ms | ${f3(g?.latency_ms[p])} | ${f3(b?.latency_ms[p])} | ${signed(bA[p])} ms (${us}) |`);
}
out(`| fixed-rate p50 per round ms | ${g ? g.round_p50.map(f3).join(' / ') : 'n/a'} | ${b ? b.round_p50.map(f3).join(' / ') : 'n/a'} | ${g && b ? b.round_p50.map((x, i) => signed(x - g.round_p50[i])).join(' / ') : 'n/a'} |`);
out(`| throughput req/s (2xx) at ${meta.conns} connections | ${int(T.tollgate.wrk?.ok_rps)} | ${int(T[B].wrk?.ok_rps)} | ratio ${f2(T[B].wrk?.ok_rps / T.tollgate.wrk?.ok_rps)} |`);
const dCpu = cpuPer(B) !== null && cpuPer('tollgate') !== null ? cpuPer(B) - cpuPer('tollgate') : null;
out(`| CPU µs per request (throughput run) | ${f1(cpuPer('tollgate'))} | ${f1(cpuPer(B))} | ${dCpu === null ? 'n/a' : (dCpu >= 0 ? '+' : '') + dCpu.toFixed(1)} |`);
out();
out('"added" = tollgate+budget − tollgate at the same percentile of the pooled fixed-rate samples: the same process, model and upstream; only the key differs. ' +
    'At p50 the difference is of the order of the round-to-round spread; look at the per-round differences.');
out();
const gcRow = (label, x) => out(`| ${label} | ${x ? int(x.batches) : 'n/a'} | ${x ? int(x.records) : 'n/a'} | ${x ? int(x.ledger_records) : 'n/a'} | ${x ? int(x.spend_rows) : 'n/a'} | ${x && x.batches ? f2(x.records / x.batches) : 'n/a'} | ${x?.max_batch ?? 'n/a'} | ${x?.p50_us ?? 'n/a'} | ${x?.p99_us ?? 'n/a'} | ${x?.max_us ?? 'n/a'} | ${x ? (x.failed_batches ?? 0) + ' / ' + (x.dropped_spend_rows ?? 0) : 'n/a'} |`);
const diff = (a, z) => (a && z ? { batches: z.batches - a.batches, records: z.records - a.records, ledger_records: z.ledger_records - a.ledger_records,
  spend_rows: z.spend_rows - a.spend_rows, max_batch: null, p50_us: null, p99_us: null, max_us: null } : null);
out('Ledger writes (`GET /tollgate/stats`). Latency = from appending a ledger record to its being durable (the journal\'s write; the database\'s commit without the journal): what a request waits for before its upstream call, ' +
    'p50/p99/max over the last 65,536 ledger records of the process; counts are cumulative since start:');
out();
out('| snapshot | batches | records | ledger records | spend rows | records per batch | max batch | p50 µs | p99 µs | max µs | failed batches / dropped spend rows |');
out('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
gcRow('after the tollgate+budget throughput runs (wrk, 32 conns)', gcThr1);
gcRow('after all runs (incl. the fixed-rate rounds)', gcEnd);
const dThr = diff(gcThr0, gcThr1), dFix = diff(gcThr1, gcEnd);
if (dThr) gcRow(`tollgate+budget throughput phase only (difference)`, dThr);
if (dFix) gcRow(`fixed-rate phase only (difference; all 4 targets)`, dFix);
out();
out(`Store writable at the end: ${storeWritable ?? 'n/a'}.` +
    (keyInfo?.info ? ` Budgeted key after the runs: spend $${keyInfo.info.spend}, reserved $${keyInfo.info.reserved_spend ?? 'n/a'}, max_budget $${keyInfo.info.max_budget}.` : ''));
out();

// ---- Micro benchmark
const micro = readJson('micro.json');
const mb1 = micro?.benchmarks?.filter((x) => x.run_type !== 'aggregate') ?? [];
const nsPer = (x) => (x.items_per_second ? 1e9 / x.items_per_second : x.real_time);
const scopeOnly = mb1.find((x) => x.name.startsWith('BM_ScopeBuildOnly'));
const primary = mb1.find((x) => x.name === 'BM_ReserveSettle/64/real_time/threads:1');
if (micro) {
  out(`### Ledger micro benchmark (bench/ledger_bench.cpp, 1M keys in the ledger)`);
  out();
  out(`\`${path.basename(meta.micro_bin || 'tollgate_micro_bench')}\` built ${(read('micro-built.txt') || '').trim() || 'n/a'}, run after the load runs on the same machine. ` +
      'One admission = `reserve` at key + team + global scopes and `settle`, a random key of 1,000,000 per iteration. ' +
      'Arg = lock shards (64 = the default). ns per admission = 1e9 / items per second (all threads together; 2 threads share the 2 CPUs with nothing else of the benchmark). "net" subtracts the cost of picking a key and copying its id (1 thread only).');
  out();
  out('| benchmark | iterations | ns per admission (wall) | CPU ns per iteration | net of BM_ScopeBuildOnly |');
  out('|---|---:|---:|---:|---:|');
  for (const x of mb1) {
    const isRs = x.name.startsWith('BM_ReserveSettle');
    out(`| ${x.name} | ${int(x.iterations)} | ${isRs ? f1(nsPer(x)) : f1(x.real_time)} | ${f1(x.cpu_time)} | ${isRs && scopeOnly && x.threads === 1 ? f1(nsPer(x) - scopeOnly.real_time) : '—'} |`);
  }
  out();
}

// ---- Issue 16: everything on, side by side with nginx (and the peer when measured)
{
  const nRps = T.nginx.wrk?.ok_rps, bx = T[B].fixed;
  const bAdd = { p50: added(bx, 'p50'), p99: added(bx, 'p99') };
  const rB = nRps && T[B].wrk?.ok_rps ? T[B].wrk.ok_rps / nRps : null;
  const rT = nRps && T.tollgate.wrk?.ok_rps ? T.tollgate.wrk.ok_rps / nRps : null;
  const l50 = nA.p50 > 0 && bAdd.p50 !== null ? bAdd.p50 / nA.p50 : null;
  const l99 = nA.p99 > 0 && bAdd.p99 !== null ? bAdd.p99 / nA.p99 : null;
  const cpuB = cpuPer(B);
  if (T.portkey) {
    out('### Peers side by side (the same simulator, body, connections and runs)');
    out();
    out('| target | req/s at 32 connections (2xx) | vs nginx | CPU µs per request | fixed-rate added p50 ms | added p99 ms | peak RSS |');
    out('|---|---:|---:|---:|---:|---:|---:|');
    for (const t of ['nginx', 'tollgate', B, 'portkey']) {
      const x = T[t];
      const hwm = t === 'nginx' ? T.nginx.hwm : t === 'portkey' ? T.portkey.hwm : T.tollgate.hwm;
      out(`| ${t}${t === 'portkey' ? ` (@portkey-ai/gateway ${meta.portkey || ''}, Node ${meta.node})` : ''} | ${int(x.wrk?.ok_rps)} | ${nRps && x.wrk?.ok_rps ? f2(x.wrk.ok_rps / nRps) : 'n/a'} | ${f1(cpuPer(t))} | ${signed(added(x.fixed, 'p50'))} | ${signed(added(x.fixed, 'p99'))} | ${mb(hwm)} |`);
    }
    out();
    out('Portkey gets no key and no budget (it has none in its open-source gateway); the Tollgate rows are with the master key (no budget) and with a budgeted key.');
    out();
  }
  out('### Goals (issue 16, "Performance with everything on")');
  out();
  out('| goal | measured | result |');
  out('|---|---|---|');
  out(`| throughput with a budgeted key ≥ 0.5× nginx's | ${f2(rB)}× (${int(T[B].wrk?.ok_rps)} / ${int(nRps)}) | ${rB === null ? 'n/a' : pass(rB >= 0.5)} |`);
  out(`| throughput without budgets ≥ 0.7× nginx's | ${f2(rT)}× (${int(T.tollgate.wrk?.ok_rps)} / ${int(nRps)}) | ${rT === null ? 'n/a' : pass(rT >= 0.7)} |`);
  out(`| added p50 with budgets ≤ 2× nginx's added p50 (${meta.rate} req/s) | ${l50 === null ? 'n/a' : f2(l50) + '×'} (${f3(bAdd.p50)} vs ${f3(nA.p50)} ms) | ${l50 === null ? 'n/a' : pass(l50 <= 2)} |`);
  out(`| added p99 with budgets ≤ 3× nginx's added p99 | ${l99 === null ? 'n/a' : f2(l99) + '×'} (${f3(bAdd.p99)} vs ${f3(nA.p99)} ms) | ${l99 === null ? 'n/a' : pass(l99 <= 3)} |`);
  out(`| CPU per request with budgets ≤ 40 µs (throughput run) | ${f1(cpuB)} µs | ${cpuB === null ? 'n/a' : pass(cpuB <= 40)} |`);
  out(`| idle RSS ≤ 30 MB | ${(meta.tollgate_idle_rss_kb / 1024).toFixed(1)} MB | ${pass(meta.tollgate_idle_rss_kb / 1024 <= 30)} |`);
  out('| 10,000 concurrent SSE streams ≤ 300 MB, back to ≤ 2× idle after | bench/streams_memory.sh (its own section) | — |');
  out();
}

const idleMb = meta.tollgate_idle_rss_kb / 1024;
const goalThr = thrRatio !== null && thrRatio >= 0.5;
const goalLat = addRatio !== null ? addRatio <= 2 : gA.p50 !== null && gA.p50 <= 0;
const goalRss = idleMb < 30;
out('### Goals (issue 2, "Performance")');
out();
out('| goal | measured | result |');
out('|---|---|---|');
out(`| throughput ≥ 50% of nginx's at ${meta.conns} connections | ${thrRatio === null ? 'n/a' : (thrRatio * 100).toFixed(0) + '%'} | ${pass(goalThr)} |`);
out(`| added p50 latency ≤ 2× nginx's | ${addRatio === null ? 'n/a' : f2(addRatio) + '×'} (${f3(gA.p50)} ms vs ${f3(nA.p50)} ms) | ${pass(goalLat)} |`);
out(`| idle RSS < 30 MB | ${idleMb.toFixed(1)} MB | ${pass(goalRss)} |`);
out();
// Telemetry on vs off (issue 10): the same config and key, spans exported and the access log on.
{
  const TT = 'tollgate+telemetry';
  const off = T.tollgate, on = T[TT];
  const cOff = cpuPer('tollgate'), cOn = cpuPer(TT);
  const ratio = cOff && cOn ? cOn / cOff : null;
  const p50Off = off.fixed?.latency_ms.p50, p50On = on.fixed?.latency_ms.p50;
  const sink = readJson('otlp-sink.json');
  out(`### Telemetry on vs off: ${TT} vs tollgate (issue 10)`);
  out();
  out('| figure | tollgate (telemetry off) | tollgate+telemetry | ratio |');
  out('|---|---:|---:|---:|');
  // The fixed-rate CPU rounds (phase 3): pooled CPU over pooled requests per target, and the
  // median of the per-round ratios.
  const hz = readNum('clk-tck.txt') || 100;
  const rows = (read('telemetry-cpu.txt') || '').split('\n').filter(Boolean).map((l) => l.split(' '));
  const pooled = (name) => {
    const r = rows.filter((x) => x[1] === name);
    const ticks = r.reduce((a, x) => a + Number(x[2]), 0), reqs = r.reduce((a, x) => a + Number(x[3]), 0);
    return reqs > 0 ? (ticks / hz) * 1e6 / reqs : null;
  };
  const perRound = [];
  for (const round of new Set(rows.map((x) => x[0]))) {
    const a = rows.find((x) => x[0] === round && x[1] === 'tollgate'), b = rows.find((x) => x[0] === round && x[1] === TT);
    if (a && b && Number(a[2]) > 0) perRound.push((Number(b[2]) / Number(b[3])) / (Number(a[2]) / Number(a[3])));
  }
  perRound.sort((x, y) => x - y);
  const median = perRound.length ? perRound[Math.floor(perRound.length / 2)] : null;
  const fOff = pooled('tollgate'), fOn = pooled(TT);
  const fixedRatio = fOff && fOn ? fOn / fOff : null;
  out(`| CPU µs per request at ${meta.cpu_rate ?? '?'} req/s, ${perRound.length} interleaved rounds (pooled) | ${f1(fOff)} | ${f1(fOn)} | ${f2(fixedRatio)} (median of rounds ${f2(median)}) |`);
  out(`| CPU µs per request (throughput run) | ${f1(cOff)} | ${f1(cOn)} | ${f2(ratio)} |`);
  out(`| throughput req/s (2xx) at ${meta.conns} connections | ${int(off.wrk?.ok_rps)} | ${int(on.wrk?.ok_rps)} | ${f2(on.wrk?.ok_rps / off.wrk?.ok_rps)} |`);
  out(`| fixed-rate p50 ms | ${f3(p50Off)} | ${f3(p50On)} | added ${signed(p50On - p50Off)} ms |`);
  out(`| fixed-rate p99 ms | ${f3(off.fixed?.latency_ms.p99)} | ${f3(on.fixed?.latency_ms.p99)} | |`);
  out();
  out(`Spans received by the OTLP sink: ${int(sink?.spans)} in ${int(sink?.exports)} export requests; access-log lines: ${int(readNum('access-lines.txt'))}.`);
  out();
  // A broken collector (fixed-rate rounds, interleaved with the others): no request slower.
  const broken = [['tollgate+otel-hung', 'collector hangs (reads each export, never answers; export timeout 1 s)'],
                  ['tollgate+otel-down', 'collector down (nothing listens on its port)']];
  const bRows = broken.map(([t, what]) => [t, what, pooledFixed(t), read(`${t}-otel-metrics.txt`) || '']).filter((x) => x[2]);
  let brokenOk = bRows.length > 0;
  if (bRows.length) {
    out(`| collector (span export on, fixed rate ${meta.rate} req/s, pooled rounds) | p50 ms | p99 ms | p50 vs tollgate | non-2xx / errors | spans dropped (tollgate_otel_spans_dropped_total) |`);
    out('|---|---:|---:|---:|---:|---|');
    out(`| none (tollgate, telemetry off) | ${f3(off.fixed?.latency_ms.p50)} | ${f3(off.fixed?.latency_ms.p99)} | | ${off.fixed?.non2xx ?? 'n/a'} / ${off.fixed?.errors ?? 'n/a'} | |`);
    for (const [t, what, fx, m] of bRows) {
      const dropped = m.split('\n').filter((l) => l.startsWith('tollgate_otel_spans_dropped_total')).map((l) => l.replace(/^tollgate_otel_spans_dropped_total/, '')).join(', ');
      const d = fx.latency_ms.p50 - off.fixed?.latency_ms.p50;
      // "not slower": within a quarter of the off p50 plus 0.1 ms of round-to-round spread.
      if (!(d <= 0.25 * off.fixed?.latency_ms.p50 + 0.1) || fx.non2xx || fx.errors) brokenOk = false;
      out(`| ${what} | ${f3(fx.latency_ms.p50)} | ${f3(fx.latency_ms.p99)} | ${signed(d)} ms | ${fx.non2xx} / ${fx.errors} | ${dropped || 'n/a'} |`);
    }
    out();
  }
  out('| goal | measured | result |');
  out('|---|---|---|');
  out(`| ≤ 5% more CPU per request with everything on (fixed-rate rounds, pooled) | ${fixedRatio === null ? 'n/a' : ((fixedRatio - 1) * 100).toFixed(1) + '%'} | ${fixedRatio === null ? 'n/a' : pass(fixedRatio <= 1.05)} |`);
  if (bRows.length) out(`| a collector that is down or hangs slows no request (p50 within 25% + 0.1 ms of telemetry off, no errors) | ${bRows.map(([t, , fx]) => `${t}: ${signed(fx.latency_ms.p50 - off.fixed?.latency_ms.p50)} ms`).join('; ')} | ${pass(brokenOk)} |`);
  out(`| the same in the throughput run (the sink competes for the cores; see above) | ${ratio === null ? 'n/a' : ((ratio - 1) * 100).toFixed(1) + '%'} | ${ratio === null ? 'n/a' : pass(ratio <= 1.05)} |`);
  out();
}
const goalAdm = bA.p50 !== null && bA.p50 * 1000 < 20;
const goalMicro = primary ? nsPer(primary) < 2000 : null;
out('### Goals (issue 3, "Performance")');
out();
out('| goal | measured | result |');
out('|---|---|---|');
out(`| admission + ledger add < 20 µs at p50 per request (tollgate+budget p50 − tollgate p50, ${meta.rate} req/s) | ${bA.p50 === null ? 'n/a' : (bA.p50 * 1000).toFixed(0) + ' µs'} | ${bA.p50 === null ? 'n/a' : pass(goalAdm)} |`);
out(`| < 2 µs per admission in the micro benchmark with 1M keys (BM_ReserveSettle/64 shards/1 thread) | ${primary ? f1(nsPer(primary)) + ' ns' + (scopeOnly ? ` (${f1(nsPer(primary) - scopeOnly.real_time)} ns net of BM_ScopeBuildOnly)` : '') : 'not run (micro benchmark not built)'} | ${goalMicro === null ? 'n/a' : pass(goalMicro)} |`);
out();

// Sanity checks on the method itself.
const checks = [];
checks.push(`load average at start ${meta.loadavg_start}, at end ${meta.loadavg_end} (the benchmark itself adds about 2-3 while it runs; ` +
  'a high value at start means other work was competing for the CPUs)');
if (gen && T.direct.wrk?.rps) {
  checks.push(`generator ceiling (closed loop, ${gen.connections} sockets, direct): ${int(gen.rps)} req/s vs wrk ${int(T.direct.wrk.rps)} req/s ` +
    `— the fixed rate of ${meta.rate} req/s is ${((meta.rate / gen.rps) * 100).toFixed(0)}% of the generator's ceiling`);
}
for (const t of targets) {
  const x = T[t].fixed;
  if (x && x.achieved_rps < 0.97 * meta.rate) checks.push(`**${t}: achieved ${f1(x.achieved_rps)} req/s, below the offered ${meta.rate}** (generator or target saturated)`);
}
const errs = [];
for (const t of targets) {
  for (const [kind, w] of [['throughput', T[t].wrk], ['streaming', T[t].stream]]) {
    if (w && (w.non2xx || w.socketTotal)) errs.push(`${t} ${kind}: ${w.non2xx} non-2xx, socket errors ${JSON.stringify(w.socket)}`);
  }
  const x = T[t].fixed;
  if (x && (x.non2xx || x.errors)) errs.push(`${t} fixed-rate: ${x.non2xx} non-2xx, ${x.errors} errors ${JSON.stringify(x.statuses)}`);
}
for (const t of targets) {
  const slow = T[t].recovery.filter(([, s]) => Number(s) >= 0.3);
  if (slow.length) checks.push(`**${t} did not answer 200 right after a wrk run ended** (it answered 429 \`no_deployments_available\` until its deployment's cooldown ended): ` +
    slow.map(([what, s]) => `${what} ${s} s`).join(', ') + '. The harness waits for a 200 before the next measurement, so the figures above are not affected; see bench/README.md.');
}
checks.push(errs.length ? `**errors:** ${errs.join('; ')}` : 'no non-2xx responses and no socket errors in any run');
const smokeLedger = readNum('budget-smoke-ledger-records.txt');
if (smokeLedger !== null) checks.push(`the budgeted key's smoke request wrote ${smokeLedger} ledger records (reserve + settle expected: 2); the master key writes none`);
if (T[B].upstream !== null && T[B].wrk?.requests && gcThr0 && gcThr1) {
  checks.push(`tollgate+budget throughput phase: ${int(gcThr1.ledger_records - gcThr0.ledger_records)} ledger records for ${int(T[B].upstream)} upstream requests of the measured run (the phase also includes the warm-up and streaming runs)`);
}
if (T.tollgate.upstream !== null && T.tollgate.wrk?.requests) {
  checks.push(`upstream requests seen by the simulator during Tollgate's throughput run: ${int(T.tollgate.upstream)} for ${int(T.tollgate.wrk.requests)} completed client requests ` +
    `(wrk does not count the ≤ ${meta.conns} requests still in flight when it stops)`);
}
out('### Method checks');
out();
for (const c of checks) out(`- ${c}`);
out();

const report = lines.join('\n');
process.stdout.write(report + '\n');

if (resultsFile) {
  let existing = '';
  try { existing = fs.readFileSync(resultsFile, 'utf8'); } catch {}
  if (!existing) existing = '# Tollgate load benchmark results\n\nProduced by `bench/run.sh --write-results`; see bench/README.md for the method.\n';
  const heading = `## Run ${meta.date} `;
  const start = existing.indexOf(heading);
  let next;
  if (start >= 0) {
    const after = existing.indexOf('\n## Run ', start + heading.length);
    next = existing.slice(0, start) + report + '\n' + (after >= 0 ? existing.slice(after + 1) : '');
  } else {
    next = existing.replace(/\s*$/, '\n\n') + report + '\n';
  }
  fs.writeFileSync(resultsFile, next);
  console.error(`[bench] results written to ${resultsFile}`);
}
