// Bad input, from clients and from upstreams. One gateway serves the whole file, so the
// last test can show it survived everything before it.
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { before, after } from 'node:test';
import {
  useMock, e2e, Gateway, gatewayConfig, openaiDeployment, chatBody, shareLogs, MASTER_KEY,
} from './harness.mjs';

const state = useMock();
const BODY_LIMIT = 1024;
const HEADER_TIMEOUT_MS = 500;
let gw;

before(async () => {
  const mock = await state.ready;
  gw = await Gateway.start(gatewayConfig({
    model_list: [
      openaiDeployment(mock, 'healthy', 'healthy-model', { id: 'healthy-1' }),
      openaiDeployment(mock, 'garbage', 'garbage-model'),
      openaiDeployment(mock, 'garbage-fb', 'garbage-fb-model'),
      openaiDeployment(mock, 'html', 'html-model'),
      openaiDeployment(mock, 'html-fb', 'html-fb-model'),
      openaiDeployment(mock, 'oversized', 'oversized-model'),
      openaiDeployment(mock, 'oversized-fb', 'oversized-fb-model'),
      openaiDeployment(mock, 'empty', 'empty-model'),
      openaiDeployment(mock, 'reset', 'reset-model'),
    ],
    litellm_settings: {
      fallbacks: [
        { 'garbage-fb': ['healthy'] },
        { 'html-fb': ['healthy'] },
        { 'oversized-fb': ['healthy'] },
      ],
    },
    tollgate_settings: {
      max_request_body_bytes: BODY_LIMIT,
      max_upstream_body_bytes: 16 * 1024,
      header_read_timeout_ms: HEADER_TIMEOUT_MS,
    },
  }));
  shareLogs(gw);
});

after(async () => {
  await gw?.stop();
});

function assertOpenAIError(r, status, type) {
  assert.equal(r.status, status, `status ${r.status}: ${r.text}`);
  assert.ok(r.json && typeof r.json.error === 'object', `OpenAI error body: ${r.text}`);
  assert.equal(typeof r.json.error.message, 'string');
  assert.ok(r.json.error.message.length > 0, 'a message');
  assert.ok('type' in r.json.error && 'param' in r.json.error && 'code' in r.json.error,
    `error has message/type/param/code: ${r.text}`);
  if (type) assert.equal(r.json.error.type, type, r.text);
  assert.match(r.headers.get('content-type') ?? '', /application\/json/);
}

e2e('malformed JSON → 400 invalid_request_error', async () => {
  for (const body of ['{"model": "healthy", "messages": [', 'not json at all', '']) {
    const r = await gw.fetch('/v1/chat/completions', { body, headers: { 'content-type': 'application/json' } });
    assertOpenAIError(r, 400, 'invalid_request_error');
  }
  const notObject = await gw.fetch('/v1/chat/completions', { body: '[1,2,3]' });
  assertOpenAIError(notObject, 400, 'invalid_request_error');
  const badMessages = await gw.fetch('/v1/chat/completions', { body: { model: 'healthy', messages: 'hello' } });
  assertOpenAIError(badMessages, 400, 'invalid_request_error');
  assert.equal((await state.mock.stats()).requests_total, 0, 'nothing reached the upstream');
});

e2e('a body over max_request_body_bytes → 413', async () => {
  const big = chatBody('healthy', { messages: [{ role: 'user', content: 'x'.repeat(BODY_LIMIT * 2) }] });
  const r = await gw.fetch('/v1/chat/completions', { body: big });
  assertOpenAIError(r, 413);

  // The same without Content-Length (chunked): the limit holds while reading.
  const chunked = await new Promise((resolve, reject) => {
    const url = new URL(gw.url);
    const req = http.request({
      host: url.hostname, port: url.port, method: 'POST', path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${MASTER_KEY}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
      res.on('close', () => resolve({ status: res.statusCode, text }));
    });
    // The server may answer 413 and close while we still write: give the answer a moment.
    req.on('error', (e) => setTimeout(() => resolve({ status: 0, text: String(e) }), 300));
    const payload = JSON.stringify(big);
    for (let i = 0; i < payload.length; i += 256) req.write(payload.slice(i, i + 256));
    req.end();
    setTimeout(() => reject(new Error('no answer to the chunked oversized body')), 5000).unref();
  });
  assert.equal(chunked.status, 413, chunked.text);

  // Just under the limit is fine.
  const small = chatBody('healthy', { messages: [{ role: 'user', content: 'y'.repeat(BODY_LIMIT - 200) }] });
  assert.ok(JSON.stringify(small).length < BODY_LIMIT);
  const ok = await gw.fetch('/v1/chat/completions', { body: small });
  assert.equal(ok.status, 200, ok.text);
  assert.equal((await state.mock.model('healthy-model')).requests, 1, 'only the small request reached the upstream');
});

e2e('missing or unknown model → 400 naming the model', async () => {
  const missing = await gw.fetch('/v1/chat/completions', { body: { messages: [{ role: 'user', content: 'hi' }] } });
  assertOpenAIError(missing, 400);
  assert.match(missing.json.error.message, /model/i);

  const unknown = await gw.fetch('/v1/chat/completions', { body: chatBody('no-such-model-xyz') });
  assertOpenAIError(unknown, 400);
  assert.match(unknown.json.error.message, /no-such-model-xyz/);
  assert.equal((await state.mock.stats()).requests_total, 0);
});

e2e('wrong or missing key → 401', async () => {
  const missing = await gw.fetch('/v1/chat/completions', { body: chatBody('healthy'), auth: false });
  assertOpenAIError(missing, 401);
  const wrong = await gw.fetch('/v1/chat/completions', { body: chatBody('healthy'), auth: 'sk-not-the-key' });
  assertOpenAIError(wrong, 401);
  const wrongHeader = await gw.fetch('/v1/chat/completions', {
    body: chatBody('healthy'), auth: false, headers: { 'x-litellm-api-key': 'sk-nope' },
  });
  assertOpenAIError(wrongHeader, 401);
  const prefix = await gw.fetch('/v1/chat/completions', { body: chatBody('healthy'), auth: MASTER_KEY.slice(0, -1) });
  assertOpenAIError(prefix, 401);
  // Auth is checked before the body is looked at.
  const wrongAndMalformed = await gw.fetch('/v1/chat/completions', { body: '{oops', auth: 'sk-not-the-key' });
  assert.equal(wrongAndMalformed.status, 401);
  assert.equal((await state.mock.stats()).requests_total, 0);
});

e2e('unknown path → 404, wrong method → 405', async () => {
  const notFound = await gw.fetch('/v1/no-such-endpoint', { body: chatBody('healthy') });
  assert.equal(notFound.status, 404, notFound.text);
  assert.ok(notFound.json?.error, `JSON error body: ${notFound.text}`);
  const notFoundGet = await gw.fetch('/definitely/not/here', { method: 'GET' });
  assert.equal(notFoundGet.status, 404, notFoundGet.text);

  const wrongMethod = await gw.fetch('/v1/chat/completions', { method: 'GET' });
  assert.equal(wrongMethod.status, 405, wrongMethod.text);
  assert.ok(wrongMethod.json?.error, `JSON error body: ${wrongMethod.text}`);
  const allow = wrongMethod.headers.get('allow');
  assert.ok(allow && /POST/.test(allow), `Allow header lists POST: ${allow}`);
  const deleteModels = await gw.fetch('/v1/models', { method: 'DELETE' });
  assert.equal(deleteModels.status, 405, deleteModels.text);
});

/// Writes `text` one byte every `intervalMs`; resolves with what the server did.
function dribble(text, intervalMs) {
  return new Promise((resolve) => {
    const url = new URL(gw.url);
    const sock = net.connect({ host: url.hostname, port: Number(url.port) });
    const t0 = performance.now();
    let received = '';
    let sent = 0;
    let timer = null;
    const finish = (how) => {
      clearInterval(timer);
      sock.destroy();
      resolve({ how, elapsed: performance.now() - t0, received, sent });
    };
    sock.setEncoding('utf8');
    sock.on('data', (d) => { received += d; });
    sock.on('end', () => finish('end'));
    sock.on('close', () => finish('close'));
    sock.on('error', () => finish('error'));
    sock.on('connect', () => {
      timer = setInterval(() => {
        if (sent >= text.length) return; // wait for the server to act
        sock.write(text[sent++]);
      }, intervalMs);
    });
    setTimeout(() => finish('still open'), 8000).unref();
  });
}

e2e('a client sending its headers a byte at a time is cut off after header_read_timeout_ms', async () => {
  const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${MASTER_KEY}\r\n` +
    `Content-Type: application/json\r\nX-Padding: ${'p'.repeat(200)}\r\n\r\n`;
  // 40 ms per byte: the head would take ~12 s, each byte well inside any idle timeout.
  const r = await dribble(head, 40);
  assert.notEqual(r.how, 'still open', `the connection was not cut off (${r.sent} bytes sent in ${r.elapsed.toFixed(0)} ms)`);
  assert.ok(r.elapsed >= HEADER_TIMEOUT_MS - 100, `not before the timeout (${r.elapsed.toFixed(0)} ms)`);
  assert.ok(r.elapsed < HEADER_TIMEOUT_MS + 1500, `soon after the timeout (${r.elapsed.toFixed(0)} ms)`);
  assert.ok(r.sent < head.length, 'cut off while the head was still arriving');
  if (r.received) assert.match(r.received, /^HTTP\/1\.1 408 /, `only a 408 may be sent: ${r.received.slice(0, 200)}`);
});

e2e('garbage on the wire from a client gets a 400 or a closed connection', async () => {
  const url = new URL(gw.url);
  const out = await new Promise((resolve) => {
    const sock = net.connect({ host: url.hostname, port: Number(url.port) }, () => {
      sock.write('\x00\x01\x02 NOT HTTP AT ALL \xff\xfe\r\n\r\n');
    });
    let received = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => { received += d; });
    sock.on('close', () => resolve(received));
    sock.on('error', () => {});
    setTimeout(() => { sock.destroy(); resolve(`still open: ${received}`); }, 5000).unref();
  });
  assert.ok(out === '' || /^HTTP\/1\.1 400 /.test(out), `got: ${out.slice(0, 200)}`);
});

async function chat(model) {
  return gw.fetch('/v1/chat/completions', { body: chatBody(model) });
}

e2e('upstream garbage body: 502 without fallback, fallback when configured', async () => {
  const { mock } = state;
  await mock.script('garbage-model', [{ fault: 'garbage' }]);
  await mock.script('garbage-fb-model', [{ fault: 'garbage' }]);
  const r = await chat('garbage');
  assertOpenAIError(r, 502);
  const fb = await chat('garbage-fb');
  assert.equal(fb.status, 200, fb.text);
  assert.equal(fb.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.equal(fb.headers.get('x-litellm-model-id'), 'healthy-1');
  assert.deepEqual(await mock.requests('garbage-model', 'garbage-fb-model', 'healthy-model'),
    { 'garbage-model': 1, 'garbage-fb-model': 1, 'healthy-model': 1 });
});

e2e('upstream HTML 502 page: 502 JSON error without fallback, fallback when configured', async () => {
  const { mock } = state;
  await mock.script('html-model', [{ error: 'bad_gateway_html' }]);
  await mock.script('html-fb-model', [{ error: 'bad_gateway_html' }]);
  const r = await chat('html');
  assertOpenAIError(r, 502);
  assert.doesNotMatch(r.text, /<html/i, 'the HTML page is not passed through as the body');
  const fb = await chat('html-fb');
  assert.equal(fb.status, 200, fb.text);
  assert.equal(fb.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.deepEqual(await mock.requests('html-model', 'html-fb-model', 'healthy-model'),
    { 'html-model': 1, 'html-fb-model': 1, 'healthy-model': 1 });
});

e2e('upstream body over max_upstream_body_bytes: 502 without fallback, fallback when configured', async () => {
  const { mock } = state;
  await mock.script('oversized-model', [{ fault: 'oversized' }]);
  await mock.script('oversized-fb-model', [{ fault: 'oversized' }]);
  const r = await chat('oversized');
  assertOpenAIError(r, 502);
  assert.ok(r.text.length < 4096, 'the oversized body is not relayed');
  const fb = await chat('oversized-fb');
  assert.equal(fb.status, 200, fb.text);
  assert.equal(fb.headers.get('x-litellm-attempted-fallbacks'), '1');
  assert.deepEqual(await mock.requests('oversized-model', 'oversized-fb-model', 'healthy-model'),
    { 'oversized-model': 1, 'oversized-fb-model': 1, 'healthy-model': 1 });
});

e2e('upstream empty body and connection reset: a clear 502', async () => {
  const { mock } = state;
  await mock.script('empty-model', [{ fault: 'empty' }]);
  await mock.script('reset-model', [{ fault: 'reset' }]);
  assertOpenAIError(await chat('empty'), 502);
  assertOpenAIError(await chat('reset'), 502);
});

e2e('after all the bad input the gateway is alive and serving', async () => {
  assert.equal(gw.alive, true, `the gateway process exited: ${JSON.stringify(gw.proc.exit)}`);
  const live = await gw.fetch('/health/liveliness', { method: 'GET', auth: false });
  assert.equal(live.status, 200);
  await state.mock.script('healthy-model', [{ content: 'still standing', completion_tokens: 2 }]);
  const data = await gw.openai().chat.completions.create(chatBody('healthy'));
  assert.equal(data.choices[0].message.content, 'still standing');
  // Many concurrent requests after the abuse.
  const many = await Promise.all(Array.from({ length: 20 }, () => chat('healthy')));
  assert.deepEqual(many.map((r) => r.status), Array(20).fill(200));
});
