#pragma once
/// Who is calling: the identity a request runs as, resolved from its key against the in-memory
/// identity snapshot (kept fresh from the store). Immutable once built; shared by the attempts
/// of one request.

#include <memory>
#include <string>
#include <vector>

#include "store/records.hpp"

namespace tollgate::auth {

struct Principal {
  /// The master key (general_settings.master_key): may call every model and the admin API.
  bool is_master = false;
  /// The virtual key (null for the master key and for the anonymous caller).
  std::shared_ptr<const store::KeyRecord> key;
  std::shared_ptr<const store::UserRecord> user;                ///< the key's user_id, if known
  std::shared_ptr<const store::TeamRecord> team;                ///< the key's team_id, if known
  std::shared_ptr<const store::TeamMemberRecord> membership;    ///< (team, user) membership, if any
  std::shared_ptr<const store::OrganizationRecord> organization;  ///< the team's or key's organization
  /// The end user: the request body's `user` field (OpenAI) / `metadata.user_id` (Anthropic).
  std::string end_user;
  std::shared_ptr<const store::CustomerRecord> customer;        ///< the end user's budget record, if any
  /// The key's tags plus the request's `metadata.tags` / `tags`.
  std::vector<std::string> tags;
  /// The tag budget records (`/tag/new`) of those tags that have one and that this caller may
  /// charge (auth::may_charge_tag), in `tags` order.
  std::vector<std::shared_ptr<const store::TagRecord>> tag_budgets;
  /// Request tags with a budget record this caller may not charge (another tenant's tag): kept
  /// in `tags` (routing, the spend log), never charged or refused by that budget.
  std::vector<std::string> uncharged_tags;

  /// No key at all (no master key configured, none presented): served only while no budget
  /// applies to the request (api::anonymous_budget_refusal).
  bool anonymous() const noexcept { return !is_master && !key; }
};

}  // namespace tollgate::auth
