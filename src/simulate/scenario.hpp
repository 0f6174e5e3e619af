#pragma once
/// A `tollgate simulate` scenario (docs/simulate.md is the reference): a list of requests and
/// scripts of upstream outcomes, replayed against a config's fallback policy with no network.
///
/// Shape (YAML; every key but `requests` is optional):
///
///     name: capacity incident
///     description: "..."
///     seed: 1                 # jitter and shuffle draws (a run is reproducible)
///     latency_ms: 100         # latency of every outcome that does not set its own
///     default: {status: 200}  # the outcome when no script applies (default: a success)
///     keys:                   # virtual keys, by alias; requests name them with `key:`
///       team-a: {max_budget: 0.05, spent: 0.01, request_budget: {max_retries: 1}}
///     key: team-a             # the key of every request that names none (default: no key)
///     upstream:               # scripts shared by the whole run
///       gpt-4o-east:          # a deployment id (model_info.id) ...
///         - {error: rate_limit_exceeded, retry_after: 1}
///         - {error: server_error, times: 3}
///       gpt-4o-mini:          # ... or a model group (any of its deployments)
///         - {completion_tokens: 40}
///     requests:
///       - name: first call
///         model: gpt-4o
///         max_tokens: 200
///         messages: [{role: user, content: "hello"}]
///         stream: false
///         headers: {x-tollgate-deadline-ms: 2000}
///         key: team-a         # or an inline key: {alias: ..., max_budget: ...}
///         repeat: 3
///         advance_ms: 1000    # virtual time that passes before it (before each repetition)
///         upstream: {...}     # scripts consumed by this entry's repetitions first
///
/// Outcome fields: status, error (a named error of the catalogue, catalogue.hpp), fault
/// (reset | connect_refused | timeout | garbage), retry_after (seconds or an HTTP-date text),
/// retry_after_ms, latency_ms, prompt_tokens, completion_tokens, message, headers, times.
/// Unknown keys, wrong types and names that are not in the catalogue are errors with their
/// YAML path, so a typo never passes silently.

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>

#include "config/config.hpp"

namespace tollgate::simulate {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

/// One scripted upstream outcome (a list entry with `times: N` is expanded to N copies).
struct Outcome {
  std::optional<int> status;                  ///< HTTP status; with `error`, overrides the error's own status
  std::string error;                          ///< named error (catalogue.hpp), empty = none
  std::string fault;                          ///< "", "reset", "connect_refused", "timeout", "garbage"
  std::optional<std::string> retry_after;     ///< `Retry-After` value as sent (seconds or an HTTP-date)
  std::optional<std::int64_t> retry_after_ms; ///< also send `retry-after-ms`
  std::optional<std::int64_t> latency_ms;     ///< nullopt = the scenario's latency_ms
  std::optional<std::int64_t> prompt_tokens;      ///< success usage; nullopt = counted from the request
  std::optional<std::int64_t> completion_tokens;  ///< success usage; nullopt = 16, capped at max_tokens
  std::string message;                        ///< replaces the named error's message
  HeaderList headers;                         ///< extra response headers
  std::string where;                          ///< YAML path it came from ("upstream.gpt-4o[1]"), for reports
};

/// Scripts: key (deployment id or model group) → outcomes consumed in order. YAML order is kept.
using Scripts = std::vector<std::pair<std::string, std::vector<Outcome>>>;

/// A virtual key the requests can run as (so budget admission runs).
struct KeySpec {
  std::string alias;                              ///< also the key's budget scope id
  std::optional<std::int64_t> max_budget_nanos;   ///< `max_budget` (decimal dollars)
  std::optional<std::int64_t> soft_budget_nanos;  ///< `soft_budget`
  std::int64_t spent_nanos = 0;                   ///< `spent`: spend before the scenario starts
  std::vector<std::string> models;                ///< allowed model groups; empty = all
  std::optional<std::int64_t> rpm_limit;
  std::optional<std::int64_t> tpm_limit;
  std::optional<std::int64_t> max_parallel_requests;
  /// `request_budget:` → key metadata `tollgate_request_budget` (field name, value text).
  std::vector<std::pair<std::string, std::string>> request_budget;
  std::string where;
};

/// One entry of `requests:`.
struct RequestSpec {
  std::string name;
  std::string model;
  std::optional<std::int64_t> max_tokens;
  boost::json::array messages;  ///< OpenAI chat messages
  bool stream = false;
  HeaderList headers;           ///< x-tollgate-* request budget headers
  std::optional<std::string> key;  ///< alias into Scenario::keys
  int repeat = 1;
  std::int64_t advance_ms = 0;
  Scripts upstream;             ///< this entry's own scripts (consumed across its repetitions)
  std::string where;            ///< "requests[2]"
  int line = 0;
};

struct Scenario {
  std::string source_path;
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  std::int64_t latency_ms = 0;
  std::optional<Outcome> default_outcome;
  std::vector<KeySpec> keys;
  std::optional<std::string> default_key;  ///< `key:` at the top: alias into `keys`
  Scripts upstream;
  std::vector<RequestSpec> requests;
};

/// A problem in a scenario: YAML path, 1-based line (0 = unknown), message.
struct ScenarioProblem {
  std::string path;
  int line = 0;
  std::string message;
  /// "requests[1].upstream.gpt-4o[0].error (line 12): unknown error 'x'; ..."
  std::string to_string() const;
};

using ScenarioResult = std::expected<Scenario, std::vector<ScenarioProblem>>;

/// Parses scenario YAML text; every problem found is reported (not only the first).
ScenarioResult parse_scenario(std::string_view yaml, std::string source_name = "<scenario>");
/// Reads and parses a scenario file (an unreadable file is one problem).
ScenarioResult load_scenario_file(const std::string& path);

/// Checks the scenario against a config: request models are model groups, script keys are
/// deployment ids or model groups. Empty when it fits.
std::vector<ScenarioProblem> check_against(const Scenario& scenario, const config::Config& cfg);

/// The named errors of the catalogue, in documentation order.
const std::vector<std::string>& named_errors();
/// The transport faults, in documentation order.
const std::vector<std::string>& fault_names();

}  // namespace tollgate::simulate
