#pragma once
/// `tollgate simulate`: replays a scenario (scenario.hpp) against a config's fallback policy
/// through the real attempt loop (pipeline::run_chat), with no network and virtual time.
///
/// How: pipeline::Services::make on a copy of the config (each deployment's api_base points at a
/// synthetic host, so the ScriptedTransport knows which deployment an attempt is for), a
/// ManualClock as the services' clock and `virtual_time` (backoff and Retry-After waits advance
/// it instead of sleeping; scripted latencies advance it too), an in-memory RecordingStore (its
/// spend log rows carry each request's whole decision trace, the same JSON `tollgate explain`
/// reads) and an in-memory job queue for the `deferred` mode. Requests run one after another
/// on a local io_context, in scenario order; circuits, the ledger, cooldowns and the stale
/// cache carry over from one request to the next, as in a running gateway.
///
/// Deterministic: jitter and deployment shuffle draw from a PRNG seeded with the scenario's
/// `seed` and the request's number (so a change to one request does not reshuffle the others); request ids are sim-0001, sim-0002, ... . Not thread-safe; runs on the calling thread.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "budget/money.hpp"
#include "config/config.hpp"
#include "pipeline/sink.hpp"
#include "policy/circuit.hpp"
#include "simulate/scenario.hpp"
#include "simulate/scripted_transport.hpp"

namespace tollgate::simulate {

/// One simulated request (one repetition of a scenario entry).
struct RequestResult {
  std::size_t entry = 0;          ///< index in Scenario::requests
  int repetition = 1;             ///< 1-based
  int repeat = 1;                 ///< the entry's repeat count
  std::string name;               ///< the entry's name, may be empty
  std::string model;              ///< requested model group
  std::string request_id;         ///< sim-0001, ...
  std::int64_t started_ms = 0;    ///< virtual time since the scenario started
  std::int64_t virtual_ms = 0;    ///< how long it took, virtual time
  int status = 0;                 ///< the HTTP status the client got
  bool streamed = false;
  pipeline::Headers headers;      ///< the response headers (x-tollgate-decision, x-tollgate-degradation, ...)
  std::string body;               ///< completion / error JSON / 202 body (a stream: its data lines)
  std::optional<core::Error> error;  ///< when the client got an error
  boost::json::object decision;   ///< the decision trace (spend log `decision`); empty if none was recorded
  std::string outcome;            ///< trace outcome: served, degraded, failed, refused, deferred, ...
  std::string degradation;        ///< degradation mode that answered, empty = none
  std::string served_by;          ///< "group/deployment"
  std::string category;           ///< "served" | "degraded" | "failed" (see docs/simulate.md)
  int attempts = 0;               ///< upstream attempts
  int retries = 0;
  int fallbacks = 0;
  budget::Nanos reserved = 0;     ///< all attempts' reservations together
  budget::Nanos charged = 0;      ///< what the attempts were settled at (the request's spend)
  std::vector<std::string> circuit_changes;  ///< "deployment d1: closed -> open (4 consecutive failures)"
  std::vector<std::string> alerts;           ///< alert kinds raised: "commercial_limit (openai)"
  std::vector<ScriptedCall> calls;           ///< what the scripted upstream answered, per attempt
};

struct Summary {
  int requests = 0;
  int served = 0;
  int degraded = 0;
  int failed = 0;
  int attempts = 0;
  int retries = 0;
  int fallbacks = 0;
  std::int64_t virtual_ms = 0;    ///< the whole run, advance_ms included
  budget::Nanos reserved = 0;
  budget::Nanos charged = 0;
  int deferred_jobs = 0;
};

struct SimulationResult {
  std::string scenario_name;
  std::string description;
  std::string scenario_path;
  std::string config_path;
  std::uint64_t seed = 1;
  std::vector<RequestResult> requests;
  Summary summary;
  std::vector<policy::CircuitView> circuits;  ///< final states (Circuits::snapshot)
};

/// Runs `scenario` against `cfg`. The scenario must have passed check_against(cfg).
/// The calling thread's core::thread_rng() is reseeded during the run and restored after it.
/// Throws std::runtime_error only for faults of the simulator itself.
SimulationResult run_simulation(const config::Config& cfg, const Scenario& scenario);

}  // namespace tollgate::simulate
