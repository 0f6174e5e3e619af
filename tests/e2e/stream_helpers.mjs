// Stream clients and money checks shared by the stream e2e suites (stream_limits,
// stream_continuation, stream_faults): the official SDKs read a stream to its end and report what
// the client saw; the money check compares the gateway's spend with the simulator's bill.
import assert from 'node:assert/strict';
import { spendLogOf } from './harness.mjs';
import { spendNanos, mockBillNanos, unknownCharges, nanos, IN_PRICE, OUT_PRICE } from './budget_helpers.mjs';

export const PRICES = { input: IN_PRICE, output: OUT_PRICE };
export const MESSAGES = [{ role: 'user', content: 'Tell me something long.' }];
/// The simulator's canonical answer of `n` tokens ("w0 w1 … w{n-1}").
export const words = (n) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

/// Streams a chat completion through the official openai SDK. Returns what the client saw:
/// {text, finish, usage, model, error, ms, response, ids, roles}; `error` is the HTTP error when
/// the request was refused before a stream began (then `response` is null), else the error the
/// stream ended with (null when it ended cleanly).
export async function openaiStream(client, body = {}, headers = {}) {
  const t = performance.now();
  let data;
  let response;
  try {
    ({ data, response } = await client.chat.completions
      .create({ messages: MESSAGES, max_tokens: 100, stream: true, stream_options: { include_usage: true }, ...body }, { headers })
      .withResponse());
  } catch (e) {
    return { text: '', finish: null, usage: null, model: null, error: e, ms: performance.now() - t, response: null, ids: new Set(), roles: 0 };
  }
  let text = '';
  let finish = null;
  let usage = null;
  let model = null;
  let error = null;
  const ids = new Set();
  let roles = 0;
  try {
    for await (const chunk of data) {
      ids.add(chunk.id);
      model = chunk.model ?? model;
      if (chunk.choices[0]?.delta?.role) roles += 1;
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
  } catch (e) { error = e; }
  return { text, finish, usage, model, error, ms: performance.now() - t, response, ids, roles };
}

/// Streams /v1/messages through the official Anthropic SDK. Returns {text, starts, stops,
/// stopReason, usage, model, error, ms, blockStarts, textIndices, response}: `textIndices` the block
/// indices text deltas came in, `usage` the message_delta's (output) merged over message_start's.
export async function anthropicStream(client, body = {}, headers = {}) {
  const t = performance.now();
  let stream;
  let response;
  try {
    ({ data: stream, response } = await client.messages
      .create({ model: 'x', max_tokens: 100, messages: MESSAGES, stream: true, ...body }, { headers })
      .withResponse());
  } catch (e) {
    return { text: '', starts: 0, stops: 0, stopReason: null, usage: null, model: null, error: e, ms: performance.now() - t, blockStarts: [], textIndices: new Set(), response: null };
  }
  let text = '';
  let starts = 0;
  let stops = 0;
  let stopReason = null;
  let usage = null;
  let model = null;
  let error = null;
  const blockStarts = [];
  const textIndices = new Set();
  try {
    for await (const ev of stream) {
      if (ev.type === 'message_start') {
        starts += 1;
        model = ev.message?.model ?? model;
        usage = { ...ev.message?.usage };
      }
      if (ev.type === 'content_block_start') blockStarts.push(ev.index);
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') {
        textIndices.add(ev.index);
        text += ev.delta.text;
      }
      if (ev.type === 'message_delta') {
        stopReason = ev.delta.stop_reason ?? stopReason;
        usage = { ...usage, ...ev.usage };
      }
      if (ev.type === 'message_stop') stops += 1;
    }
  } catch (e) { error = e; }
  return { text, starts, stops, stopReason, usage, model, error, ms: performance.now() - t, blockStarts, textIndices, response };
}

/// One request's money: the serving attempt is charged its own bill (the simulator's, for
/// upstream model `served`), the key's spend is that plus the charges of the attempts whose bill
/// was unknown (cut, cut off unseen), and those charges cover what the simulator billed upstream
/// model `other` (the failed attempts'). Returns {row, attempts, unknown, otherBill}.
export async function checkMoney(gw, mock, key, response, served, other) {
  const row = await spendLogOf(gw, response);
  const attempts = row.decision.steps.filter((s) => s.step === 'attempt');
  const servedBill = await mockBillNanos(mock, served, PRICES);
  const otherBill = other ? await mockBillNanos(mock, other, PRICES) : 0;
  const unknown = unknownCharges(row);
  const spent = await spendNanos(gw, key);
  assert.equal(nanos(attempts.at(-1).charged), servedBill, 'the serving attempt is charged its own bill');
  assert.equal(spent, servedBill + unknown, `spend ${spent} = served ${servedBill} + attempts of unknown bill ${unknown}`);
  assert.ok(unknown >= otherBill, `the failed attempts' charge ${unknown} covers their bill ${otherBill}`);
  return { row, attempts, unknown, otherBill };
}
