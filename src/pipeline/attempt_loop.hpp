#pragma once
/// The attempt loop (DESIGN.md "The life of a request", step 5): the only place that sends a
/// request upstream. For the primary group and then each fallback group: pick a deployment,
/// send, classify the outcome, then decide — done, retry (backoff, Retry-After), next
/// deployment, fallback, or fail with the primary's own error.

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include "auth/principal.hpp"
#include "budget/ledger.hpp"
#include "budget/pricing.hpp"
#include "config/config.hpp"
#include "core/clock.hpp"
#include "pipeline/sink.hpp"
#include "policy/rate_limit.hpp"
#include "routing/router.hpp"
#include "store/store.hpp"

namespace tollgate::pipeline {

/// Shared per-process services of the pipeline. The config is immutable; RouterState is
/// internally synchronised.
struct Services {
  std::shared_ptr<const config::Config> config;
  const core::Clock* clock = &core::SystemClock::instance();
  std::unique_ptr<routing::ModelGroups> groups;
  std::unique_ptr<routing::RouterState> router;
  /// The in-memory budget ledger: a cache of the durable ledger in `store`.
  std::unique_ptr<budget::Ledger> ledger;
  /// Each deployment's resolved price (index = Config::model_list index).
  std::vector<budget::ResolvedPrice> prices;
  /// rpm/tpm/parallel limits of keys, users and teams.
  std::unique_ptr<policy::RateLimiter> limiter;
  /// Durable store (ledger, spend logs, identities); null = in-memory only (tests).
  std::shared_ptr<store::Store> store;

  /// Builds the services. With a store, open reservations left by a crash are settled
  /// conservatively and every scope's spend is rebuilt from the durable ledger first.
  /// Throws std::runtime_error when the store cannot be recovered.
  static std::shared_ptr<Services> make(std::shared_ptr<const config::Config> cfg, const core::Clock& clock,
                                        std::shared_ptr<store::Store> store = nullptr);
};

/// One decoded chat call (OpenAI format), validated by the API layer: `model` is a known group.
struct ChatCall {
  boost::json::object body;  ///< the client's request body, passed through with minimal rewriting
  std::string model;         ///< requested model group
  bool stream = false;
  bool include_usage = false;  ///< the client asked for stream_options.include_usage
  std::string call_id;         ///< x-litellm-call-id
  core::SteadyTime start{};    ///< when the request was accepted
  /// Who is calling (never null once authenticated; a default Principal when no auth is configured).
  std::shared_ptr<const auth::Principal> principal;
  std::string call_type = "acompletion";  ///< spend log call_type ("acompletion", "anthropic_messages")
};

/// Runs `call` to completion, writing the answer (or the right error) to `sink`. Never throws
/// for expected failures; every upstream attempt goes through here.
boost::asio::awaitable<void> run_chat(std::shared_ptr<Services> services, ChatCall call, ResponseSink& sink);

}  // namespace tollgate::pipeline
