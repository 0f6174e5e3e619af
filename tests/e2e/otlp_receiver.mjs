// A local OTLP/HTTP JSON receiver for the e2e tests: every export request is checked against the
// official OpenTelemetry protobuf definitions (opentelemetry-proto, as compiled into
// @opentelemetry/otlp-transformer 0.52's generated root) before it is kept.
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const ExportRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

/// Throws unless `obj` (the JSON body) is a valid ExportTraceServiceRequest in OTLP's JSON
/// mapping: it converts to the protobuf message (ids hex → bytes), verifies, encodes and decodes
/// back to the same object: every field is one the definitions know, with a value of its type
/// (hex ids of the right length, int64 as decimal strings, enums as numbers).
export function validateExport(obj) {
  const problems = [];
  const hex = (v, n, where) => {
    if (typeof v !== 'string' || !new RegExp(`^[0-9a-f]{${n}}$`).test(v) || /^0+$/.test(v)) problems.push(`${where}: bad id ${v}`);
  };
  for (const rs of obj.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const [i, s] of (ss.spans ?? []).entries()) {
        hex(s.traceId, 32, `span ${i} traceId`);
        hex(s.spanId, 16, `span ${i} spanId`);
        if (s.parentSpanId !== undefined) hex(s.parentSpanId, 16, `span ${i} parentSpanId`);
        for (const k of ['startTimeUnixNano', 'endTimeUnixNano'])
          if (typeof s[k] !== 'string' || !/^\d+$/.test(s[k])) problems.push(`span ${i} ${k}: not a decimal string`);
        if (!Number.isInteger(s.kind)) problems.push(`span ${i} kind: not an enum number`);
        if (problems.length === 0 && BigInt(s.endTimeUnixNano) < BigInt(s.startTimeUnixNano)) problems.push(`span ${i}: ends before it starts`);
      }
  const clone = structuredClone(obj);
  for (const rs of clone.resourceSpans ?? [])
    for (const ss of rs.scopeSpans ?? [])
      for (const s of ss.spans ?? [])
        for (const k of ['traceId', 'spanId', 'parentSpanId']) if (typeof s[k] === 'string') s[k] = Buffer.from(s[k], 'hex');
  const msg = ExportRequest.fromObject(clone);
  const err = ExportRequest.verify(msg);
  if (err) problems.push(`verify: ${err}`);
  const back = ExportRequest.toObject(ExportRequest.decode(ExportRequest.encode(msg).finish()),
    { longs: String, enums: Number, bytes: String, defaults: false });
  // Every field sent survives the round trip with the same value: nothing unknown, nothing mistyped.
  const same = (a, b, where) => {
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) { problems.push(`${where}: array lost or resized`); return; }
      a.forEach((x, i) => same(x, b[i], `${where}[${i}]`));
    } else if (a !== null && typeof a === 'object') {
      if (b === null || typeof b !== 'object') { problems.push(`${where}: object lost`); return; }
      for (const [k, v] of Object.entries(a)) {
        const empty = v === '' || v === 0 || v === false || (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0) || (Array.isArray(v) && v.length === 0);
        if (!(k in b)) { if (!empty) problems.push(`${where}.${k}: not a field of the definitions (or mistyped)`); continue; }
        if (['traceId', 'spanId', 'parentSpanId'].includes(k)) { if (Buffer.from(b[k], 'base64').toString('hex') !== v) problems.push(`${where}.${k}: changed`); continue; }
        same(v, b[k], `${where}.${k}`);
      }
    } else if (String(a) !== String(b)) problems.push(`${where}: ${JSON.stringify(a)} came back as ${JSON.stringify(b)}`);
  };
  same(obj, back, 'request');
  if (problems.length) throw new Error(`invalid OTLP export: ${problems.join('; ')}`);
}

/// Flattens OTLP attributes to {key: value}.
export function attrs(list) {
  const out = {};
  for (const { key, value } of list ?? []) {
    if ('stringValue' in value) out[key] = value.stringValue;
    else if ('intValue' in value) out[key] = Number(value.intValue);
    else if ('doubleValue' in value) out[key] = value.doubleValue;
    else if ('boolValue' in value) out[key] = value.boolValue;
    else if ('arrayValue' in value) out[key] = (value.arrayValue.values ?? []).map((v) => v.stringValue);
  }
  return out;
}

export class OtlpReceiver {
  /// mode: 'ok' (200), a status number (answered to every export), or 'hang' (never answers).
  static async start(mode = 'ok') {
    const r = new OtlpReceiver();
    r.mode = mode;
    r.exports = [];
    r.invalid = [];
    r.requests = 0;
    r.hung = [];
    r.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        r.requests++;
        if (r.mode === 'hang') { r.hung.push(res); return; }
        if (r.mode !== 'ok') { res.writeHead(r.mode, { 'content-type': 'application/json' }); res.end('{}'); return; }
        try {
          if (req.url !== '/v1/traces' || req.method !== 'POST') throw new Error(`unexpected ${req.method} ${req.url}`);
          if (!(req.headers['content-type'] ?? '').startsWith('application/json')) throw new Error('not JSON');
          const obj = JSON.parse(body);
          validateExport(obj);
          r.exports.push({ headers: req.headers, body: obj });
        } catch (e) {
          r.invalid.push(String(e));
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    r.url = `http://127.0.0.1:${r.server.address().port}`;
    return r;
  }

  /// Every span received, with its resource's attributes.
  spans() {
    const out = [];
    for (const e of this.exports)
      for (const rs of e.body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) out.push({ ...s, attrs: attrs(s.attributes), resource: attrs(rs.resource?.attributes) });
    return out;
  }

  async stop() {
    for (const res of this.hung) res.destroy();
    this.server.closeAllConnections?.();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
