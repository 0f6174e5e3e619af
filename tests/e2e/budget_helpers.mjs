// Helpers shared by the budget e2e files (budget*.test.mjs, ledger_crash.test.mjs): prices,
// the gateway's worst-case bound and the mock's token counting mirrored in exact integer
// arithmetic, the seed-000 deployments, and small request wrappers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { openaiDeployment, anthropicDeployment, waitFor } from './harness.mjs';

/// Default prices of the paid deployments (dollars per token, as decimal strings).
export const IN_PRICE = '0.000001';
export const OUT_PRICE = '0.000002';

/// A decimal dollar amount (string or number) → BigInt pico-dollars (exact; throws when finer).
export function picos(dollars) {
  const s = typeof dollars === 'number' ? dollars.toFixed(15) : String(dollars);
  const m = /^(\d+)(?:\.(\d*))?$/.exec(s.trim());
  assert.ok(m, `not a plain decimal: ${s}`);
  const frac = (m[2] ?? '').replace(/0+$/, '');
  assert.ok(frac.length <= 12, `finer than a pico-dollar: ${s}`);
  return BigInt(m[1]) * 10n ** 12n + BigInt((frac + '0'.repeat(12)).slice(0, 12));
}

/// Nano-dollars (Number) from a dollar figure of the API (a JSON number or a string).
export const nanos = (dollars) => Math.round(Number(dollars ?? 0) * 1e9);

/// Dollars (a decimal string) for an integer number of nano-dollars.
export function dollars(n) {
  const s = String(n).padStart(10, '0');
  return `${s.slice(0, -9)}.${s.slice(-9)}`.replace(/\.?0+$/, '');
}

/// The gateway's cost rule: ceil((prompt × in + completion × out) picos / 1000) nanos.
export function costNanos(prompt, completion, inPrice = IN_PRICE, outPrice = OUT_PRICE) {
  const p = BigInt(prompt) * picos(inPrice) + BigInt(completion) * picos(outPrice);
  return Number((p + 999n) / 1000n);
}

const utf8 = (s) => Buffer.byteLength(s, 'utf8');
function stringBytes(v) {
  if (typeof v === 'string') return utf8(v);
  if (Array.isArray(v)) return v.reduce((a, x) => a + stringBytes(x), 0);
  if (v && typeof v === 'object') return Object.values(v).reduce((a, x) => a + stringBytes(x), 0);
  return 0;
}

/// The input-token bound of docs/budgets.md "Input bounds" for plain-text messages: 4 per
/// request + per message 4 + the UTF-8 bytes of every string in it (role included) + 4 per
/// content part; a top-level `system` string is one more message, each block of an array a part.
export const MSG = 4;
export const REQ = 4;
export function inputBound(body) {
  let total = REQ;
  for (const m of body.messages ?? []) {
    total += MSG;
    for (const [k, v] of Object.entries(m)) {
      if (k === 'content' && Array.isArray(v)) total += v.reduce((a, part) => a + MSG + stringBytes(part), 0);
      else total += stringBytes(v);
    }
  }
  if (body.system !== undefined) {
    total += Array.isArray(body.system) ? MSG * body.system.length : MSG;
    total += stringBytes(body.system);
  }
  return total;
}

/// Worst-case reservation (nanos) of one attempt of `body` (needs max_tokens).
export function worstNanos(body, inPrice = IN_PRICE, outPrice = OUT_PRICE) {
  const out = (body.max_completion_tokens ?? body.max_tokens) * (body.n ?? 1);
  assert.ok(Number.isInteger(out), 'worstNanos needs max_tokens');
  return costNanos(inputBound(body), out, inPrice, outPrice);
}

/// The mock's prompt-token count: Σ ceil(text bytes / 4) + 4 per message.
export function mockPromptTokens(body) {
  const text = (c) => (typeof c === 'string' ? c : (c ?? []).map((p) => p.text ?? '').join(''));
  let n = (body.messages ?? []).reduce((a, m) => a + Math.ceil(utf8(text(m.content)) / 4) + 4, 0);
  if (body.system !== undefined) n += Math.ceil(utf8(text(body.system)) / 4) + 4;
  return n;
}

/// A short paid request: "hi", max_tokens 10 (worst case 50,000 nanos, actual 25,000 at the
/// default prices).
export const hi = (model, extra = {}) => ({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 10, ...extra });

/// Seed 000's zero-cost primary: explicitly priced at 0, api_base a closed port (always fails).
export function freeBrokenDeployment(group = 'free-model') {
  return {
    model_name: group,
    litellm_params: {
      model: 'openai/free', api_base: 'http://127.0.0.1:9/v1', api_key: 'sk-none',
      input_cost_per_token: 0, output_cost_per_token: 0,
    },
    model_info: { id: `${group}.free`, input_cost_per_token: 0, output_cost_per_token: 0 },
  };
}

/// A priced OpenAI-compatible deployment on the mock.
export function paidDeployment(mock, group = 'paid-model', upstream = 'paid-upstream', { inPrice = IN_PRICE, outPrice = OUT_PRICE, ...rest } = {}) {
  return openaiDeployment(mock, group, upstream, { input_cost_per_token: inPrice, output_cost_per_token: outPrice, ...rest });
}

/// A priced Anthropic deployment on the mock.
export function paidAnthropicDeployment(mock, group, upstream, { inPrice = IN_PRICE, outPrice = OUT_PRICE, ...rest } = {}) {
  return anthropicDeployment(mock, group, upstream, { input_cost_per_token: inPrice, output_cost_per_token: outPrice, ...rest });
}

/// POST /v1/chat/completions with a key (raw response: status, headers, json).
export const chat = (gw, key, body, headers = {}) => gw.fetch('/v1/chat/completions', { auth: key, body, headers });

/// The key's recorded spend in nanos (/key/info).
export async function spendNanos(gw, key) {
  return nanos((await gw.keyInfo(key)).spend);
}

/// Polls /key/info until the key's spend is `expected` nanos (settlement runs just after the
/// response is written, so an immediate read may still miss the last request); returns it.
export async function expectSpend(gw, key, expected, what = 'key spend') {
  const deadline = Date.now() + 2000;
  let s;
  for (;;) {
    s = await spendNanos(gw, key);
    if (s === expected || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(s, expected, `${what}: ${s} nanos, expected ${expected}`);
  return s;
}

/// The spend-log row of one request (by its x-litellm-call-id), polled: rows are written by
/// the store's writer after the response.
export async function spendLogRow(gw, response) {
  const id = response.headers.get('x-litellm-call-id');
  assert.ok(id, 'the response has an x-litellm-call-id');
  const deadline = Date.now() + 3000;
  for (;;) {
    const rows = await gw.admin(`/spend/logs?request_id=${encodeURIComponent(id)}`);
    if (rows.length) return rows[0];
    assert.ok(Date.now() < deadline, `no spend log row for request ${id}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/// Billed dollars of the mock for an upstream model at the given prices, in nanos, with the
/// per-request rounding bound: {exact (BigInt picos), nanos (ceil of the total)}.
export async function mockBill(mock, upstream, inPrice = IN_PRICE, outPrice = OUT_PRICE) {
  const m = await mock.model(upstream);
  const p = BigInt(m.prompt_tokens) * picos(inPrice) + BigInt(m.completion_tokens) * picos(outPrice);
  return { ...m, picos: p, nanos: Number((p + 999n) / 1000n) };
}

/// The provider's bill of one mock `bills` entry (GET /mock/stats), in nanos: every token kind
/// at its price (dollar strings per token; absent kinds fall back as the gateway's table does:
/// cached/cache writes/audio in → input, audio out → output), rounded up once per request.
/// `prices.priority` ({input, output, cached}) applies to a bill served in the priority tier.
export function billNanos(b, prices) {
  let p = prices;
  if (b.service_tier === 'priority' && prices.priority) p = { ...prices, ...prices.priority };
  const input = p.input;
  const at = (n, price) => BigInt(n) * picos(price ?? input);
  const cw5 = p.cache_write ?? input;
  const parts = b.cached_tokens + b.cache_write_tokens + b.cache_write_1h_tokens + b.audio_input_tokens;
  let total = at(b.prompt_tokens - parts, input) + at(b.cached_tokens, p.cached) + at(b.cache_write_tokens, cw5) +
    at(b.cache_write_1h_tokens, p.cache_write_1h ?? cw5) + at(b.audio_input_tokens, p.audio_input);
  total += BigInt(b.completion_tokens - b.audio_output_tokens) * picos(p.output) +
    BigInt(b.audio_output_tokens) * picos(p.audio_output ?? p.output);
  return Number((total + 999n) / 1000n);
}

/// The mock's whole bill for an upstream model (Σ billNanos of its bills).
export async function mockBillNanos(mock, upstream, prices) {
  const s = await mock.stats();
  return (s.bills ?? []).filter((b) => b.model === upstream).reduce((a, b) => a + billNanos(b, prices), 0);
}

/// What a request's attempts were charged because their usage could not be read (evidence
/// `unreadable` / `no_answer`: the whole reservation), from its spend-log decision trace, in nanos.
export function unknownCharges(row) {
  return (row.decision?.steps ?? [])
    .filter((s) => s.step === 'attempt' && (s.evidence === 'unreadable' || s.evidence === 'no_answer'))
    .reduce((a, s) => a + nanos(s.charged), 0);
}

/// Counts a burst's responses: 200s, 429 budget_exceeded, and (with `unavailable: true`) 503
/// ledger_unavailable; anything else is listed in `other` (status and the start of the body),
/// so a test can assert that nothing unexpected came back.
export function tally(responses, { unavailable = false } = {}) {
  const t = { ok: 0, budget: 0, unavailable: 0, other: [] };
  for (const r of responses) {
    if (r.status === 200) t.ok++;
    else if (r.status === 429 && r.json?.error?.type === 'budget_exceeded') t.budget++;
    else if (unavailable && r.status === 503 && r.json?.error?.code === 'ledger_unavailable') t.unavailable++;
    else t.other.push(`${r.status} ${r.text.slice(0, 200)}`);
  }
  return t;
}

/// Holds an exclusive lock on the SQLite database `file` (from the sqlite3 shell) until
/// release() is called: the gateway's store cannot be written meanwhile.
export async function lockDatabase(file) {
  const proc = spawn('sqlite3', [file], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  // The shell has no busy timeout of its own: without one, BEGIN EXCLUSIVE fails at once when the
  // gateway's writer holds the write lock at that instant, and (without .bail) the shell would go
  // on to print 'locked' with no lock held. Wait for the lock, and stop on any error.
  proc.stdin.write(".bail on\n.timeout 20000\nBEGIN EXCLUSIVE;\nSELECT 'locked';\n");
  await waitFor(() => {
    if (err) throw new Error(`sqlite3 could not take the exclusive lock: ${err}`);
    return out.includes('locked');
  }, { timeoutMs: 30000, what: 'sqlite3 to take the exclusive lock' });
  return {
    release: async () => {
      proc.stdin.end('COMMIT;\n');
      await new Promise((r) => proc.on('close', r));
    },
  };
}
