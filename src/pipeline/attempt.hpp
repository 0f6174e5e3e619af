#pragma once
/// One upstream attempt of a run: the output bound written into the request, the request built
/// by the deployment's provider adapter and sent, the answer read (or relayed, for a stream:
/// stream_relay.hpp) and classified, and the attempt recorded (trace step, routing statistics,
/// circuits, metrics). The only code that sends a request upstream. Internal to pipeline/.

#include <optional>
#include <string>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// Attempts of one run.
class Attempter {
 public:
  explicit Attempter(RunState& st) : st_(st) {}
  Attempter(const Attempter&) = delete;
  Attempter& operator=(const Attempter&) = delete;

  /// One attempt on deployment `dep` of `group`, its result written to `r` (a fresh
  /// AttemptResult). A wildcard deployment must already be bound to `group`
  /// (RunState::bind_deployment, done by the walk before admission).
  net::awaitable<void> attempt(std::string group, std::size_t dep, AttemptResult& r);

  core::SteadyTime attempt_deadline(const config::Deployment& d);

  /// Fills in the failure of an attempt that got an HTTP error status.
  AttemptResult upstream_failure(const config::Deployment& d, const providers::Provider& p, http::UpstreamExchange& ex,
                                 std::string body);

  /// The failure of an attempt answered 2xx with Provider::Parsed::failure set (a blocked
  /// prompt): classified from that outcome, the caller's error a 400 in its API's format,
  /// charged by the answer's usage (the reservation when unreadable).
  AttemptResult blocked_answer(const std::string& group, std::size_t dep, core::SteadyTime started,
                               providers::Provider::Parsed parsed);

  /// Keeps a full (not degraded) answer for the stale_cache mode of the requested group.
  void remember_answer(const json::object& completion, const std::string& raw);

  /// The class of a transport-level event through the group's table.
  FailureClass classify_event(policy::TransportEvent ev, int status) const;

  /// Records a finished attempt: headers, trace, routing statistics and the circuits.
  void record(const std::string& group, std::size_t dep, int status, std::optional<FailureClass> failure,
              core::SteadyTime started, long long tokens, budget::Evidence evidence);

  /// OpenAI's search models (gpt-4o-search-preview, …) search the web on every Chat Completions
  /// request and bill the call, but their usage does not count it: a model of an OpenAI-style
  /// deployment with a per-call web-search price is charged one call when none is reported.
  void count_search_calls(std::size_t dep, providers::Usage& u) const;

  /// OpenAI's search models (a name with "search", e.g. gpt-4o-search-preview) on an OpenAI-style
  /// deployment with a per-call search price: every request is one billed search.
  bool searches_every_request(std::size_t dep) const;

  /// The output bound of the attempt about to be sent: written into the request in the
  /// deployment's field (the reservation is the contract with the upstream), or the caller's own
  /// fields restored when nothing was reserved against it (free or unpriced models).
  /// With no bound reserved (free or unpriced), the deployment's default max_tokens is sent
  /// when the caller set no limit.
  void write_output_bound(const config::Deployment& d, const providers::Provider& provider);

  /// The native adapter `d` is called through (the caller's own body, ChatCall::native_body), or
  /// null when the attempt goes through the adapter of the call's API (the chat translation).
  /// A request the response cache will store goes through the translation (the cache keeps chat
  /// completions), unless it carries a feature only the native API serves.
  const providers::Provider* native_adapter(const config::Deployment& d) const;

  /// The upstream request of a native attempt (ChatCall::native_body): a copy of the caller's own
  /// body with the attempt's output bound (or the deployment's default max_tokens, as
  /// write_output_bound) written by `provider` (its native adapter), built by it.
  std::expected<http::OutgoingRequest, std::string> build_native(const config::Deployment& d,
                                                                 const providers::Provider& provider) const;

  /// The deployment's default request parameters (litellm_params temperature, seed, ...) set in
  /// the body where the caller did not set them; attempt() removes them again once the upstream
  /// request is built, so a default never reaches another deployment.
  void write_default_params(const config::Deployment& d);

 private:
  /// What an attempt keeps across its waits (attempt()): the adapter it goes through, when it
  /// started, its deadline and its upstream request.
  struct Sending {
    const providers::Provider* provider = nullptr;
    bool native = false;  ///< through the deployment's native adapter (the caller's own body)
    core::SteadyTime started{};
    core::SteadyTime deadline{};  ///< attempt_deadline()
    http::OutgoingRequest req;
  };
  /// A non-streaming answer to send: the completion, its raw body (relayed as is when the
  /// adapter relays OpenAI bodies, else empty) and the response headers.
  struct Reply {
    json::object completion;
    std::string raw;
    Headers headers;
  };
  // attempt()'s frame lives as long as a stream: the coroutine keeps only what crosses its
  // waits, and the work between them is these plain functions. Each returns false (or fills
  // `r`) when the attempt ends there, `r` its result.
  bool prepare(const std::string& group, std::size_t dep, Sending& s, AttemptResult& r);
  void refused_credentials(const std::string& group, std::size_t dep, const Sending& s, const policy::Outcome& oc,
                           AttemptResult& r);
  void not_started(const std::string& group, std::size_t dep, const Sending& s, const http::TransportError& e,
                   AttemptResult& r);
  void upstream_refused(const std::string& group, std::size_t dep, const Sending& s, http::UpstreamExchange& ex,
                        std::expected<std::string, http::TransportError>& body, AttemptResult& r);
  bool take_answer(const std::string& group, std::size_t dep, const Sending& s, http::UpstreamExchange& ex,
                   std::expected<std::string, http::TransportError>& body, Reply& reply, AttemptResult& r);

  RunState& st_;
  std::vector<std::string> defaulted_;  ///< body members write_default_params added, until the request is built
};

}  // namespace tollgate::pipeline
