// Forms for the admin API's create/update bodies. Values are sent as the API takes them; the
// API validates (its 400s name the field in `param`, shown next to that field).
import { useState } from 'preact/hooks';
import { ApiError } from './api.js';

/// Field kinds: text, int, money, list (comma-separated strings), json (object/array), bool,
/// duration (text such as "30d"). `create`/`edit` false hide the field there.
export function toInput(field, value) {
  if (value === null || value === undefined) return field.kind === 'bool' ? false : '';
  switch (field.kind) {
    case 'list': return Array.isArray(value) ? value.join(', ') : String(value);
    case 'json': return (Array.isArray(value) ? value.length : Object.keys(value).length) ? JSON.stringify(value, null, 1) : '';
    case 'bool': return !!value;
    default: return String(value);
  }
}

/// The JSON value for an input; `{error}` when it cannot be read (JSON).
function fromInput(field, raw) {
  if (field.kind === 'bool') return { value: !!raw };
  const s = String(raw).trim();
  if (s === '') return { value: null };
  switch (field.kind) {
    case 'int': case 'money': {
      // A number when it reads as one; else the text itself, for the API to name the field.
      const n = Number(s);
      return { value: Number.isFinite(n) && /^-?[0-9.eE+]+$/.test(s) ? n : s };
    }
    case 'list': return { value: s.split(',').map((x) => x.trim()).filter(Boolean) };
    case 'json':
      try { return { value: JSON.parse(s) }; } catch (e) { return { error: `not valid JSON: ${e.message}` }; }
    default: return { value: s };
  }
}

/// The top-level field an API error names (`budget_limits[1].max_budget` → `budget_limits`).
export const fieldOf = (param) => (typeof param === 'string' ? param.match(/^[A-Za-z0-9_]+/)?.[0] ?? null : null);

/// A form over `fields`; `initial` the record being edited (null: create). `submit(body)` returns
/// a promise; an ApiError naming a field is shown beside it, others above the buttons.
export function EntityForm({ fields, initial, submit, submitLabel, onCancel, testid }) {
  const creating = !initial;
  const shown = fields.filter((f) => (creating ? f.create !== false : f.edit !== false));
  const [values, setValues] = useState(() => Object.fromEntries(shown.map((f) => [f.name, toInput(f, creating ? f.default : initial[f.name])])));
  const [errors, setErrors] = useState({});
  const [general, setGeneral] = useState(null);
  const [busy, setBusy] = useState(false);

  const onSubmit = async (e) => {
    e.preventDefault();
    const body = {};
    const local = {};
    for (const f of shown) {
      if (f.readonlyOnEdit && !creating) continue;
      const raw = values[f.name];
      if (!creating && raw === toInput(f, initial?.[f.name])) continue;  // unchanged: not sent
      const r = fromInput(f, raw);
      if (r.error) { local[f.name] = r.error; continue; }
      if (creating && (r.value === null || (f.kind === 'bool' && r.value === false && !f.sendFalse))) continue;
      body[f.name] = r.value;  // on edit, null clears the field
    }
    setErrors(local);
    setGeneral(null);
    if (Object.keys(local).length) return;
    setBusy(true);
    try {
      await submit(body);
    } catch (err) {
      const field = err instanceof ApiError ? fieldOf(err.param) : null;
      if (field && shown.some((f) => f.name === field)) setErrors({ [field]: err.message });
      else setGeneral(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="entity-form" onSubmit={onSubmit} data-testid={testid} noValidate>
      <div class="fields">
        {shown.map((f) => {
          const id = `f-${f.name}`;
          const err = errors[f.name];
          const disabled = !creating && f.readonlyOnEdit;
          const set = (v) => setValues((s) => ({ ...s, [f.name]: v }));
          return (
            <div class={`field ${f.kind === 'json' ? 'wide' : ''} ${err ? 'has-error' : ''}`} key={f.name} data-field={f.name}>
              <label for={id}>{f.label ?? f.name}{f.required ? ' *' : ''}</label>
              {f.kind === 'bool' ? (
                <input id={id} name={f.name} type="checkbox" checked={values[f.name]} disabled={disabled}
                  onChange={(e) => set(e.currentTarget.checked)} />
              ) : f.kind === 'json' ? (
                <textarea id={id} name={f.name} rows={3} value={values[f.name]} disabled={disabled} placeholder={f.placeholder}
                  onInput={(e) => set(e.currentTarget.value)} />
              ) : (
                <input id={id} name={f.name} type="text" value={values[f.name]} disabled={disabled} placeholder={f.placeholder}
                  inputMode={f.kind === 'int' || f.kind === 'money' ? 'decimal' : undefined}
                  onInput={(e) => set(e.currentTarget.value)} />
              )}
              {f.help && <div class="help">{f.help}</div>}
              {err && <div class="field-error" role="alert" data-testid={`field-error-${f.name}`}>{err}</div>}
            </div>
          );
        })}
      </div>
      {general && <div class="error" role="alert" data-testid="form-error">{general.message}{general.status ? ` (HTTP ${general.status})` : ''}</div>}
      <div class="row">
        <button type="submit" disabled={busy} data-testid="submit">{submitLabel ?? (creating ? 'Create' : 'Save')}</button>
        {onCancel && <button type="button" class="secondary" onClick={onCancel}>Cancel</button>}
      </div>
    </form>
  );
}
