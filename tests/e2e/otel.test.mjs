// Traces of the logical operation (issue 10): one OpenTelemetry GenAI span per request covering
// every retry and fallback, a child span per upstream attempt, the caller's W3C trace context
// kept and propagated upstream, exported over OTLP/HTTP JSON to a local receiver that checks
// every payload against the official OpenTelemetry protobuf definitions.
import assert from 'node:assert/strict';
import { useMock, e2e, gatewayConfig, openaiDeployment, chatBody, waitFor, metricsText, metricValue, spendLogOf } from './harness.mjs';
import { OtlpReceiver } from './otlp_receiver.mjs';

const state = useMock();
const OK = (content) => ({ content, completion_tokens: content.split(' ').length });
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

function otelConfig(receiver, extra = {}) {
  return { otel: { enabled: true, traces_endpoint: `${receiver.url}/v1/traces`, service_name: 'tollgate-e2e', ...extra } };
}

e2e('one GenAI span per request across a retry and a fallback, with a child per attempt; the caller\'s trace is kept and sent upstream', async (ctx) => {
  const { mock } = state;
  const rx = await OtlpReceiver.start();
  try {
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [
        openaiDeployment(mock, 'ot-primary', 'ot-primary-model', { id: 'ot-primary-1' }),
        openaiDeployment(mock, 'ot-backup', 'ot-backup-model', { id: 'ot-backup-1' }),
      ],
      router_settings: { num_retries: 1, retry_after: 0 },
      litellm_settings: { fallbacks: [{ 'ot-primary': ['ot-backup'] }] },
      tollgate_settings: otelConfig(rx, { resource_attributes: { 'deployment.environment': 'e2e' } }),
    }));
    await mock.script('ot-primary-model', [{ status: 503, error: 'server_error' }]);
    await mock.script('ot-backup-model', [OK('from the backup')]);
    const res = await gw.fetch('/v1/chat/completions', {
      body: chatBody('ot-primary'),
      headers: { traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: 'vendor=abc' },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('x-tollgate-trace-id'), TRACE);

    const spans = await waitFor(() => (rx.spans().length >= 4 ? rx.spans() : null), { what: `the spans exported (${rx.requests} requests, invalid: ${rx.invalid.join(' / ')})`, timeoutMs: 5000 });
    assert.deepEqual(rx.invalid, []);
    assert.equal(spans.length, 4, JSON.stringify(spans.map((s) => s.name)));
    const op = spans.find((s) => s.parentSpanId === PARENT);
    assert.ok(op, 'the operation span is a child of the caller\'s span');
    assert.equal(op.traceId, TRACE);
    assert.equal(op.name, 'chat ot-primary');
    assert.equal(op.kind, 3);
    assert.equal(op.traceState, 'vendor=abc');
    assert.equal(op.resource['service.name'], 'tollgate-e2e');
    assert.equal(op.resource['deployment.environment'], 'e2e');
    const a = op.attrs;
    assert.equal(a['gen_ai.operation.name'], 'chat');
    assert.equal(a['gen_ai.request.model'], 'ot-primary');
    assert.equal(a['gen_ai.provider.name'], 'openai');
    assert.equal(a['gen_ai.response.model'], 'ot-backup-model');
    assert.equal(a['gen_ai.request.stream'], false);
    assert.ok(a['gen_ai.usage.input_tokens'] > 0);
    assert.equal(a['gen_ai.usage.output_tokens'], 3);
    assert.equal(a['server.address'], '127.0.0.1');
    assert.ok(a['server.port'] > 0);
    assert.equal(a['tollgate.retries'], 1);
    assert.equal(a['tollgate.fallbacks'], 1);
    assert.equal(a['tollgate.attempts'], 3);
    assert.equal(a['tollgate.outcome'], 'served');
    assert.equal(a['tollgate.fallback.model'], 'ot-backup');
    assert.equal(a['tollgate.request_id'], res.headers.get('x-litellm-call-id'));
    assert.equal(a['error.type'], undefined, 'served: no error');
    assert.equal(a['gen_ai.response.id'], res.json.id, 'the answer\'s id');
    assert.deepEqual(a['gen_ai.response.finish_reasons'], ['stop']);
    assert.equal(a['gen_ai.input.messages'], undefined, 'no message text unless capture_content');
    assert.equal(a['gen_ai.output.messages'], undefined);
    assert.ok(!JSON.stringify(spans).includes('Say something short'), 'the prompt is in no span');
    assert.ok(BigInt(op.endTimeUnixNano) > BigInt(op.startTimeUnixNano));

    const children = spans.filter((s) => s.parentSpanId === op.spanId);
    assert.equal(children.length, 3);
    const failed = children.filter((s) => s.attrs['error.type']);
    assert.equal(failed.length, 2, 'the two 503s');
    for (const f of failed) {
      assert.equal(f.status.code, 2);
      assert.equal(f.attrs['http.response.status_code'], 503);
      assert.equal(f.attrs['tollgate.deployment'], 'ot-primary-1');
    }
    const served = children.find((s) => !s.attrs['error.type']);
    assert.equal(served.attrs['tollgate.deployment'], 'ot-backup-1');
    assert.equal(served.attrs['tollgate.decision'], 'served');
    for (const c of children) {
      assert.ok(BigInt(c.startTimeUnixNano) >= BigInt(op.startTimeUnixNano), 'children start inside the operation');
      assert.ok(BigInt(c.endTimeUnixNano) <= BigInt(op.endTimeUnixNano), 'children end inside the operation');
    }

    // Upstream: each attempt carried the caller's trace with its own span as parent.
    const traces = (await mock.stats()).traces;
    assert.equal(traces.length, 3);
    for (const t of traces) {
      const m = t.traceparent.match(/^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/);
      assert.ok(m, t.traceparent);
      assert.equal(m[1], TRACE);
      assert.ok(children.some((c) => c.spanId === m[2]), `the upstream parent ${m[2]} is an attempt span`);
      assert.equal(t.tracestate, 'vendor=abc');
    }
    const row = await spendLogOf(gw, res);
    assert.equal(row.metadata?.trace_id, TRACE, JSON.stringify(row.metadata));
  } finally {
    await rx.stop();
  }
});

e2e('a refused request and a request with no (or a malformed) traceparent: spans of their own, an error status, a new trace', async (ctx) => {
  const { mock } = state;
  const rx = await OtlpReceiver.start();
  try {
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [openaiDeployment(mock, 'ot-paid', 'ot-paid-model', { input_cost_per_token: 0.001, output_cost_per_token: 0.001 })],
      tollgate_settings: otelConfig(rx),
    }));
    const k = await gw.generateKey({ max_budget: 0.000001 });
    const refused = await gw.fetch('/v1/chat/completions', { body: chatBody('ot-paid'), headers: { authorization: `Bearer ${k.key}` }, auth: false });
    assert.equal(refused.status, 429, refused.text);
    const malformed = await gw.fetch('/v1/chat/completions', {
      body: chatBody('ot-paid'), headers: { traceparent: `00-${'0'.repeat(32)}-${PARENT}-01` },
    });
    assert.equal(malformed.status, 200, malformed.text);
    const spans = await waitFor(() => (rx.spans().length >= 3 ? rx.spans() : null), { what: 'the spans exported' });
    assert.deepEqual(rx.invalid, []);
    const r = spans.find((s) => s.traceId === refused.headers.get('x-tollgate-trace-id'));
    assert.ok(r, 'the refused request has a span');
    assert.equal(r.parentSpanId, undefined, 'a new trace: a root span');
    assert.equal(r.status.code, 2);
    assert.equal(r.attrs['tollgate.outcome'], 'refused');
    assert.equal(r.attrs['tollgate.attempts'], 0);
    assert.equal(spans.filter((s) => s.parentSpanId === r.spanId).length, 0, 'no attempt');
    const m = spans.find((s) => s.traceId === malformed.headers.get('x-tollgate-trace-id') && s.parentSpanId === undefined);
    assert.ok(m, 'an all-zero trace id is ignored: a new trace');
    assert.match(m.traceId, /^[0-9a-f]{32}$/);
    assert.notEqual(m.traceId, '0'.repeat(32));
    assert.equal((await mock.model('ot-paid-model')).requests, 1, 'only the admitted request went upstream');
  } finally {
    await rx.stop();
  }
});

e2e('a degraded answer and a stream: the operation span says so, with the attempts that led there', async (ctx) => {
  const { mock } = state;
  const rx = await OtlpReceiver.start();
  try {
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [openaiDeployment(mock, 'ot-eq', 'ot-eq-up'), openaiDeployment(mock, 'ot-eq-alt', 'ot-eq-alt-up')],
      fallback_policy: { model_groups: { 'ot-eq': { degradation: { mode: 'equivalent', model: 'ot-eq-alt' } } } },
      tollgate_settings: otelConfig(rx),
    }));
    await mock.script('ot-eq-up', [{ error: 'overloaded' }]);
    await mock.script('ot-eq-alt-up', [OK('from the equivalent')]);
    const d = await gw.fetch('/v1/chat/completions', { body: chatBody('ot-eq') });
    assert.equal(d.status, 200, d.text);
    assert.equal(d.headers.get('x-tollgate-degradation'), 'equivalent');
    const st = await gw.fetch('/v1/chat/completions', { body: chatBody('ot-eq-alt', { stream: true, stream_options: { include_usage: true } }) });
    assert.equal(st.status, 200);
    const spans = await waitFor(() => (rx.spans().length >= 5 ? rx.spans() : null), { what: 'the spans exported' });
    assert.deepEqual(rx.invalid, []);
    const op = spans.find((s) => s.traceId === d.headers.get('x-tollgate-trace-id') && s.parentSpanId === undefined);
    assert.equal(op.attrs['tollgate.outcome'], 'degraded');
    assert.equal(op.attrs['tollgate.degradation'], 'equivalent');
    assert.equal(op.attrs['gen_ai.response.model'], 'ot-eq-alt-up');
    assert.equal(op.status.code, undefined, 'a labeled degraded answer is not an error');
    const kids = spans.filter((s) => s.parentSpanId === op.spanId);
    assert.deepEqual(kids.map((k) => k.attrs['tollgate.model_group']).sort(), ['ot-eq', 'ot-eq-alt']);
    assert.equal(kids.find((k) => k.attrs['tollgate.model_group'] === 'ot-eq').attrs['tollgate.decision'], 'degrade');
    const so = spans.find((s) => s.traceId === st.headers.get('x-tollgate-trace-id') && s.parentSpanId === undefined);
    assert.equal(so.attrs['gen_ai.request.stream'], true);
    assert.equal(so.attrs['tollgate.outcome'], 'served');
    assert.ok(so.attrs['gen_ai.usage.output_tokens'] > 0, JSON.stringify(so.attrs));
    const streamId = st.text.match(/"id":"([^"]+)"/)[1];
    assert.equal(so.attrs['gen_ai.response.id'], streamId, 'the id the chunks carried');
    assert.deepEqual(so.attrs['gen_ai.response.finish_reasons'], ['stop'], 'read from the last chunk');
  } finally {
    await rx.stop();
  }
});

e2e('capture_content: true exports the prompt and the answer as gen_ai.input/output.messages, streamed or not', async (ctx) => {
  const { mock } = state;
  const rx = await OtlpReceiver.start();
  try {
    const gw = await ctx.gateway(gatewayConfig({
      model_list: [openaiDeployment(mock, 'ot-cc', 'ot-cc-up')],
      tollgate_settings: otelConfig(rx, { capture_content: true }),
    }));
    const messages = [{ role: 'system', content: 'Be "brief".' }, { role: 'user', content: [{ type: 'text', text: 'line one\nline two' }] }];
    await mock.script('ot-cc-up', [OK('plain answer'), OK('streamed answer here')]);
    const a = await gw.fetch('/v1/chat/completions', { body: { model: 'ot-cc', messages } });
    assert.equal(a.status, 200, a.text);
    const b = await gw.fetch('/v1/chat/completions', { body: { model: 'ot-cc', messages, stream: true } });
    assert.equal(b.status, 200, b.text);
    const spans = await waitFor(() => (rx.spans().length >= 4 ? rx.spans() : null), { what: 'the spans exported' });
    assert.deepEqual(rx.invalid, []);
    const opOf = (r) => spans.find((s) => s.traceId === r.headers.get('x-tollgate-trace-id') && s.parentSpanId === undefined);
    for (const [r, text] of [[a, 'plain answer'], [b, 'streamed answer here']]) {
      const op = opOf(r);
      const input = JSON.parse(op.attrs['gen_ai.input.messages']);
      assert.deepEqual(input, [
        { role: 'system', parts: [{ type: 'text', content: 'Be "brief".' }] },
        { role: 'user', parts: [{ type: 'text', content: 'line one\nline two' }] },
      ]);
      const output = JSON.parse(op.attrs['gen_ai.output.messages']);
      assert.equal(output.length, 1);
      assert.equal(output[0].role, 'assistant');
      assert.equal(output[0].finish_reason, 'stop');
      assert.equal(output[0].parts.map((p) => p.content).join(''), text);
      const kids = spans.filter((s) => s.parentSpanId === op.spanId);
      assert.ok(kids.length >= 1 && kids.every((k) => k.attrs['gen_ai.input.messages'] === undefined), 'text on the operation span only');
    }
  } finally {
    await rx.stop();
  }
});

e2e('without span export the caller\'s traceparent goes upstream unchanged; an unsampled trace exports no span', async (ctx) => {
  const { mock } = state;
  const plain = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'ot-plain', 'ot-plain-up')] }));
  await mock.script('ot-plain-up', [OK('fine')]);
  const tp = `00-${TRACE}-${PARENT}-01`;
  const r = await plain.fetch('/v1/chat/completions', { body: chatBody('ot-plain'), headers: { traceparent: tp, tracestate: 'bad\u00e9=1' } });
  assert.equal(r.status, 200);
  const t = (await mock.stats()).traces.at(-1);
  assert.equal(t.traceparent, tp, 'passed on as the caller sent it');
  assert.equal(t.tracestate, '', 'a tracestate that is not printable ASCII is dropped');
  const none = await plain.fetch('/v1/chat/completions', { body: chatBody('ot-plain') });
  assert.equal(none.status, 200);
  assert.equal((await mock.stats()).traces.at(-1).traceparent, '', 'no trace, no header');

  const rx = await OtlpReceiver.start();
  try {
    const gw = await ctx.gateway(gatewayConfig({ model_list: [openaiDeployment(mock, 'ot-plain', 'ot-plain-up')], tollgate_settings: otelConfig(rx) }));
    const unsampled = await gw.fetch('/v1/chat/completions', { body: chatBody('ot-plain'), headers: { traceparent: `00-${TRACE}-${PARENT}-00` } });
    assert.equal(unsampled.status, 200);
    const sampled = await gw.fetch('/v1/chat/completions', { body: chatBody('ot-plain') });
    assert.equal(sampled.status, 200);
    await waitFor(() => rx.spans().some((s) => s.traceId === sampled.headers.get('x-tollgate-trace-id')), { what: 'the sampled request\'s spans' });
    assert.equal(rx.spans().filter((s) => s.traceId === TRACE).length, 0, 'nothing exported for the unsampled trace');
    assert.match((await mock.stats()).traces.at(-2).traceparent, new RegExp(`^00-${TRACE}-[0-9a-f]{16}-00$`), 'its upstream call says not sampled');
  } finally {
    await rx.stop();
  }
});

for (const mode of ['hang', 503]) {
  e2e(`a collector that ${mode === 'hang' ? 'hangs' : 'answers 503'}: requests are served as fast, spans are dropped and counted`, async (ctx) => {
    const { mock } = state;
    const rx = await OtlpReceiver.start(mode);
    try {
      const gw = await ctx.gateway(gatewayConfig({
        model_list: [openaiDeployment(mock, 'ot-fast', 'ot-fast-model')],
        tollgate_settings: otelConfig(rx, { timeout_ms: 300, queue_size: 4 }),
      }));
      const started = Date.now();
      for (let i = 0; i < 30; i++) {
        const r = await gw.fetch('/v1/chat/completions', { body: chatBody('ot-fast') });
        assert.equal(r.status, 200);
      }
      const elapsed = Date.now() - started;
      assert.ok(elapsed < 5000, `30 requests took ${elapsed} ms with the collector down`);
      const dropped = await waitFor(async () => {
        const t = await metricsText(gw);
        const d = (metricValue(t, 'tollgate_otel_spans_dropped_total', { reason: 'queue_full' }) ?? 0) +
                  (metricValue(t, 'tollgate_otel_spans_dropped_total', { reason: 'export_failed' }) ?? 0);
        return d > 0 ? d : null;
      }, { what: 'dropped spans counted', timeoutMs: 8000 });
      assert.ok(dropped > 0);
      await waitFor(() => rx.requests > 0, { what: 'the exporter tried the collector', timeoutMs: 5000 });
    } finally {
      await rx.stop();
    }
  }, { timeout: 30000 });
}
