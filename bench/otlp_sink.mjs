#!/usr/bin/env node
// A minimal OTLP/HTTP JSON sink for bench/run.sh's tollgate+telemetry target: answers every POST
// /v1/traces with 200 at once and counts the spans (GET /stats). Prints "listening on
// http://127.0.0.1:PORT" when ready. With --hang it reads each export request and never
// answers it (a collector that hangs: the exporter's timeout and drops are what is measured).
import http from 'node:http';

const hang = process.argv.includes('--hang');

let exports = 0, spans = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ exports, spans }));
    return;
  }
  let n = 0;
  req.on('data', (c) => { n += (c.toString().match(/"spanId"/g) || []).length; });
  req.on('end', () => {
    if (hang) { exports++; spans += n; return; }  // never answered
    exports++;
    spans += n;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
