#pragma once
/// The LiteLLM-compatible admin API (issue 3 item 2, /spend/logs and /global/spend of item 8):
/// `/key/*`, `/user/*`, `/team/*`, `/organization/*`, `/customer/*`, `/budget/*`, `/tag/*`,
/// `/spend/logs`, `/spend/keys`, `/global/spend`, `/global/spend/report`, with LiteLLM's paths and field names (docs.litellm.ai proxy/virtual_keys,
/// proxy/users, proxy/team_budgets, proxy/customers). See docs/admin_api.md for every endpoint.
///
/// Every endpoint needs the master key (401 otherwise, also when no master key is configured),
/// except the few a virtual key may read for its own data (admin::Access; docs/admin_api.md
/// "Admin UI endpoints"): a virtual key on any other endpoint gets 403.
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
#include <optional>
#include <string>
#include <vector>
#include <string_view>

#include <boost/json/object.hpp>

#include "auth/identities.hpp"
#include "budget/scope.hpp"
#include "config/config.hpp"
#include "http/server.hpp"
#include "store/store.hpp"

namespace tollgate::pipeline {
struct Services;
}

namespace tollgate::api {

/// One problem of a simulation's input (POST /tollgate/simulate).
struct SimulateProblem {
  std::string source;  ///< "scenario" | "config"
  std::string path;    ///< YAML path ("requests[1].upstream.gpt-4o[0].error"); "" = the document
  int line = 0;        ///< 1-based; 0 unknown
  std::string message;
};

/// What a simulation answered: the report (`tollgate simulate --json`'s JSON) or the problems.
struct SimulateAnswer {
  std::optional<boost::json::object> report;
  std::vector<SimulateProblem> problems;
};

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
  /// The gateway's services snapshot in force (live ledger, circuits, alerts, prices, policies):
  /// read by the admin UI's /tollgate/budgets, /tollgate/routing, /tollgate/overview. Null: those
  /// answer 503 "the gateway's live state is not available".
  std::function<std::shared_ptr<const pipeline::Services>()> services;
  /// Runs POST /tollgate/simulate: the scenario YAML text against the config YAML text (nullopt:
  /// the live config), sandboxed and bounded (app/simulate_api.hpp). Null: 503. May throw
  /// std::exception for a fault of the simulator (→ 500).
  std::function<SimulateAnswer(const std::string& scenario, const std::optional<std::string>& config)> simulate;
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
