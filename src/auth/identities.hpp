#pragma once
/// The identity snapshot and authentication (DESIGN.md "The life of a request", step 2).
///
/// `IdentityIndex` is an immutable index of every key, user, team, membership, organization and
/// customer, built from `store::Store::load_all_identities()`. `Identities` holds the current
/// index and swaps it atomically (readers never block; a reload builds a new index aside and
/// publishes it with one atomic store). The admin API reloads after every write; `serve` loads
/// it once at start.
///
/// `authenticate` turns the presented key into a `Principal` against one index (pure: no I/O, no
/// locks), with LiteLLM's error messages (401 "Authentication Error, Invalid proxy server token
/// passed", "No api key passed in.", blocked, expired, blocked team).

#include <atomic>
#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "auth/principal.hpp"
#include "core/error.hpp"
#include "store/store.hpp"

namespace tollgate::auth {

/// Immutable lookup tables over one `store::IdentitySnapshot`. Thread-safe (read-only).
/// Every lookup returns null when the id is unknown (or empty).
class IdentityIndex {
 public:
  /// Indexes `snapshot` (records are moved into shared, immutable storage), after applying each
  /// key's, team's and customer's linked budget (auth::apply_linked_budgets).
  static std::shared_ptr<const IdentityIndex> build(store::IdentitySnapshot snapshot);
  /// An index with no identities (before the first load, or without a store).
  static std::shared_ptr<const IdentityIndex> empty();

  /// Key by `token_hash` (lowercase hex SHA-256 of the secret).
  std::shared_ptr<const store::KeyRecord> key(std::string_view token_hash) const;
  std::shared_ptr<const store::UserRecord> user(std::string_view user_id) const;
  std::shared_ptr<const store::TeamRecord> team(std::string_view team_id) const;
  /// Membership of `user_id` in `team_id`.
  std::shared_ptr<const store::TeamMemberRecord> member(std::string_view team_id, std::string_view user_id) const;
  std::shared_ptr<const store::OrganizationRecord> organization(std::string_view organization_id) const;
  /// End user / customer by the id sent in requests (`user`).
  std::shared_ptr<const store::CustomerRecord> customer(std::string_view user_id) const;
  /// Tag budget record by tag name.
  std::shared_ptr<const store::TagRecord> tag(std::string_view name) const;
  /// Every key (unordered), for listings that do not need the store.
  std::size_t key_count() const { return keys_.size(); }
  /// Every record of a kind, unordered (listings over the snapshot: GET /tollgate/budgets).
  std::vector<std::shared_ptr<const store::KeyRecord>> keys() const { return values(keys_); }
  std::vector<std::shared_ptr<const store::UserRecord>> users() const { return values(users_); }
  std::vector<std::shared_ptr<const store::TeamRecord>> teams() const { return values(teams_); }
  std::vector<std::shared_ptr<const store::TeamMemberRecord>> members() const { return values(members_); }
  std::vector<std::shared_ptr<const store::OrganizationRecord>> organizations() const { return values(orgs_); }
  std::vector<std::shared_ptr<const store::CustomerRecord>> customers() const { return values(customers_); }
  std::vector<std::shared_ptr<const store::TagRecord>> tags() const { return values(tags_); }
  /// `store::IdentitySnapshot::generation` this index was built from.
  std::int64_t generation() const { return generation_; }

 private:
  template <class T>
  using Map = std::unordered_map<std::string, std::shared_ptr<const T>>;
  template <class T>
  static std::vector<std::shared_ptr<const T>> values(const Map<T>& m) {
    std::vector<std::shared_ptr<const T>> out;
    out.reserve(m.size());
    for (const auto& [id, v] : m) out.push_back(v);
    return out;
  }
  Map<store::KeyRecord> keys_;
  Map<store::UserRecord> users_;
  Map<store::TeamRecord> teams_;
  Map<store::TeamMemberRecord> members_;  ///< by team_id + '\n' + user_id
  Map<store::OrganizationRecord> orgs_;
  Map<store::CustomerRecord> customers_;
  Map<store::TagRecord> tags_;
  std::int64_t generation_ = 0;
};

/// The current IdentityIndex, swapped atomically. Thread-safe: `current()` is lock-free for
/// readers in practice (libstdc++'s atomic<shared_ptr> uses a short internal spin); `reload`
/// serialises writers so an older snapshot never replaces a newer one.
class Identities {
 public:
  Identities();
  /// The index in force now (never null).
  std::shared_ptr<const IdentityIndex> current() const { return index_.load(); }
  /// Publishes `index` (tests, or a snapshot built elsewhere).
  void install(std::shared_ptr<const IdentityIndex> index);
  /// Reads every identity from `store` (blocking: SQLite) and publishes the new index.
  /// On error the previous index stays in force.
  std::expected<void, store::StoreError> reload(store::Store& store);
  /// Reloads only when the store's identity_generation() moved past the current index's (another
  /// instance, or another thread, changed an identity). Returns whether it reloaded. Cheap when
  /// nothing changed (one small read): the IdentityRefresher (auth/identity_refresher.hpp) calls
  /// it every tollgate_settings.identity_refresh_ms and after a refused key, which is how a key
  /// blocked or created on one instance is refused or served on every other one.
  std::expected<bool, store::StoreError> refresh(store::Store& store);
 private:
  std::atomic<std::shared_ptr<const IdentityIndex>> index_;
  std::mutex reload_mutex_;
};

/// Result of authentication: the caller, or the 401 to send.
using AuthResult = std::expected<std::shared_ptr<const Principal>, core::Error>;

/// Authenticates a model call (or an admin call, see `is_master`).
///  - No key presented: 401 `invalid_api_key` "Authentication Error, No api key passed in." when
///    `master_key` is configured; without one, the anonymous Principal (no key, not master:
///    `Principal::anonymous()`). The anonymous caller is served only while no budget applies to
///    the request (checked once the request is decoded: api::anonymous_budget_refusal).
///  - `presented_key` equal to `master_key` (constant-time; only when one is configured):
///    Principal{is_master = true}.
///  - otherwise the key's SHA-256 is looked up in `index`, master key configured or not:
///    missing → 401 `invalid_api_key` "Authentication Error, Invalid proxy server token passed";
///    blocked → 401 "key is blocked"; expired (`expires_at_ms <= now_ms`) → 401 "key expired at
///    <ISO time>"; the key's team blocked → 401 "team <id> is blocked".
/// The Principal carries the key and, when found in the index, its user, team, (team, user)
/// membership and organization (the key's own, else its team's).
/// `now_ms`: milliseconds since the Unix epoch (UTC).
AuthResult authenticate(const IdentityIndex& index, std::string_view presented_key, std::string_view master_key,
                        std::int64_t now_ms);

/// 401 `invalid_request_error`, code `invalid_api_key`, with `message` (LiteLLM's wording starts
/// "Authentication Error, ..."): the refusal every authentication failure uses.
core::Error authentication_error(std::string message);

/// The Principal of the virtual key whose SHA-256 is `token_hash`, with the same checks as
/// authenticate() (unknown, blocked, expired key or blocked team → 401). Deferred jobs run as
/// the key that queued them, which is known by its hash only.
AuthResult principal_for_key_hash(const IdentityIndex& index, std::string_view token_hash, std::int64_t now_ms);

/// The Principal of `key` as principal_for_key_hash builds it (user, team, membership,
/// organization from `index`, the key's tags), without any check: blocked and expired keys too.
/// For listings (the budgets that apply to a key), never for admitting a request.
std::shared_ptr<Principal> principal_of_key(const IdentityIndex& index, std::shared_ptr<const store::KeyRecord> key);

/// Whether `p` may charge tag `tag`'s budget with a request that names it (issue 14 §5: a
/// caller must not charge — or exhaust — another tenant's tag budget): the master key and the
/// anonymous caller (no keys: one tenant) may; a virtual key may when the tag is one of its own
/// `tags`, or listed in its or its team's `metadata.allowed_tags` (a list of names; `"*"` =
/// every tag) or `metadata.tags`.
bool may_charge_tag(const Principal& p, std::string_view tag);

/// A copy of `principal` with the request's end user (body `user`), its customer record (if
/// any) and tags (the key's tags, then `request_tags`, without duplicates), and the tag budget
/// records of those tags it may charge (`Principal::tag_budgets`; the others in
/// `Principal::uncharged_tags`).
/// A blocked customer → 403 (type `invalid_request_error`, code `end_user_blocked`, param `user`).
AuthResult with_request(const std::shared_ptr<const Principal>& principal, const IdentityIndex& index,
                        std::string_view end_user, const std::vector<std::string>& request_tags);

/// `ms` since the Unix epoch as ISO 8601 UTC with milliseconds: "2025-01-31T12:00:00.000Z".
std::string iso8601_utc(std::int64_t ms);

/// Milliseconds since the Unix epoch, now (system clock).
std::int64_t unix_now_ms();

}  // namespace tollgate::auth
