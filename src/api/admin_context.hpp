#pragma once
/// What every admin handler shares (src/api/admin_*.cpp): the dependencies, the route type, the
/// store-error mapping and the cross-domain lookups (reference checks, spend figures, key
/// resolution). Handlers are free functions from (context, call) to a JSON reply or the error to
/// send; admin.cpp authenticates, checks the method, parses the body and dispatches on the path.
///
/// Threading: see admin.hpp (synchronous store calls on the calling I/O thread).

#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "api/admin.hpp"
#include "api/admin_fields.hpp"
#include "core/error.hpp"

namespace tollgate::api::admin {

/// A handler's answer: the 200 body, or the error (OpenAI error body, `param` = the field).
using Reply = std::expected<boost::json::value, core::Error>;

/// One admin request as a handler sees it.
struct Call {
  std::string target;          ///< path and query ("/key/info?key=sk-...")
  boost::json::object body;    ///< the parsed body of a POST ({} for GET)
  bool is_post = false;
  /// The virtual key calling a route open to keys (Access::key_read / any_key): its Principal
  /// (key, user, team, membership, organization). Null: the master key.
  std::shared_ptr<const auth::Principal> caller;
  /// Access::any_key only: the caller's key (or its team) is blocked.
  bool caller_blocked = false;
  /// The virtual key's token hash when `caller` is set, else empty.
  const std::string& caller_token() const;
  /// Whether the master key is calling.
  bool is_master() const { return caller == nullptr; }
  /// Members a handler adds beside `error` in its error body (POST /tollgate/simulate's
  /// `problems`); ignored on success.
  mutable boost::json::object error_members;
};

/// The state every handler reads (immutable after construction; the store and the identity
/// snapshot are internally synchronised).
class Context {
 public:
  explicit Context(AdminDeps deps);
  const AdminDeps& deps() const { return d_; }
  store::Store& store() const { return *d_.store; }
  /// Milliseconds since the Unix epoch (AdminDeps::now_ms or the system clock).
  std::int64_t now() const;
  /// Reloads the identity snapshot after a write (a failure is logged; the old snapshot stays).
  void refresh() const;
  /// 400 naming `user_id` / `team_id` / `organization_id` when the referenced id does not exist
  /// (empty ids are not checked); store failures map through store_error.
  std::optional<core::Error> check_refs(const std::string& user_id, const std::string& team_id,
                                        const std::string& org_id) const;
  /// 400 naming `field` when `budget_id` names no budget (empty: not checked).
  std::optional<core::Error> check_budget_ref(const std::string& budget_id, std::string_view field = "budget_id") const;
  /// The config in force now (AdminDeps::current_config, else the one given at start).
  std::shared_ptr<const config::Config> config() const;
  /// A key's, team's or end user's `allowed_model_region`: empty (none) or a region some
  /// deployment of the current config has (`litellm_params.region_name`, case-insensitive);
  /// else 400 naming `allowed_model_region` and the regions in use.
  std::optional<core::Error> check_region(const std::string& region) const;
  /// key_object merged with the key's ledger figures (AdminDeps::spend_for_key), computed from
  /// the identity snapshot's record of the key (linked budget resolved) when it is current.
  boost::json::object key_with_spend(const store::KeyRecord& k) const;
  /// The scope's ledger figures (spend, reserved_spend, budget_reset_at...) merged into `o`;
  /// {"spend": 0} when the budget layer is absent.
  void with_scope_spend(boost::json::object& o, budget::ScopeKind kind, const std::string& id) const;
  /// A customer object whose `litellm_budget_table` is its linked budget's row (LiteLLM joins
  /// it) when it links one, with the scope's ledger figures merged in; without any budget
  /// (no ledger scope) `spend` is the spend log's total for the end user.
  Field<boost::json::object> customer_with_spend(const store::CustomerRecord& cu) const;
  /// A key given as the secret (`sk-...`) or its token hash → the stored record; 400 when
  /// empty, 404 (param = `field`) when unknown.
  Field<store::KeyRecord> resolve_key(const std::string& given, std::string_view field) const;

 private:
  AdminDeps d_;
};

/// Which methods a route answers.
enum class Method { get, post, get_or_post };

/// Who may call a route (docs/admin_api.md "Who may call what"). A virtual key calling a
/// master-only route gets 403 "the master key is required"; no key or an unknown one, 401.
enum class Access {
  master,    ///< the master key only (every write, most reads)
  key_read,  ///< also a valid (unblocked, unexpired) virtual key, for its own data: the handler restricts
  any_key,   ///< also a blocked virtual key (or a key of a blocked team): GET /tollgate/whoami
};

/// One admin endpoint.
struct Route {
  std::string_view path;
  Method method;
  Reply (*handle)(const Context&, const Call&);
  Access access = Access::master;
  /// A POST body larger than this is refused (413) before it is parsed; 0 = the server's limit.
  std::size_t max_body_bytes = 0;
};

/// The routes of each domain (admin_keys.cpp, admin_entities.cpp, admin_budgets.cpp,
/// admin_spend.cpp).
std::span<const Route> key_routes();
std::span<const Route> entity_routes();
std::span<const Route> budget_routes();
std::span<const Route> spend_routes();
/// The admin UI's routes (admin_ui.cpp: /tollgate/whoami, /tollgate/overview, /tollgate/budgets,
/// /tollgate/routing, /tollgate/simulate).
std::span<const Route> ui_routes();

/// A store failure as the admin error to send: not_found → 404, conflict → 409 ("duplicate
/// <field>"), invalid → 400, unavailable → 503. `what` names the object ("team t1").
core::Error store_error(const store::StoreError& e, std::string_view what);

/// A positive integer query parameter (`page`, `size`, `limit`); absent → `fallback`; anything
/// else → 400 naming it.
Field<std::int64_t> positive_query_int(std::string_view target, std::string_view name, std::int64_t fallback);

}  // namespace tollgate::api::admin

#define TG_TRY(expr) \
  if (auto e_ = (expr)) return *e_;
#define TG_TRY_R(expr) \
  if (auto e_ = (expr)) return std::unexpected(*e_);
