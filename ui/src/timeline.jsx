// A request's decision trace (the spend-log row's `decision`, docs/failure_policy.md §6) as a
// timeline: every attempt with its deployment, class, action, reserved and charged; skipped
// fallbacks with their reasons; fallbacks, degradation and the stop; the request budgets.
import { Badge } from './components.jsx';
import { money, ms, text } from './format.js';

/// The decision object of a row or a simulated request (a JSON string or an object).
export function decisionOf(v) {
  if (!v) return null;
  if (typeof v === 'string') { try { return JSON.parse(v); } catch { return null; } }
  return v;
}

const STEP_KIND = { attempt: 'attempt', skip: 'skip', fallback: 'fallback', degrade: 'degrade', stop: 'stop', finish: 'finish' };

function Step({ s, i }) {
  const kind = STEP_KIND[s.step] ?? 'other';
  if (s.step === 'attempt') {
    const ok = s.status >= 200 && s.status < 300;
    return (
      <li class={`step attempt ${ok ? 'ok' : 'failed'}`} data-testid="step" data-step="attempt">
        <div class="step-head">
          <Badge kind={ok ? 'good' : 'bad'}>{s.status === 0 ? 'no answer' : text(s.status)}</Badge>
          <strong>attempt</strong> <code>{text(s.group)}/{text(s.deployment)}</code>
          <span class="muted"> · {text(s.provider)} · circuit {text(s.circuit)} · {ms(s.duration_ms)}</span>
        </div>
        <div class="step-body">
          {s.class && <span>class <Badge kind="warn" data-testid="step-class">{text(s.class)}</Badge></span>}
          {s.action && <span> action <strong data-testid="step-action">{text(s.action)}</strong></span>}
          {s.decision && <span> → <strong>{text(s.decision)}</strong></span>}
          <span class="money"> reserved {money(s.reserved)} · charged <span data-testid="step-charged">{money(s.charged)}</span></span>
          {s.evidence && <span class="muted"> · evidence {text(s.evidence)}</span>}
          {s.max_tokens && <span class="muted"> · max_tokens {text(s.max_tokens)}{s.output_capped_by ? ` (capped by ${text(s.output_capped_by)})` : ''}</span>}
          {s.continuation && <span class="muted"> · continuation {text(s.continuation)}</span>}
        </div>
      </li>
    );
  }
  return (
    <li class={`step ${kind}`} data-testid="step" data-step={s.step}>
      <div class="step-head">
        <Badge kind={s.step === 'skip' ? 'warn' : s.step === 'degrade' ? 'warn' : s.step === 'stop' ? 'bad' : 'plain'}>{text(s.step)}</Badge>
        {s.group && <code> {text(s.group)}{s.deployment ? `/${s.deployment}` : ''}</code>}
        {s.decision && <span> {text(s.decision)}</span>}
      </div>
      {s.reason && <div class="step-body">reason: <span data-testid="step-reason">{text(s.reason)}</span></div>}
    </li>
  );
}

export function Timeline({ decision }) {
  const d = decisionOf(decision);
  if (!d) return <div class="empty">No decision trace recorded for this request.</div>;
  const b = d.budget ?? {};
  const c = d.consumed ?? {};
  return (
    <div class="timeline" data-testid="timeline">
      <ol class="steps">{(d.steps ?? []).map((s, i) => <Step s={s} i={i} key={i} />)}</ol>
      <div class="outcome">
        outcome <strong data-testid="outcome">{text(d.outcome)}</strong>
        {d.served_by && <span> · served by <code>{text(d.served_by)}</code></span>}
        {d.degradation ? <span> · degradation <Badge kind="warn" data-testid="degradation">{text(d.degradation)}</Badge></span> : <span class="muted"> · no degradation</span>}
        {d.continued_by && <span> · continued by <code>{text(d.continued_by)}</code></span>}
      </div>
      <table class="budgets-checked" data-testid="request-budgets">
        <thead><tr><th>request budget</th><th>used</th><th>allowed</th></tr></thead>
        <tbody>
          <tr><td>retries</td><td>{text(c.retries)}</td><td>{text(b.max_retries)}</td></tr>
          <tr><td>fallbacks</td><td>{text(c.fallbacks)}</td><td>{text(b.max_fallbacks)}</td></tr>
          <tr><td>time</td><td>{ms(c.elapsed_ms)}</td><td>{ms(b.deadline_ms)}</td></tr>
          <tr><td>cost</td><td>reserved {money(c.reserved)} · charged {money(c.charged)}</td><td>{b.max_request_cost ? money(b.max_request_cost) : 'no ceiling'}</td></tr>
        </tbody>
      </table>
      {b.ignored_overrides?.length > 0 && <div class="muted">ignored overrides: {text(b.ignored_overrides)}</div>}
    </div>
  );
}
