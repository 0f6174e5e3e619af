#!/usr/bin/env node
// Open-loop load generator for Tollgate's load benchmark (bench/run.sh).
//
// fixed mode (default): sends `--rate` requests per second for `--duration` seconds on a
// schedule that does not wait for responses (open loop), through one keep-alive http.Agent
// with at most `--connections` sockets. When every socket is busy the request waits in the
// agent's queue and that wait counts as latency. Prints one JSON object:
//   latency_ms      from the moment the request is handed to http.request() to the last body byte
//   corrected_ms    from the request's *scheduled* send time (includes timer lateness of this
//                   generator; guards against coordinated omission when the target saturates)
//   send_lag_ms     how late the generator handed requests over versus the schedule
//   achieved_rps    completed requests / measured duration; should equal --rate
//
// max mode (--mode max): closed loop, `--connections` requests in flight, as fast as possible;
// prints the generator's own ceiling (requests/s) so that it can be compared with wrk's.
//
// --samples FILE also writes every measured latency_ms value, one per line (for pooling rounds).
//
// Plain node:http only (no undici), no dependencies.
import fs from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

function parseArgs(argv) {
  const o = { url: '', rate: 500, duration: 10, warmup: 1, connections: 32, mode: 'fixed', key: '', model: 'bench-model',
              stream: false, maxTokens: 16, samples: '', headers: {} };
  for (let i = 2; i < argv.length; i++) {
    let a = argv[i], v;
    const eq = a.indexOf('=');
    if (eq > 0) { v = a.slice(eq + 1); a = a.slice(0, eq); }
    const next = () => (v !== undefined ? v : argv[++i]);
    switch (a) {
      case '--url': o.url = next(); break;
      case '--rate': o.rate = Number(next()); break;
      case '--duration': o.duration = Number(next()); break;
      case '--warmup': o.warmup = Number(next()); break;
      case '--connections': o.connections = Number(next()); break;
      case '--mode': o.mode = next(); break;
      case '--key': o.key = next(); break;
      case '--model': o.model = next(); break;
      case '--stream': o.stream = true; break;
      case '--max-tokens': o.maxTokens = Number(next()); break;
      case '--samples': o.samples = next(); break;
      case '--header': { const h = next(); const i = h.indexOf(':'); o.headers[h.slice(0, i).trim()] = h.slice(i + 1).trim(); break; }
      default: console.error(`fixed_rate.mjs: unknown option ${a}`); process.exit(2);
    }
  }
  if (!o.url) { console.error('usage: fixed_rate.mjs --url URL [--rate 500] [--duration 10] [--warmup 1] [--connections 32] [--mode fixed|max] [--key K] [--model M] [--stream] [--samples FILE] [--header "Name: value" ...]'); process.exit(2); }
  return o;
}

const opt = parseArgs(process.argv);
const url = new URL(opt.url);
const body = Buffer.from(JSON.stringify({
  model: opt.model,
  messages: [{ role: 'system', content: 'You are a terse assistant.' },
             { role: 'user', content: 'Say hello in one short sentence.' }],
  max_tokens: opt.maxTokens,
  ...(opt.stream ? { stream: true } : {}),
}));
const headers = { 'content-type': 'application/json', 'content-length': body.length, ...opt.headers };
if (opt.key) headers.authorization = `Bearer ${opt.key}`;
const agent = new http.Agent({ keepAlive: true, maxSockets: opt.connections, maxFreeSockets: opt.connections, scheduling: 'lifo' });
const reqOptions = { host: url.hostname, port: url.port || 80, path: url.pathname + url.search, method: 'POST', headers, agent };

const stats = { sent: 0, ok: 0, non2xx: 0, errors: 0, statuses: {}, errorSamples: [] };

// One request; cb(ok, endTime) after the whole body arrived or on error.
function fire(cb) {
  const req = http.request(reqOptions, (res) => {
    const status = res.statusCode;
    res.on('data', () => {});
    res.on('end', () => cb(status >= 200 && status < 300 ? 'ok' : `http_${status}`, performance.now()));
    res.on('error', (e) => cb(`error:${e.code || e.message}`, performance.now()));
  });
  req.on('error', (e) => cb(`error:${e.code || e.message}`, performance.now()));
  req.end(body);
}

function record(outcome, measure) {
  if (!measure) return false;
  if (outcome === 'ok') { stats.ok++; return true; }
  stats.statuses[outcome] = (stats.statuses[outcome] || 0) + 1;
  if (outcome.startsWith('error:')) stats.errors++; else stats.non2xx++;
  if (stats.errorSamples.length < 5) stats.errorSamples.push(outcome);
  return false;
}

function pct(sorted, p) {
  if (sorted.length === 0) return null;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return Math.round(sorted[idx] * 1000) / 1000;
}
function summary(arr, n) {
  const s = Float64Array.from(arr.subarray(0, n)).sort();
  let sum = 0; for (const x of s) sum += x;
  return { p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99), max: pct(s, 100), mean: n ? Math.round((sum / n) * 1000) / 1000 : null };
}

function runFixed() {
  const interval = 1000 / opt.rate;
  const total = Math.round((opt.warmup + opt.duration) * opt.rate);
  const warmN = Math.round(opt.warmup * opt.rate);
  const measured = total - warmN;
  const lat = new Float64Array(measured), corr = new Float64Array(measured), lag = new Float64Array(measured);
  let n = 0, issued = 0, done = 0, firstMeasuredStart = 0, lastMeasuredEnd = 0;
  const t0 = performance.now() + 5;

  return new Promise((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(hardStop);
      const unfinished = total - done;
      if (unfinished > 0) {
        stats.errors += unfinished;
        stats.statuses['error:unfinished'] = unfinished;
      }
      agent.destroy();
      if (opt.samples) fs.writeFileSync(opt.samples, Array.from(lat.subarray(0, n), (x) => x.toFixed(4)).join('\n') + '\n');
      const dur = (lastMeasuredEnd - firstMeasuredStart) / 1000;
      resolve({
        mode: 'fixed', url: opt.url, target_rps: opt.rate, duration_s: opt.duration, connections: opt.connections,
        sent: measured, ok: stats.ok, non2xx: stats.non2xx, errors: stats.errors, statuses: stats.statuses,
        error_samples: stats.errorSamples,
        achieved_rps: dur > 0 ? Math.round((n / dur) * 10) / 10 : 0,
        latency_ms: summary(lat, n), corrected_ms: summary(corr, n),
        send_lag_ms: (() => { const s = summary(lag, n); return { p50: s.p50, p99: s.p99, max: s.max }; })(),
      });
    };
    const tick = () => {
      const now = performance.now();
      while (issued < total && t0 + issued * interval <= now) {
        const i = issued++;
        const scheduled = t0 + i * interval;
        const measure = i >= warmN;
        const start = performance.now();
        if (measure && firstMeasuredStart === 0) firstMeasuredStart = start;
        fire((outcome, end) => {
          if (record(outcome, measure)) {
            lat[n] = end - start; corr[n] = end - scheduled; lag[n] = start - scheduled; n++;
          }
          if (measure) lastMeasuredEnd = Math.max(lastMeasuredEnd, end);
          if (++done === total && !finished) finish();
        });
      }
      if (issued < total) {
        const wait = t0 + issued * interval - performance.now();
        // setTimeout has ~1 ms granularity; no busy-spinning (the generator shares 2 cores with the
        // targets), so a request may leave up to ~1 ms late: see send_lag_ms. latency_ms is
        // measured from the actual hand-over, so this lateness is not counted in it.
        setTimeout(tick, Math.max(1, Math.floor(wait)));
      }
    };
    // A target that stops answering must not hang the harness: give up 10 s after the schedule.
    const hardStop = setTimeout(finish, (opt.warmup + opt.duration) * 1000 + 10000);
    setTimeout(tick, 5);
  });
}

function runMax() {
  const end = performance.now() + (opt.warmup + opt.duration) * 1000;
  const measureFrom = performance.now() + opt.warmup * 1000;
  let completed = 0;
  return new Promise((resolve) => {
    let active = opt.connections;
    // Safety net: a target that stops answering must not hang the harness.
    setTimeout(() => { process.stdout.write(JSON.stringify({ mode: 'max', url: opt.url, error: 'target stopped answering', ok: stats.ok, rps: 0 }) + '\n'); process.exit(1); },
               (opt.warmup + opt.duration) * 1000 + 10000).unref();
    const loop = () => {
      if (performance.now() >= end) {
        if (--active === 0) {
          agent.destroy();
          resolve({ mode: 'max', url: opt.url, connections: opt.connections, duration_s: opt.duration,
                    ok: stats.ok, non2xx: stats.non2xx, errors: stats.errors, statuses: stats.statuses,
                    rps: Math.round((completed / opt.duration) * 10) / 10 });
        }
        return;
      }
      fire((outcome, t) => {
        const measure = t >= measureFrom;
        record(outcome, measure);
        if (measure) completed++;
        loop();
      });
    };
    for (let i = 0; i < opt.connections; i++) loop();
  });
}

const result = await (opt.mode === 'max' ? runMax() : runFixed());
process.stdout.write(JSON.stringify(result) + '\n');
