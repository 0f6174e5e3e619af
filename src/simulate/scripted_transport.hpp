#pragma once
/// The simulator's upstream: an http::Transport that answers every attempt from the scenario's
/// scripts instead of the network, advancing a manual (virtual) clock by each outcome's latency.
///
/// Which deployment an attempt is for: the simulator gives each deployment a synthetic host
/// (`host_for(i)`, in the reserved `.invalid` domain) in its copy of the config, so the
/// outgoing request's host names the deployment whatever its real api_base is.
///
/// Which outcome: this request entry's own scripts (by deployment id, then by model group), then
/// the scenario's (same order), then the scenario's `default`, then a plain success. A script is
/// consumed in order, one outcome per attempt; an exhausted script falls through to the next
/// source. Single-threaded (the simulator runs one request at a time on one io_context).

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/clock.hpp"
#include "http/client.hpp"
#include "simulate/scenario.hpp"

namespace tollgate::simulate {

/// What one upstream attempt was answered with (for reports and tests).
struct ScriptedCall {
  std::size_t deployment = 0;  ///< index in Config::model_list
  std::string deployment_id;   ///< its model_info.id
  std::string script;          ///< where the outcome came from ("upstream.gpt-4o[0]", "default", "success")
  int status = 0;              ///< HTTP status, 0 for a transport failure
  std::string fault;           ///< transport failure name, or "timeout" when the latency passed the deadline
};

class ScriptedTransport final : public http::Transport {
 public:
  /// `cfg` is the simulator's copy (synthetic hosts); `scenario` and `clock` must outlive this.
  ScriptedTransport(const config::Config& cfg, const Scenario& scenario, core::ManualClock& clock);

  /// The synthetic host of deployment `index`.
  static std::string host_for(std::size_t index);

  /// Selects the request entry (index in Scenario::requests) whose own scripts apply next.
  void begin_entry(std::size_t entry);

  /// Answers from the scripts: advances the clock by the outcome's latency (only up to
  /// `deadline` when the latency is longer: then a timeout after send), then returns the
  /// response head (the body is read from the returned exchange) or a transport error.
  boost::asio::awaitable<std::expected<std::unique_ptr<http::UpstreamExchange>, http::TransportError>> start(
      const http::OutgoingRequest& req, http::SteadyTime deadline, http::CancelToken* token) override;

  /// Every attempt answered so far, in order.
  const std::vector<ScriptedCall>& calls() const { return calls_; }

 private:
  using Queues = std::vector<std::pair<std::string, std::deque<Outcome>>>;
  static Queues queues_of(const Scripts& s);
  static const Outcome* pop(Queues& q, const std::string& key, Outcome& slot);
  std::expected<std::unique_ptr<http::UpstreamExchange>, http::TransportError> answer(const http::OutgoingRequest& req,
                                                                                      http::SteadyTime deadline);

  const config::Config& cfg_;
  const Scenario& scenario_;
  core::ManualClock& clock_;
  Queues global_;
  std::vector<Queues> per_entry_;
  std::size_t entry_ = 0;
  std::uint64_t seq_ = 0;
  std::vector<ScriptedCall> calls_;
};

}  // namespace tollgate::simulate
