// The admin API's entities as the UI lists and edits them: paths, ids, columns and every field
// the create/update endpoints take (docs/admin_api.md). Operations an entity lacks in the API
// (no /user/delete, no /organization/update …) are simply not offered.
import { api, qs } from './api.js';

const money = (name, label, help) => ({ name, label, kind: 'money', help: help ?? 'dollars' });
const int = (name, label) => ({ name, label, kind: 'int' });
const text = (name, label, extra = {}) => ({ name, label, kind: 'text', ...extra });
const list = (name, label, help) => ({ name, label, kind: 'list', help: help ?? 'comma-separated' });
const json = (name, label, placeholder) => ({ name, label, kind: 'json', placeholder });
const bool = (name, label) => ({ name, label, kind: 'bool' });
const duration = (name, label) => ({ name, label, kind: 'text', help: 'e.g. 30s, 1h, 1d, 30d, 1mo' });

const budgetFields = [money('max_budget', 'max budget'), duration('budget_duration', 'budget duration')];

export const ENTITIES = {
  keys: {
    title: 'Keys', singular: 'key', id: (k) => k.token, name: (k) => k.key_alias ?? k.key_name,
    list: async () => (await api('/key/list?return_full_object=true&size=1000')).keys ?? [],
    searchText: (k) => [k.key_alias, k.key_name, k.token, k.team_id, k.user_id, ...(k.tags ?? [])].join(' '),
    fields: [
      text('key_alias', 'alias'), duration('duration', 'expires after'), list('models', 'models', 'model groups; empty = all'),
      ...budgetFields, money('soft_budget', 'soft budget', 'dollars: a warning, never a refusal'),
      json('budget_limits', 'budget windows', '[{"budget_duration": "1h", "max_budget": 0.5}]'),
      json('model_max_budget', 'per-model budgets', '{"gpt-4o": {"max_budget": 1, "budget_duration": "1d"}}'),
      text('team_id', 'team id'), text('user_id', 'user id'), text('organization_id', 'organization id'),
      text('budget_id', 'linked budget id'), text('allowed_model_region', 'allowed model region'),
      list('tags', 'tags'), json('metadata', 'metadata', '{"env": "prod"}'),
      int('max_parallel_requests', 'max parallel requests'), int('rpm_limit', 'rpm limit'), int('tpm_limit', 'tpm limit'),
    ],
    create: (b) => api('/key/generate', { body: b }),
    update: (k, b) => api('/key/update', { body: { key: k.token, ...b } }),
    remove: (k) => api('/key/delete', { body: { keys: [k.token] } }),
    block: (k, on) => api(on ? '/key/block' : '/key/unblock', { body: { key: k.token } }),
    blocked: (k) => !!k.blocked,
    secretOf: (r) => r?.key,
  },
  users: {
    title: 'Users', singular: 'user', id: (u) => u.user_id, name: (u) => u.user_alias ?? u.user_email ?? u.user_id,
    list: async () => (await api('/user/list?page_size=100')).users ?? [],
    searchText: (u) => [u.user_id, u.user_alias, u.user_email].join(' '),
    fields: [
      text('user_id', 'user id', { readonlyOnEdit: true, help: 'generated when empty' }), text('user_email', 'email'),
      text('user_alias', 'alias'), ...budgetFields, list('models', 'models', 'model groups; empty = all'),
      int('rpm_limit', 'rpm limit'), int('tpm_limit', 'tpm limit'), json('metadata', 'metadata'),
      { ...list('teams', 'teams', 'team ids'), edit: false },
      { ...bool('auto_create_key', 'create a key for the user'), edit: false, sendFalse: true, default: true },
      { ...text('key_alias', 'key alias'), edit: false }, { ...duration('duration', 'key expires after'), edit: false },
    ],
    create: (b) => api('/user/new', { body: b }),
    update: (u, b) => api('/user/update', { body: { user_id: u.user_id, ...b } }),
    secretOf: (r) => r?.key,
  },
  teams: {
    title: 'Teams', singular: 'team', id: (t) => t.team_id, name: (t) => t.team_alias ?? t.team_id,
    list: async () => (await api('/team/list')) ?? [],
    searchText: (t) => [t.team_id, t.team_alias, t.organization_id].join(' '),
    fields: [
      text('team_id', 'team id', { readonlyOnEdit: true, help: 'generated when empty' }), text('team_alias', 'alias'),
      text('organization_id', 'organization id'), ...budgetFields, list('models', 'models', 'model groups; empty = all'),
      int('rpm_limit', 'rpm limit'), int('tpm_limit', 'tpm limit'), text('budget_id', 'linked budget id'),
      text('allowed_model_region', 'allowed model region'), json('metadata', 'metadata'),
      { ...json('members_with_roles', 'members', '[{"user_id": "alice", "role": "user"}]'), edit: false },
    ],
    create: (b) => api('/team/new', { body: b }),
    update: (t, b) => api('/team/update', { body: { team_id: t.team_id, ...b } }),
    block: (t, on) => api('/team/update', { body: { team_id: t.team_id, blocked: on } }),
    blocked: (t) => !!t.blocked,
  },
  organizations: {
    title: 'Organizations', singular: 'organization', id: (o) => o.organization_id,
    name: (o) => o.organization_alias ?? o.organization_id,
    // The API has no /organization/list: the organizations named by teams, keys and budgets.
    list: async () => {
      const ids = new Set(JSON.parse(sessionStorage.getItem('tollgate.orgs') ?? '[]'));
      const [teams, keys, budgets] = await Promise.all([
        api('/team/list').catch(() => []),
        api('/key/list?return_full_object=true&size=1000').then((r) => r.keys ?? []).catch(() => []),
        api('/tollgate/budgets?limit=10000').then((r) => r.budgets ?? []).catch(() => []),
      ]);
      for (const x of [...teams, ...keys]) if (x.organization_id) ids.add(x.organization_id);
      for (const b of budgets) if (b.scope === 'organization') ids.add(b.id);
      const out = [];
      for (const id of [...ids].sort()) {
        try { out.push(await api(`/organization/info${qs({ organization_id: id })}`)); } catch { /* gone */ }
      }
      return out;
    },
    searchText: (o) => [o.organization_id, o.organization_alias].join(' '),
    fields: [
      text('organization_id', 'organization id', { help: 'generated when empty' }), text('organization_alias', 'alias'),
      ...budgetFields, list('models', 'models', 'model groups; empty = all'), json('metadata', 'metadata'),
    ],
    create: async (b) => {
      const r = await api('/organization/new', { body: b });
      const ids = new Set(JSON.parse(sessionStorage.getItem('tollgate.orgs') ?? '[]'));
      ids.add(r.organization_id);
      sessionStorage.setItem('tollgate.orgs', JSON.stringify([...ids]));
      return r;
    },
    note: 'The admin API lists no organizations and cannot update or delete one: shown here are those named by a team, a key or a budget, and those created in this tab.',
  },
  customers: {
    title: 'Customers', singular: 'customer', id: (c) => c.user_id, name: (c) => c.alias ?? c.user_id,
    list: async () => (await api('/customer/list')) ?? [],
    searchText: (c) => [c.user_id, c.alias].join(' '),
    fields: [
      text('user_id', 'end-user id', { readonlyOnEdit: true, required: true, help: 'the `user` sent in requests' }),
      text('alias', 'alias'), ...budgetFields, text('budget_id', 'linked budget id'),
      text('allowed_model_region', 'allowed model region'),
    ],
    create: (b) => api('/customer/new', { body: b }),
    update: (c, b) => api('/customer/update', { body: { user_id: c.user_id, ...b } }),
    block: (c, on) => api(on ? '/customer/block' : '/customer/unblock', { body: { user_ids: [c.user_id] } }),
    blocked: (c) => !!c.blocked,
  },
  tags: {
    title: 'Tags', singular: 'tag', id: (t) => t.name, name: (t) => t.name,
    list: async () => (await api('/tag/list')) ?? [],
    searchText: (t) => [t.name, t.description].join(' '),
    fields: [text('name', 'name', { readonlyOnEdit: true, required: true }), text('description', 'description'), ...budgetFields],
    create: (b) => api('/tag/new', { body: b }),
    update: (t, b) => api('/tag/update', { body: { name: t.name, ...b } }),
    remove: (t) => api('/tag/delete', { body: { name: t.name } }),
  },
  budgets: {
    title: 'Budgets', singular: 'budget', id: (b) => b.budget_id, name: (b) => b.budget_id,
    list: async () => (await api('/budget/list')) ?? [],
    searchText: (b) => b.budget_id,
    fields: [
      text('budget_id', 'budget id', { readonlyOnEdit: true, help: 'generated when empty' }), ...budgetFields,
      money('soft_budget', 'soft budget'), int('max_parallel_requests', 'max parallel requests'),
      int('rpm_limit', 'rpm limit'), int('tpm_limit', 'tpm limit'),
    ],
    create: (b) => api('/budget/new', { body: b }),
    update: (x, b) => api('/budget/update', { body: { budget_id: x.budget_id, ...b } }),
    remove: (x) => api('/budget/delete', { body: { id: x.budget_id } }),
    note: 'Named budgets that keys, teams and customers link with budget_id; each linked entity has its own spend against it.',
  },
};
