#pragma once
/// The LiteLLM-compatible admin API (issue 3 item 2, /spend/logs and /global/spend of item 8):
/// `/key/*`, `/user/*`, `/team/*`, `/organization/*`, `/customer/*`, `/budget/*`, `/tag/*`,
/// `/spend/logs`, `/spend/keys`, `/global/spend`, `/global/spend/report`, with LiteLLM's paths and field names (docs.litellm.ai proxy/virtual_keys,
/// proxy/users, proxy/team_budgets, proxy/customers). See docs/admin_api.md for every endpoint.
///
/// Every endpoint needs the master key (401 otherwise, also when no master key is configured).
/// Errors are OpenAI error bodies naming the offending field in `param`: 400 bad field, 404
/// unknown id, 405 wrong method, 409 duplicate key_alias / id, 503 store unavailable.
///
/// Threading: `handle` is synchronous and calls the Store directly (SQLite: blocking disk I/O)
/// on the calling I/O thread. Admin calls are rare, so this is accepted for now (documented);
/// after every successful write it reloads the identity snapshot so that the next model call
/// sees the change.

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include <boost/json/object.hpp>

#include "auth/identities.hpp"
#include "budget/scope.hpp"
#include "config/config.hpp"
#include "http/server.hpp"
#include "store/store.hpp"

namespace tollgate::api {

/// What the admin API works on.
struct AdminDeps {
  std::shared_ptr<const config::Config> config;
  /// The config in force now (after reloads); null: `config`.
  std::function<std::shared_ptr<const config::Config>()> current_config;
  /// The store (null: every admin endpoint answers 503 "no database configured").
  std::shared_ptr<store::Store> store;
  /// The identity snapshot to refresh after writes (required).
  std::shared_ptr<auth::Identities> identities;
  /// Spend figures of a key for `/key/info` and `/key/generate`, merged into the key object
  /// (e.g. {"spend": 1.25, "budget_reset_at": "...", "spend_windows": [...]}, dollars as JSON
  /// numbers). Filled by the budget layer; the default gives {"spend": 0}.
  std::function<boost::json::object(const store::KeyRecord&)> spend_for_key;
  /// Spend figures of a team, user, organization or customer scope ({"spend", "reserved_spend",
  /// "budget_reset_at"...}), merged into its `/…/info` object. Default: {"spend": 0}.
  std::function<boost::json::object(const budget::ScopeId&)> spend_for_scope;
  /// Called after `/key/update` added or changed the key's budget_duration: the key's budget
  /// scope starts a new window with spend 0 now (LiteLLM #34270). Null: windows stay as they were.
  std::function<void(const store::KeyRecord&)> restart_key_window;
  /// Milliseconds since the Unix epoch (UTC); default: the system clock.
  std::function<std::int64_t()> now_ms;
};

/// The admin endpoints. Thread-safe (no mutable state besides the store and the snapshot, both
/// internally synchronised).
class Admin {
 public:
  explicit Admin(AdminDeps deps);
  /// Whether `path` (without query) is an admin endpoint handled here.
  static bool is_admin_path(std::string_view path);
  /// Answers one admin request (see the class comment for threading).
  http::Response handle(const http::Request& req) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tollgate::api
