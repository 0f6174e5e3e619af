#include "auth/identities.hpp"
#include "auth/linked_budgets.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <boost/json/parse.hpp>

#include "auth/credentials.hpp"
#include "auth/keys.hpp"

namespace tollgate::auth {

namespace {

template <class T>
std::shared_ptr<const T> find(const std::unordered_map<std::string, std::shared_ptr<const T>>& m, std::string_view id) {
  if (id.empty()) return nullptr;
  auto it = m.find(std::string(id));
  return it == m.end() ? nullptr : it->second;
}

std::string member_id(std::string_view team, std::string_view user) {
  std::string s(team);
  s.push_back('\n');
  s.append(user);
  return s;
}

}  // namespace

core::Error authentication_error(std::string message) {
  return core::Error::caller(401, "invalid_request_error", std::move(message), {}, "invalid_api_key");
}

std::shared_ptr<const IdentityIndex> IdentityIndex::build(store::IdentitySnapshot s) {
  apply_linked_budgets(s);
  auto idx = std::make_shared<IdentityIndex>();
  for (auto& k : s.keys) {
    auto id = k.token_hash;
    idx->keys_.emplace(std::move(id), std::make_shared<const store::KeyRecord>(std::move(k)));
  }
  for (auto& u : s.users) {
    auto id = u.user_id;
    idx->users_.emplace(std::move(id), std::make_shared<const store::UserRecord>(std::move(u)));
  }
  for (auto& t : s.teams) {
    auto id = t.team_id;
    idx->teams_.emplace(std::move(id), std::make_shared<const store::TeamRecord>(std::move(t)));
  }
  for (auto& m : s.team_members) {
    auto id = member_id(m.team_id, m.user_id);
    idx->members_.emplace(std::move(id), std::make_shared<const store::TeamMemberRecord>(std::move(m)));
  }
  for (auto& o : s.organizations) {
    auto id = o.organization_id;
    idx->orgs_.emplace(std::move(id), std::make_shared<const store::OrganizationRecord>(std::move(o)));
  }
  for (auto& c : s.customers) {
    auto id = c.user_id;
    idx->customers_.emplace(std::move(id), std::make_shared<const store::CustomerRecord>(std::move(c)));
  }
  for (auto& t : s.tags) {
    auto id = t.name;
    idx->tags_.emplace(std::move(id), std::make_shared<const store::TagRecord>(std::move(t)));
  }
  idx->generation_ = s.generation;
  return idx;
}

std::shared_ptr<const IdentityIndex> IdentityIndex::empty() {
  static const std::shared_ptr<const IdentityIndex> e = std::make_shared<const IdentityIndex>();
  return e;
}

std::shared_ptr<const store::KeyRecord> IdentityIndex::key(std::string_view h) const { return find(keys_, h); }
std::shared_ptr<const store::UserRecord> IdentityIndex::user(std::string_view id) const { return find(users_, id); }
std::shared_ptr<const store::TeamRecord> IdentityIndex::team(std::string_view id) const { return find(teams_, id); }
std::shared_ptr<const store::TeamMemberRecord> IdentityIndex::member(std::string_view team, std::string_view user) const {
  if (team.empty() || user.empty()) return nullptr;
  return find(members_, member_id(team, user));
}
std::shared_ptr<const store::OrganizationRecord> IdentityIndex::organization(std::string_view id) const {
  return find(orgs_, id);
}
std::shared_ptr<const store::CustomerRecord> IdentityIndex::customer(std::string_view id) const {
  return find(customers_, id);
}
std::shared_ptr<const store::TagRecord> IdentityIndex::tag(std::string_view name) const { return find(tags_, name); }

Identities::Identities() : index_(IdentityIndex::empty()) {}

void Identities::install(std::shared_ptr<const IdentityIndex> index) {
  std::lock_guard lock(reload_mutex_);
  index_.store(index ? std::move(index) : IdentityIndex::empty());
}

std::expected<void, store::StoreError> Identities::reload(store::Store& st) {
  std::lock_guard lock(reload_mutex_);
  auto snap = st.load_all_identities();
  if (!snap) return std::unexpected(snap.error());
  index_.store(IdentityIndex::build(std::move(*snap)));
  return {};
}

std::expected<bool, store::StoreError> Identities::refresh(store::Store& st) {
  auto generation = st.identity_generation();
  if (!generation) return std::unexpected(generation.error());
  if (*generation == current()->generation()) return false;
  if (auto r = reload(st); !r) return std::unexpected(r.error());
  return true;
}

AuthResult authenticate(const IdentityIndex& index, std::string_view presented, std::string_view master_key,
                        std::int64_t now_ms) {
  if (presented.empty()) {
    if (!master_key.empty())
      return std::unexpected(authentication_error("Authentication Error, No api key passed in."));
    // No master key: the anonymous caller. Whether it may be served depends on the request
    // (a budget that applies to it refuses it later, api::anonymous_budget_refusal).
    return std::make_shared<const Principal>();
  }
  if (!master_key.empty() && constant_time_equal(presented, master_key)) {
    auto p = std::make_shared<Principal>();
    p->is_master = true;
    return p;
  }
  // A presented key is checked even without a master key: a wrong or stale key is an error the
  // caller must hear about, never a silent downgrade to the anonymous caller.
  std::shared_ptr<const store::KeyRecord> key;
  if (presented.starts_with("sk-")) key = index.key(sha256_hex(presented));
  if (!key) return std::unexpected(authentication_error("Authentication Error, Invalid proxy server token passed"));
  return principal_for_key_hash(index, key->token_hash, now_ms);
}

AuthResult principal_for_key_hash(const IdentityIndex& index, std::string_view token_hash, std::int64_t now_ms) {
  auto key = index.key(token_hash);
  if (!key) return std::unexpected(authentication_error("Authentication Error, Invalid proxy server token passed"));
  if (key->blocked)
    return std::unexpected(authentication_error("Authentication Error, key is blocked. Unblock it with /key/unblock."));
  if (key->expires_at_ms && *key->expires_at_ms <= now_ms)
    return std::unexpected(authentication_error("Authentication Error, key expired at " +
                                                iso8601_utc(*key->expires_at_ms) + " (current time " +
                                                iso8601_utc(now_ms) + ")"));
  auto p = principal_of_key(index, key);
  if (p->team && p->team->blocked)
    return std::unexpected(authentication_error("Authentication Error, team " + key->team_id + " is blocked"));
  return p;
}

std::shared_ptr<Principal> principal_of_key(const IdentityIndex& index, std::shared_ptr<const store::KeyRecord> key) {
  auto p = std::make_shared<Principal>();
  p->user = index.user(key->user_id);
  p->team = index.team(key->team_id);
  p->membership = index.member(key->team_id, key->user_id);
  p->organization = index.organization(key->organization_id);
  if (!p->organization && p->team) p->organization = index.organization(p->team->organization_id);
  p->tags = key->tags;
  p->key = std::move(key);
  return p;
}

namespace {

/// Whether the JSON object text `metadata` lists `tag` in its `allowed_tags` array (or "*"
/// there), or in its `tags` array (LiteLLM keeps a key's or team's tags in its metadata).
bool allowed_in(const std::string& metadata, std::string_view tag) {
  if (metadata.find("tags") == std::string::npos) return false;
  boost::system::error_code ec;
  const auto v = boost::json::parse(metadata, ec);
  if (ec || !v.is_object()) return false;
  const auto lists = [&](std::string_view member, bool star) {
    const auto* list = v.get_object().if_contains(member);
    if (list == nullptr || !list->is_array()) return false;
    for (const auto& x : list->get_array())
      if (x.is_string() && (x.get_string() == tag || (star && x.get_string() == "*"))) return true;
    return false;
  };
  return lists("allowed_tags", true) || lists("tags", false);
}

}  // namespace

bool may_charge_tag(const Principal& p, std::string_view tag) {
  if (p.is_master || p.anonymous()) return true;
  if (std::find(p.key->tags.begin(), p.key->tags.end(), tag) != p.key->tags.end()) return true;
  return allowed_in(p.key->metadata, tag) || (p.team && allowed_in(p.team->metadata, tag));
}

AuthResult with_request(const std::shared_ptr<const Principal>& principal, const IdentityIndex& index,
                        std::string_view end_user, const std::vector<std::string>& request_tags) {
  auto p = std::make_shared<Principal>(principal ? *principal : Principal{});
  p->end_user = std::string(end_user);
  p->customer = index.customer(end_user);
  if (p->customer && p->customer->blocked)
    return std::unexpected(core::Error::caller(
        403, "invalid_request_error",
        "End user " + p->end_user + " is blocked (/customer/block). Request rejected.", "user", "end_user_blocked"));
  for (const auto& t : request_tags)
    if (!t.empty() && std::find(p->tags.begin(), p->tags.end(), t) == p->tags.end()) p->tags.push_back(t);
  p->tag_budgets.clear();
  p->uncharged_tags.clear();
  for (const auto& t : p->tags)
    if (auto rec = index.tag(t)) {
      if (may_charge_tag(*p, t)) p->tag_budgets.push_back(std::move(rec));
      else p->uncharged_tags.push_back(t);
    }
  return p;
}

std::string iso8601_utc(std::int64_t ms) {
  std::int64_t secs = ms / 1000;
  std::int64_t rem = ms % 1000;
  if (rem < 0) {
    rem += 1000;
    --secs;
  }
  const auto t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(rem));
  return buf;
}

std::int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tollgate::auth
