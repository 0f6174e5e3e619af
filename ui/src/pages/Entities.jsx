// Keys, users, teams, organizations, customers, tags, budgets: list, search, create, edit,
// block, delete — whatever the admin API offers for the entity (entities.js).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../api.js';
import { ENTITIES } from '../entities.js';
import { BudgetBar, Badge, ErrorBox, Loading, Modal, SecretOnce, Table, useApi } from '../components.jsx';
import { EntityForm } from '../form.jsx';
import { money, short, text, when } from '../format.js';

function columnsFor(kind, def) {
  const name = { label: def.singular === 'key' ? 'alias' : 'name', get: (r) => <span class="name" data-testid="row-name">{text(def.name(r))}</span> };
  const budget = { label: 'spend / budget', get: (r) => <BudgetBar spend={r.spend} reserved={r.reserved_spend} max={r.max_budget} /> };
  const blocked = { label: 'state', get: (r) => (def.blocked?.(r) ? <Badge kind="bad">blocked</Badge> : <Badge kind="good">active</Badge>) };
  switch (kind) {
    case 'keys': return [name, { label: 'key', get: (r) => <code>{text(r.key_name)}</code> }, budget,
      { label: 'team', get: (r) => text(r.team_id) }, { label: 'user', get: (r) => text(r.user_id) },
      { label: 'tags', get: (r) => text(r.tags) }, { label: 'models', get: (r) => text(r.models?.length ? r.models : ['all']) },
      { label: 'expires', get: (r) => when(r.expires) }, blocked];
    case 'users': return [name, { label: 'user id', get: (r) => text(r.user_id) }, { label: 'email', get: (r) => text(r.user_email) },
      budget, { label: 'keys', get: (r) => text(r.key_count) }, { label: 'models', get: (r) => text(r.models?.length ? r.models : ['all']) }];
    case 'teams': return [name, { label: 'team id', get: (r) => text(r.team_id) }, { label: 'organization', get: (r) => text(r.organization_id) },
      budget, { label: 'keys', get: (r) => text(r.keys?.length ?? 0) }, { label: 'members', get: (r) => text(r.members_with_roles?.length ?? 0) }, blocked];
    case 'organizations': return [name, { label: 'id', get: (r) => text(r.organization_id) }, budget, { label: 'teams', get: (r) => text(r.teams) },
      { label: 'models', get: (r) => text(r.models?.length ? r.models : ['all']) }];
    case 'customers': return [name, { label: 'end-user id', get: (r) => text(r.user_id) }, budget,
      { label: 'linked budget', get: (r) => text(r.budget_id) }, blocked];
    case 'tags': return [name, { label: 'description', get: (r) => text(r.description) }, budget, { label: 'window', get: (r) => text(r.budget_duration) }];
    case 'budgets': return [name, { label: 'max budget', get: (r) => money(r.max_budget) }, { label: 'soft', get: (r) => money(r.soft_budget) },
      { label: 'window', get: (r) => text(r.budget_duration) }, { label: 'rpm', get: (r) => text(r.rpm_limit) }, { label: 'tpm', get: (r) => text(r.tpm_limit) },
      { label: 'parallel', get: (r) => text(r.max_parallel_requests) }];
    default: return [name];
  }
}

function RowActions({ def, row, onEdit, onMembers, reload, setError }) {
  const [confirming, setConfirming] = useState(false);
  const act = async (fn) => {
    setError(null);
    try { await fn(); await reload(); } catch (e) { setError(e); }
  };
  return (
    <span class="actions" onClick={(e) => e.stopPropagation()}>
      {onMembers && <button type="button" class="small secondary" data-testid="members" onClick={() => onMembers(row)}>Members</button>}
      {def.update && <button type="button" class="small" data-testid="edit" onClick={() => onEdit(row)}>Edit</button>}
      {def.block && (def.blocked(row)
        ? <button type="button" class="small" data-testid="unblock" onClick={() => act(() => def.block(row, false))}>Unblock</button>
        : <button type="button" class="small warn" data-testid="block" onClick={() => act(() => def.block(row, true))}>Block</button>)}
      {def.remove && (confirming
        ? <><button type="button" class="small danger" data-testid="confirm-delete" onClick={() => act(() => def.remove(row))}>Delete {text(def.name(row))}?</button>
          <button type="button" class="small secondary" onClick={() => setConfirming(false)}>Keep</button></>
        : <button type="button" class="small danger" data-testid="delete" onClick={() => setConfirming(true)}>Delete</button>)}
    </span>
  );
}

export function EntitiesPage({ kind }) {
  const def = ENTITIES[kind];
  const [rows, setRows] = useState(null);
  const [error, setError] = useState(null);
  const [actionError, setActionError] = useState(null);
  const [search, setSearch] = useState('');
  const [editing, setEditing] = useState(null);   // a row, or 'new'
  const [secret, setSecret] = useState(null);
  const [membersOf, setMembersOf] = useState(null);  // a team id (teams only)

  const reload = async () => {
    try { setRows(await def.list()); setError(null); } catch (e) { setError(e); }
  };
  useEffect(() => { setRows(null); setSearch(''); setEditing(null); setSecret(null); setActionError(null); reload(); }, [kind]);

  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    return !rows ? null : q ? rows.filter((r) => def.searchText(r).toLowerCase().includes(q)) : rows;
  }, [rows, search, def]);

  const columns = [...columnsFor(kind, def)];
  if (def.update || def.block || def.remove)
    columns.push({ label: '', class: 'right', get: (r) => <RowActions def={def} row={r} onEdit={setEditing} reload={reload} setError={setActionError}
      onMembers={kind === 'teams' ? (t) => setMembersOf(t.team_id) : null} /> });

  const submit = async (body) => {
    let s = null;
    if (editing === 'new') {
      const r = await def.create(body);
      s = def.secretOf?.(r);
    } else {
      await def.update(editing, body);
    }
    setEditing(null);
    await reload();
    // The new secret is shown once the list holds its key: what the page shows agrees with itself.
    if (s) setSecret(s);
  };

  return (
    <section data-testid={`page-${kind}`}>
      <div class="page-head">
        <h1>{def.title}</h1>
        <input type="search" placeholder={`Search ${def.title.toLowerCase()}`} value={search} data-testid="search"
          onInput={(e) => setSearch(e.currentTarget.value)} />
        <button type="button" data-testid="create" onClick={() => { setEditing('new'); setSecret(null); }}>New {def.singular}</button>
      </div>
      {def.note && <p class="muted">{def.note}</p>}
      {secret && <SecretOnce secret={secret} onDone={() => setSecret(null)} />}
      <ErrorBox error={actionError} />
      <ErrorBox error={error} what={`Could not load ${def.title.toLowerCase()}`} />
      {!rows && !error ? <Loading /> : rows && (
        <Table testid={`${kind}-table`} columns={columns} rows={shown} rowKey={def.id}
          empty={rows.length ? 'No match.' : `No ${def.title.toLowerCase()} yet.`} />
      )}
      {kind === 'budgets' && <BudgetsInForce />}
      {membersOf && rows && (
        <Modal title={`Members of team ${membersOf}`} onClose={() => setMembersOf(null)}>
          <TeamMembers team={rows.find((t) => t.team_id === membersOf)} reload={reload} />
        </Modal>
      )}
      {editing && (
        <Modal title={editing === 'new' ? `New ${def.singular}` : `Edit ${def.singular} ${text(def.name(editing))}`} onClose={() => setEditing(null)}>
          <EntityForm key={editing === 'new' ? 'new' : def.id(editing)} fields={def.fields} initial={editing === 'new' ? null : editing}
            submit={submit} onCancel={() => setEditing(null)} testid={`${kind}-form`} />
        </Modal>
      )}
    </section>
  );
}

const MEMBER_FIELDS = [
  { name: 'user_id', label: 'user id', kind: 'text', required: true, help: 'an existing user (Users page)' },
  { name: 'role', label: 'role', kind: 'text', help: 'user or admin (default user)' },
  { name: 'max_budget_in_team', label: 'max budget in team', kind: 'money', help: 'dollars: this member\'s own cap in the team' },
  { name: 'budget_duration', label: 'budget duration', kind: 'text', help: 'e.g. 1d, 30d' },
];

/// A team's members (POST /team/member_add, /team/member_delete).
function TeamMembers({ team, reload }) {
  const [error, setError] = useState(null);
  const [formKey, setFormKey] = useState(0);
  if (!team) return <div class="empty">This team is gone.</div>;
  const add = async (b) => {
    const body = { team_id: team.team_id, member: { user_id: b.user_id, role: b.role ?? 'user' } };
    if (b.max_budget_in_team !== undefined) body.max_budget_in_team = b.max_budget_in_team;
    if (b.budget_duration !== undefined) body.budget_duration = b.budget_duration;
    try {
      await api('/team/member_add', { body });
    } catch (e) {
      if (typeof e.param === 'string' && e.param.startsWith('member.')) e.param = e.param.slice('member.'.length);
      throw e;
    }
    await reload();
    setFormKey((k) => k + 1);
  };
  const remove = async (m) => {
    setError(null);
    try { await api('/team/member_delete', { body: { team_id: team.team_id, user_id: m.user_id } }); await reload(); } catch (e) { setError(e); }
  };
  return (
    <div data-testid="team-members">
      <ErrorBox error={error} />
      <Table testid="members-table" rowKey={(m) => m.user_id} columns={[
        { label: 'user', get: (m) => <span class="name">{text(m.user_id)}</span> },
        { label: 'role', get: (m) => text(m.role) },
        { label: 'max budget in team', get: (m) => money(m.max_budget_in_team) },
        { label: 'window', get: (m) => text(m.budget_duration) },
        { label: '', class: 'right', get: (m) => <button type="button" class="small danger" onClick={() => remove(m)}>Remove</button> },
      ]} rows={team.members_with_roles} empty="No members." />
      <h2>Add a member</h2>
      <EntityForm key={formKey} fields={MEMBER_FIELDS} initial={null} submit={add} submitLabel="Add member" testid="member-form" />
    </div>
  );
}

/// Every budget admission enforces now (GET /tollgate/budgets), closest to its cap first.
function BudgetsInForce() {
  const { data, error } = useApi('/tollgate/budgets?limit=200', { poll: 5000 });
  return (
    <div class="card">
      <h2>Budgets in force</h2>
      <p class="muted">Every scope with a cap that admission checks — keys and their windows, per-model budgets, users, teams, members, organizations, end users, tags, global — spent and reserved in its current window.</p>
      <ErrorBox error={error} />
      <Table testid="budgets-in-force" rowKey={(b) => `${b.scope}:${b.id}`} columns={[
        { label: 'scope', get: (b) => text(b.scope) },
        { label: 'name', get: (b) => <span class="name">{text(b.name)}</span> },
        { label: 'used', get: (b) => <BudgetBar spend={b.spend} reserved={b.reserved} max={b.max_budget} /> },
        { label: 'window', get: (b) => text(b.budget_duration ?? 'lifetime') },
        { label: 'resets', get: (b) => when(b.budget_reset_at) },
      ]} rows={data?.budgets} empty="No budget with a cap." />
    </div>
  );
}

/// A virtual key's own key, read-only (GET /key/info without ?key= answers the caller's own).
export function MyKeyPage({ who }) {
  const { data, error } = useApi('/key/info', { poll: 5000 });
  const k = data?.info;
  return (
    <section data-testid="page-my-key">
      <h1>My key</h1>
      <ErrorBox error={error} />
      {!k ? (!error && <Loading />) : (
        <dl class="facts">
          <dt>alias</dt><dd data-testid="my-alias">{text(k.key_alias)}</dd>
          <dt>key</dt><dd><code>{text(k.key_name)}</code> <span class="muted">({short(k.token ?? who.token)})</span></dd>
          <dt>budget</dt><dd><BudgetBar spend={k.spend} reserved={k.reserved_spend} max={k.max_budget} /></dd>
          <dt>window</dt><dd>{text(k.budget_duration)} {k.budget_reset_at ? `· resets ${when(k.budget_reset_at)}` : ''}</dd>
          <dt>models</dt><dd>{text(k.models?.length ? k.models : ['all'])}</dd>
          <dt>team</dt><dd>{text(k.team_id)}</dd>
          <dt>tags</dt><dd>{text(k.tags)}</dd>
          <dt>limits</dt><dd>rpm {text(k.rpm_limit)} · tpm {text(k.tpm_limit)} · parallel {text(k.max_parallel_requests)}</dd>
          <dt>expires</dt><dd>{when(k.expires)}</dd>
          <dt>state</dt><dd>{k.blocked ? <Badge kind="bad">blocked</Badge> : <Badge kind="good">active</Badge>}</dd>
        </dl>
      )}
    </section>
  );
}
