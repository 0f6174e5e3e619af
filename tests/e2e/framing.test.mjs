// Request framing per RFC 9112 (issue 14 §3): every request-smuggling vector of the published
// suites (CL.TE, TE.CL, TE.TE obfuscations, obs-fold, bare CR, bad field names and values,
// duplicate Host, bad Content-Length, oversized chunk extensions) is refused with 400 (501 for
// a transfer coding Tollgate does not implement) and the connection closed, and nothing of it —
// in particular the request smuggled in its body — reaches an upstream.
import assert from 'node:assert/strict';
import net from 'node:net';
import { useMock, e2e, gatewayConfig, openaiDeployment, MASTER_KEY, shareLogs, Gateway } from './harness.mjs';

const state = useMock();
let gw;

/// Sends `raw` on a fresh connection; resolves with everything the gateway wrote until it
/// closed the connection ({data, closed}); `closed` false when it was still open after `waitMs`.
function exchange(url, raw, waitMs = 3000) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => sock.write(raw));
    let data = '';
    sock.setEncoding('latin1');
    sock.setNoDelay(true);
    sock.on('data', (d) => { data += d; });
    const timer = setTimeout(() => { sock.destroy(); resolve({ data, closed: false }); }, waitMs);
    sock.on('end', () => { clearTimeout(timer); sock.destroy(); resolve({ data, closed: true }); });
    sock.on('error', (e) => {
      clearTimeout(timer);
      if (e.code === 'ECONNRESET') resolve({ data, closed: true });
      else reject(e);
    });
  });
}

const CHAT = JSON.stringify({ model: 'smuggle', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
const SMUGGLED = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${MASTER_KEY}\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`;
const head = (lines) => `POST /v1/chat/completions HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
const base = ['Host: localhost', `Authorization: Bearer ${MASTER_KEY}`, 'Content-Type: application/json'];
const chunked = (body) => `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;

/// The vectors: a name and the raw bytes; each must be refused and close the connection.
const VECTORS = [
  ['TE with chunked not final (chunked, gzip)', head([...base, 'Transfer-Encoding: chunked, gzip']) + chunked(CHAT) + SMUGGLED],
  ['TE with a coding Tollgate does not implement (gzip, chunked)', head([...base, 'Transfer-Encoding: gzip, chunked']) + chunked(CHAT) + SMUGGLED],
  ['TE chunked applied twice', head([...base, 'Transfer-Encoding: chunked, chunked']) + chunked(CHAT) + SMUGGLED],
  ['CL.TE: Content-Length and Transfer-Encoding', head([...base, `Content-Length: ${CHAT.length + 10}`, 'Transfer-Encoding: chunked']) + chunked(CHAT) + SMUGGLED],
  ['TE.CL: Transfer-Encoding first, then Content-Length', head([...base, 'Transfer-Encoding: chunked', 'Content-Length: 4']) + chunked(CHAT) + SMUGGLED],
  ['TE.TE: two Transfer-Encoding fields, one obfuscated', head([...base, 'Transfer-Encoding: chunked', 'Transfer-Encoding: x']) + chunked(CHAT) + SMUGGLED],
  ['TE.TE: xchunked', head([...base, 'Transfer-Encoding: xchunked', `Content-Length: ${CHAT.length}`]) + CHAT + SMUGGLED],
  ['TE.TE: space before the colon', head([...base, 'Transfer-Encoding : chunked', `Content-Length: ${CHAT.length}`]) + CHAT + SMUGGLED],
  ['TE.TE: obs-fold continuation of Transfer-Encoding', head([...base, 'Transfer-Encoding: identity', ' chunked', `Content-Length: ${CHAT.length}`]) + CHAT + SMUGGLED],
  ['obs-fold in another field', head([...base, 'X-Note: a', '\tfolded', `Content-Length: ${CHAT.length}`]) + CHAT],
  ['bare CR in a field value', head([...base, 'X-Note: a\rb', `Content-Length: ${CHAT.length}`]) + CHAT],
  ['bare CR as a line end', `POST /v1/chat/completions HTTP/1.1\r\n${base.join('\r\n')}\rContent-Length: ${CHAT.length}\r\n\r\n${CHAT}`],
  ['NUL in a field value', head([...base, 'X-Note: a\0b', `Content-Length: ${CHAT.length}`]) + CHAT],
  ['a space inside a field name', head([...base, 'X Note: a', `Content-Length: ${CHAT.length}`]) + CHAT],
  ['an empty field name', head([...base, ': a', `Content-Length: ${CHAT.length}`]) + CHAT],
  ['duplicate Host', head([...base, 'Host: evil.example', `Content-Length: ${CHAT.length}`]) + CHAT],
  ['HTTP/1.1 without Host', head([`Authorization: Bearer ${MASTER_KEY}`, 'Content-Type: application/json', `Content-Length: ${CHAT.length}`]) + CHAT],
  ['two different Content-Length values', head([...base, `Content-Length: ${CHAT.length}`, 'Content-Length: 4']) + CHAT + SMUGGLED],
  ['a Content-Length list', head([...base, `Content-Length: ${CHAT.length}, 4`]) + CHAT + SMUGGLED],
  ['a signed Content-Length', head([...base, `Content-Length: +${CHAT.length}`]) + CHAT + SMUGGLED],
  ['a chunk size that overflows', head([...base, 'Transfer-Encoding: chunked']) + `1${'0'.repeat(20)}\r\n${CHAT}\r\n0\r\n\r\n`],
  ['an oversized chunk extension', head([...base, 'Transfer-Encoding: chunked']) + `${CHAT.length.toString(16)};ext=${'a'.repeat(300000)}\r\n${CHAT}\r\n0\r\n\r\n`],
  ['trailer fields after a chunked body (a second Host, an Authorization)', head([...base, 'Transfer-Encoding: chunked']) +
    `${CHAT.length.toString(16)}\r\n${CHAT}\r\n0\r\nHost: evil.example\r\nAuthorization: Bearer ${MASTER_KEY}\r\n\r\n`],
  ['not HTTP at all (a TLS ClientHello)', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03'],
  ['more header fields than the limit (200 tiny ones)', head([...base, ...Array.from({ length: 200 }, (_, i) => `x-${i}: v`), `Content-Length: ${CHAT.length}`]) + CHAT],
  ['HTTP/1.0 with Transfer-Encoding', `POST /v1/chat/completions HTTP/1.0\r\n${base.join('\r\n')}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(CHAT)}${SMUGGLED}`],
];

e2e('setup: a gateway for the framing vectors', async () => {
  const { mock } = state;
  gw = await Gateway.start(gatewayConfig({ model_list: [openaiDeployment(mock, 'smuggle', 'smuggle-up')] }));
  shareLogs(gw);
});

for (const [name, raw] of VECTORS) {
  e2e(`framing: ${name} → refused, the connection closed, nothing forwarded`, async () => {
    const { mock } = state;
    const t = performance.now();
    const r = await exchange(gw.url, raw);
    assert.ok(performance.now() - t < 2000, `${name}: refused at once, not after the header timeout`);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(r.data)?.[1]);
    assert.ok(status === 400 || status === 501 || status === 431, `${name}: status ${status}: ${r.data.slice(0, 300)}`);
    assert.equal((r.data.match(/HTTP\/1\.[01] \d{3} /g) ?? []).length, 1, `${name}: one response only: ${r.data.slice(0, 600)}`);
    assert.ok(r.closed, `${name}: the connection is closed after the refusal`);
    assert.match(r.data, /connection: close/i);
    assert.equal((await mock.requests('smuggle-up'))['smuggle-up'], 0, `${name}: nothing reached the upstream`);
  });
}

e2e('framing: a well-formed chunked request and a well-formed pipelined pair are still served', async () => {
  const { mock } = state;
  const one = await exchange(gw.url, head([...base, 'Transfer-Encoding: chunked', 'Connection: close']) + chunked(CHAT));
  assert.match(one.data, /^HTTP\/1\.1 200/, one.data.slice(0, 300));
  const pair = await exchange(gw.url, head([...base, `Content-Length: ${CHAT.length}`]) + CHAT +
    head([...base, `Content-Length: ${CHAT.length}`, 'Connection: close']) + CHAT);
  assert.equal((pair.data.match(/HTTP\/1\.1 200 /g) ?? []).length, 2, pair.data.slice(0, 600));
  assert.equal((await mock.requests('smuggle-up'))['smuggle-up'], 3);
});

e2e('teardown', async () => {
  await gw?.stop();
});
