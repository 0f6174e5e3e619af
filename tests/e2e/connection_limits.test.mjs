// Connection and resource limits (issue 14 §4): 2,000 idle client connections — some that never
// sent a byte, some that completed a request and sit in keep-alive — do not stop a chat
// completion through the official SDK from being answered within 2 s, with the default
// max_connections (derived from the descriptor limit: nothing needs evicting) and with a small
// one (the idle connections are evicted, counted in /metrics); the per-IP limit answers 429
// while other work continues; and the open-connection gauge returns to its idle level.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { useMock, e2e, gatewayConfig, openaiDeployment, chatBody, metricValue, MASTER_KEY, waitFor } from './harness.mjs';

const state = useMock();
const IDLE = 2000;
const CHAT_WITHIN_MS = 2000;

/// The test process must be able to hold the idle connections itself (plus the SDK's and the
/// harness's): fail clearly, never skip, when its descriptor limit is too small.
function requireDescriptors(n) {
  const limit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  if (Number.isFinite(limit) && limit < n + 256) {
    throw new Error(`this test opens ${n} sockets but the descriptor limit of the test process is ${limit}: ` +
      `raise it (ulimit -n ${n + 256}) to run it`);
  }
}

function config(mock, tollgate_settings) {
  return gatewayConfig({ model_list: [openaiDeployment(mock, 'conn-chat', 'conn-model')], tollgate_settings });
}

/// One request on a fresh connection closed after it (`agent: false`), optionally from another
/// loopback address: {status, headers, text}.
function request(gw, path, { method = 'GET', body, localAddress, auth = false } = {}) {
  const u = new URL(gw.url);
  const headers = { connection: 'close' };
  if (auth) headers.authorization = `Bearer ${MASTER_KEY}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: Number(u.port), path, method, headers, agent: false, localAddress }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(JSON.stringify(body));
    req.end();
  });
}

async function metrics(gw, localAddress) {
  const r = await request(gw, '/metrics', { localAddress });
  assert.equal(r.status, 200, `GET /metrics -> ${r.status}`);
  return r.text;
}

/// Whether `data` holds a whole response with a Content-Length body.
function responseComplete(data) {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const m = data.slice(0, end).match(/\r\ncontent-length:\s*(\d+)/i);
  return m !== null && data.length >= end + 4 + Number(m[1]);
}

/// Opens `n` connections, `batch` at a time. `keepAlive`: each sends GET /health/liveliness and
/// reads its answer, then stays open in keep-alive; otherwise it sends nothing. Resolves with
/// {sockets, served} (served: keep-alive requests answered 200; a connection the gateway evicts
/// before its request reached it is not).
async function openIdle(gw, n, { keepAlive = false, batch = 250 } = {}) {
  const u = new URL(gw.url);
  const sockets = [];
  let served = 0;
  const one = () => new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname);
    sockets.push(s);
    s.setNoDelay(true);
    let data = '';
    let settled = false;
    const done = () => { if (!settled) { settled = true; resolve(); } };
    s.on('error', (e) => { if (!settled && e.code !== 'ECONNRESET') { settled = true; reject(e); } else done(); });
    s.on('close', done);
    s.on('connect', () => {
      if (!keepAlive) return done();
      s.setEncoding('latin1');
      s.on('data', (d) => {
        data += d;
        if (responseComplete(data)) {
          if (data.startsWith('HTTP/1.1 200')) ++served;
          done();
        }
      });
      s.write(`GET /health/liveliness HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`);
    });
  });
  for (let i = 0; i < n; i += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, n - i) }, one));
  }
  return { sockets, served };
}

/// 2,000 idle connections: half served once and kept alive, half silent.
async function flood(gw) {
  const kept = await openIdle(gw, IDLE / 2, { keepAlive: true });
  const silent = await openIdle(gw, IDLE / 2);
  return { sockets: [...kept.sockets, ...silent.sockets], served: kept.served };
}

/// A chat completion through the SDK; returns its latency in ms.
async function timedChat(gw) {
  const client = gw.openai();
  const t0 = performance.now();
  const r = await client.chat.completions.create(chatBody('conn-chat', { max_tokens: 5 }));
  const ms = performance.now() - t0;
  assert.ok(r.choices?.[0]?.message?.content, 'the chat completion has content');
  return ms;
}

/// Open connections at the gateway, the scrape's own included.
const openGauge = async (gw, localAddress) => metricValue(await metrics(gw, localAddress), 'tollgate_connections_open');

e2e('connection limits: with the default max_connections, 2,000 idle connections do not delay a chat completion', async (ctx) => {
  requireDescriptors(IDLE);
  const gw = await ctx.gateway(config(state.mock));
  const before = await metrics(gw);
  const limit = metricValue(before, 'tollgate_connections_limit');
  assert.ok(limit >= IDLE + 64, `the default limit (${limit}) leaves room for ${IDLE} idle connections here`);
  const { sockets, served } = await flood(gw);
  try {
    assert.equal(served, IDLE / 2, 'every keep-alive connection was served its request');
    assert.ok((await openGauge(gw)) >= IDLE, 'the idle connections are open at the gateway');
    const ms = await timedChat(gw);
    ctx.t.diagnostic(`chat latency with ${IDLE} idle connections (default limit ${limit}, nothing evicted): ${ms.toFixed(1)} ms`);
    assert.ok(ms < CHAT_WITHIN_MS, `chat answered in ${ms.toFixed(1)} ms`);
    const live = await request(gw, '/health/liveliness');
    assert.equal(live.status, 200);
    assert.equal(metricValue(await metrics(gw), 'tollgate_connections_evicted_total'), 0);
  } finally {
    for (const s of sockets) s.destroy();
  }
  // (d) The gauge returns to its idle level: the scrape's own connection and the SDK's pooled one.
  await waitFor(async () => (await openGauge(gw)) <= 3, { timeoutMs: 10000, what: 'tollgate_connections_open back to its idle level' });
}, { timeout: 60000 });

e2e('connection limits: at a small max_connections, 2,000 idle connections are evicted and a chat completion is served within 2 s', async (ctx) => {
  requireDescriptors(IDLE);
  const MAX = 64;
  const gw = await ctx.gateway(config(state.mock, { max_connections: MAX }));
  assert.equal(metricValue(await metrics(gw), 'tollgate_connections_limit'), MAX);
  const { sockets } = await flood(gw);
  try {
    const ms = await timedChat(gw);
    ctx.t.diagnostic(`chat latency with ${IDLE} idle connections at max_connections ${MAX} (evicting): ${ms.toFixed(1)} ms`);
    assert.ok(ms < CHAT_WITHIN_MS, `chat answered in ${ms.toFixed(1)} ms`);
    const live = await request(gw, '/health/liveliness');
    assert.equal(live.status, 200);
    const text = await metrics(gw);
    const evicted = metricValue(text, 'tollgate_connections_evicted_total');
    const open = metricValue(text, 'tollgate_connections_open');
    ctx.t.diagnostic(`evicted ${evicted}, open ${open}`);
    assert.ok(open <= MAX, `open connections (${open}) stay within max_connections`);
    // Every idle connection beyond the limit made room for a later one (a few silent ones may
    // have ended by the shortened idle wait near the limit instead).
    assert.ok(evicted >= IDLE / 2, `evicted ${evicted} idle connections`);
    assert.equal(metricValue(text, 'tollgate_connections_refused_total', { reason: 'accept_error' }), 0);
  } finally {
    for (const s of sockets) s.destroy();
  }
  await waitFor(async () => (await openGauge(gw)) <= 3, { timeoutMs: 10000, what: 'tollgate_connections_open back to its idle level' });
}, { timeout: 60000 });

e2e('connection limits: the per-IP limit answers 429 to one more connection while other work continues', async (ctx) => {
  const PER_IP = 20;
  const gw = await ctx.gateway(config(state.mock, { max_connections_per_ip: PER_IP }));
  const { sockets } = await openIdle(gw, PER_IP, { keepAlive: true });
  try {
    assert.equal(await openGauge(gw, '127.0.0.2'), PER_IP + 1);
    // One more from 127.0.0.1: 429 with an OpenAI error body, Connection: close, before it sent anything.
    const extra = await new Promise((resolve, reject) => {
      const u = new URL(gw.url);
      const s = net.connect(Number(u.port), u.hostname);
      let data = '';
      s.setEncoding('latin1');
      s.on('data', (d) => { data += d; });
      s.on('end', () => { s.destroy(); resolve(data); });
      s.on('error', reject);
    });
    assert.match(extra, /^HTTP\/1\.1 429 /);
    assert.match(extra, /\r\nConnection: close\r\n/i);
    const body = JSON.parse(extra.slice(extra.indexOf('\r\n\r\n') + 4));
    assert.equal(body.error.type, 'rate_limit_error');
    assert.match(body.error.message, /too many connections/);
    // The connections within the limit keep working: a chat on one of them.
    const chat = JSON.stringify(chatBody('conn-chat', { max_tokens: 5 }));
    const reply = await new Promise((resolve, reject) => {
      const s = sockets[0];
      let data = '';
      s.removeAllListeners('data');
      s.on('data', (d) => { data += d; if (responseComplete(data)) resolve(data); });
      s.on('error', reject);
      s.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${MASTER_KEY}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${chat.length}\r\n\r\n${chat}`);
    });
    assert.match(reply, /^HTTP\/1\.1 200 /);
    // Another address is not limited by this one's connections.
    const other = await request(gw, '/v1/chat/completions', { method: 'POST', body: chatBody('conn-chat', { max_tokens: 5 }), localAddress: '127.0.0.2', auth: true });
    assert.equal(other.status, 200, other.text);
    const text = await metrics(gw, '127.0.0.2');
    assert.equal(metricValue(text, 'tollgate_connections_refused_total', { reason: 'per_ip' }), 1);
    const stats = JSON.parse((await request(gw, '/tollgate/stats', { localAddress: '127.0.0.2', auth: true })).text);
    assert.equal(stats.connections.refused_per_ip, 1);
  } finally {
    for (const s of sockets) s.destroy();
  }
  // Once they closed, the address connects again and the gauge is back to the scrape alone.
  await waitFor(async () => (await openGauge(gw, '127.0.0.2')) <= 1, { timeoutMs: 10000, what: 'tollgate_connections_open back to 1' });
  const live = await request(gw, '/health/liveliness');
  assert.equal(live.status, 200);
}, { timeout: 60000 });
