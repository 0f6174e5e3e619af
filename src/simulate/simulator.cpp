#include "simulate/simulator.hpp"

#include <chrono>
#include <exception>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include "auth/access.hpp"
#include "budget/scope.hpp"
#include "core/ids.hpp"
#include "pipeline/attempt_loop.hpp"
#include "simulate/recording.hpp"
#include "telemetry/alerts.hpp"

namespace tollgate::simulate {

namespace net = boost::asio;
namespace json = boost::json;
using std::chrono::milliseconds;

namespace {

/// The deployment's base URL with its host replaced by the simulator's synthetic one.
std::string synthetic_base(const config::Deployment& d, std::size_t index) {
  std::string base = d.api_base;
  if (base.empty())
    base = d.provider == config::ProviderKind::anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
  const auto scheme = base.find("://");
  const std::string rest = scheme == std::string::npos ? base : base.substr(scheme + 3);
  const auto slash = rest.find('/');
  return "http://" + ScriptedTransport::host_for(index) + (slash == std::string::npos ? "" : rest.substr(slash));
}

/// The simulator's copy of the config: synthetic hosts, spend log rows always written (they
/// carry the decision trace).
std::shared_ptr<const config::Config> simulation_config(const config::Config& cfg) {
  auto c = std::make_shared<config::Config>(cfg);
  for (std::size_t i = 0; i < c->model_list.size(); ++i) c->model_list[i].api_base = synthetic_base(c->model_list[i], i);
  c->general_settings.disable_spend_logs = false;
  return c;
}

std::shared_ptr<const auth::Principal> principal_for(const KeySpec& k) {
  auto key = std::make_shared<store::KeyRecord>();
  key->token_hash = k.alias;  // the key's budget scope id: readable in skip reasons
  key->key_alias = k.alias;
  key->key_name = "sk-...sim";
  key->max_budget_nanos = k.max_budget_nanos;
  key->soft_budget_nanos = k.soft_budget_nanos;
  key->models = k.models;
  key->rpm_limit = k.rpm_limit;
  key->tpm_limit = k.tpm_limit;
  key->max_parallel_requests = k.max_parallel_requests;
  if (!k.request_budget.empty()) {
    json::object rb;
    for (const auto& [f, v] : k.request_budget) rb[f] = v;
    json::object md;
    md["tollgate_request_budget"] = std::move(rb);
    key->metadata = json::serialize(md);
  }
  auto p = std::make_shared<auth::Principal>();
  p->key = std::move(key);
  return p;
}

json::object chat_body(const RequestSpec& r) {
  json::object b;
  b["model"] = r.model;
  b["messages"] = r.messages;
  if (r.max_tokens) b["max_tokens"] = *r.max_tokens;
  if (r.stream) {
    b["stream"] = true;
    json::object so;
    so["include_usage"] = true;
    b["stream_options"] = std::move(so);
  }
  return b;
}

std::string request_id(int n) {
  std::string s = std::to_string(n);
  if (s.size() < 4) s.insert(0, 4 - s.size(), '0');
  return "sim-" + s;
}

std::string str(const json::object& o, std::string_view k) {
  if (auto* v = o.if_contains(k); v && v->is_string()) return std::string(v->as_string());
  return {};
}

std::int64_t num(const json::object& o, std::string_view k) {
  if (auto* v = o.if_contains(k); v && v->is_int64()) return v->as_int64();
  if (auto* v = o.if_contains(k); v && v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return 0;
}

budget::Nanos dollars(const json::object& o, std::string_view k) {
  auto s = str(o, k);
  if (s.empty()) return 0;
  return budget::parse_dollars(s).value_or(0);
}

std::int64_t ms_between(core::SteadyTime a, core::SteadyTime b) {
  return std::chrono::duration_cast<milliseconds>(b - a).count();
}

using CircuitStates = std::map<std::string, policy::CircuitView>;

CircuitStates states_of(const std::vector<policy::CircuitView>& views) {
  CircuitStates out;
  for (const auto& v : views) out[v.scope + " " + v.id] = v;
  return out;
}

std::vector<std::string> circuit_changes(const CircuitStates& before, const CircuitStates& after) {
  std::vector<std::string> out;
  for (const auto& [name, v] : after) {
    auto it = before.find(name);
    const auto from = it == before.end() ? policy::CircuitState::closed : it->second.state;
    if (from == v.state) {
      // Reopened within one request (a failed probe): the open count moved.
      if (it != before.end() && v.opened_total > it->second.opened_total)
        out.push_back(name + ": " + std::string(policy::to_string(from)) + " -> open -> " +
                      std::string(policy::to_string(v.state)) + " (" + v.reason + ")");
      continue;
    }
    std::string line = name + ": " + std::string(policy::to_string(from)) + " -> " + std::string(policy::to_string(v.state));
    if (v.state == policy::CircuitState::open && !v.reason.empty()) line += " (" + v.reason + ")";
    if (v.state == policy::CircuitState::half_open) line += " (cooldown over: the next attempt is the probe)";
    out.push_back(std::move(line));
  }
  return out;
}

class Simulation {
 public:
  Simulation(const config::Config& cfg, const Scenario& sc) : cfg_(simulation_config(cfg)), sc_(sc) {
    // The attempt loop waits for durable ledger appends on a real steady_timer whose expiry is a
    // time point of the services' clock; keeping the virtual clock ahead of the real one makes
    // those waits end only when the (immediate) acknowledgement arrives.
    const auto real = std::chrono::steady_clock::now();
    if (clock_.now() < real + std::chrono::hours(24 * 365)) clock_.advance(real + std::chrono::hours(24 * 365) - clock_.now());
    t0_ = clock_.now();

    services_ = pipeline::Services::make(cfg_, clock_);
    services_->virtual_time = &clock_;
    transport_ = std::make_shared<ScriptedTransport>(*cfg_, sc_, clock_);
    services_->transport = transport_;
    store_ = std::make_shared<RecordingStore>();
    services_->store = store_;
    services_->jobs = &jobs_;
    telemetry::AlertsOptions ao;
    ao.capacity = 100000;
    ao.dedup_window_ms = 0;  // every alert of the run is listed
    services_->alerts = std::make_shared<telemetry::Alerts>(ao);

    for (const auto& k : sc_.keys) {
      principals_[k.alias] = principal_for(k);
      if (k.spent_nanos > 0)
        services_->local_ledger->load(budget::ScopeId{budget::ScopeKind::key, k.alias}, k.spent_nanos, budget::SystemTime{});
    }
    circuits_ = states_of(services_->circuits->snapshot());
  }

  SimulationResult run() {
    SimulationResult out;
    out.scenario_name = sc_.name;
    out.description = sc_.description;
    out.scenario_path = sc_.source_path;
    out.config_path = cfg_->source_path;
    out.seed = sc_.seed;
    int n = 0;
    for (std::size_t e = 0; e < sc_.requests.size(); ++e) {
      const RequestSpec& spec = sc_.requests[e];
      for (int rep = 1; rep <= spec.repeat; ++rep) {
        if (spec.advance_ms > 0) clock_.advance(milliseconds(spec.advance_ms));
        transport_->begin_entry(e);
        // Each request draws (jitter, shuffle) from its own seeded stream, so that a policy change
        // that alters one request's draws does not reshuffle every later request of the run.
        core::thread_rng().seed(sc_.seed * 1'000'003ULL + static_cast<std::uint64_t>(n + 1));
        out.requests.push_back(run_one(spec, e, rep, ++n));
      }
    }
    Summary& s = out.summary;
    for (const auto& r : out.requests) {
      ++s.requests;
      if (r.category == "served") ++s.served;
      else if (r.category == "degraded") ++s.degraded;
      else ++s.failed;
      s.attempts += r.attempts;
      s.retries += r.retries;
      s.fallbacks += r.fallbacks;
      s.reserved = budget::saturating_add(s.reserved, r.reserved);
      s.charged = budget::saturating_add(s.charged, r.charged);
    }
    s.virtual_ms = ms_between(t0_, clock_.now());
    s.deferred_jobs = static_cast<int>(jobs_.jobs.size());
    out.circuits = services_->circuits->snapshot();
    return out;
  }

 private:
  RequestResult run_one(const RequestSpec& spec, std::size_t entry, int rep, int n) {
    RequestResult r;
    r.entry = entry;
    r.repetition = rep;
    r.repeat = spec.repeat;
    r.name = spec.name;
    r.model = spec.model;
    r.request_id = request_id(n);
    const auto start = clock_.now();
    r.started_ms = ms_between(t0_, start);
    const std::size_t calls_before = transport_->calls().size();
    const std::uint64_t alerts_before = services_->alerts->total();

    pipeline::ChatCall call;
    call.body = chat_body(spec);
    (void)pipeline::read_caller_output(call.body, call.output, call.caller_output_fields);
    call.model = spec.model;
    call.stream = spec.stream;
    call.include_usage = spec.stream;
    call.call_id = r.request_id;
    call.start = start;
    if (spec.key) call.principal = principals_.at(*spec.key);
    else call.principal = std::make_shared<const auth::Principal>();
    if (call.principal->key) (void)policy::read_key_budget(call.principal->key->metadata, call.key_budget);
    for (const auto& [h, v] : spec.headers) (void)policy::parse_override_field(h, v, call.request_budget);

    CapturingSink sink;
    if (auto denied = auth::model_access_error(*call.principal, call.model, *cfg_)) {
      // The API layer refuses a group the key may not call before the attempt loop runs.
      r.status = denied->status;
      r.error = *denied;
      r.body = error_body(*denied);
      r.outcome = "refused";
      r.category = "failed";
      return r;
    }
    run_chat(std::move(call), sink);

    r.virtual_ms = ms_between(start, clock_.now());
    r.status = sink.status;
    r.streamed = sink.streamed;
    r.headers = sink.headers;
    r.body = sink.body;
    r.error = sink.error;
    if (sink.stream_error) r.error = sink.stream_error;
    for (auto it = store_->rows.rbegin(); it != store_->rows.rend(); ++it) {
      if (it->request_id != r.request_id) continue;
      boost::system::error_code ec;
      auto v = json::parse(it->decision, ec);
      if (!ec && v.is_object()) r.decision = std::move(v.as_object());
      break;
    }
    const auto& d = r.decision;
    r.outcome = str(d, "outcome");
    r.degradation = str(d, "degradation");
    if (r.degradation.empty()) {
      r.degradation = sink.header("x-tollgate-degradation");
      if (auto semi = r.degradation.find(';'); semi != std::string::npos) r.degradation.resize(semi);
    }
    r.served_by = str(d, "served_by");
    if (auto* steps = d.if_contains("steps"); steps && steps->is_array())
      for (const auto& st : steps->as_array())
        if (st.is_object() && str(st.as_object(), "step") == "attempt") ++r.attempts;
    if (auto* c = d.if_contains("consumed"); c && c->is_object()) {
      r.retries = static_cast<int>(num(c->as_object(), "retries"));
      r.fallbacks = static_cast<int>(num(c->as_object(), "fallbacks"));
      r.reserved = dollars(c->as_object(), "reserved");
      r.charged = dollars(c->as_object(), "charged");
    }
    if (!r.degradation.empty()) r.category = "degraded";
    else if (r.status >= 200 && r.status < 300) r.category = "served";
    else r.category = "failed";

    auto now_states = states_of(services_->circuits->snapshot());
    r.circuit_changes = circuit_changes(circuits_, now_states);
    circuits_ = std::move(now_states);
    const auto& calls = transport_->calls();
    r.calls.assign(calls.begin() + static_cast<std::ptrdiff_t>(calls_before), calls.end());
    const std::uint64_t raised = services_->alerts->total() - alerts_before;
    auto recent = services_->alerts->recent();  // newest first
    for (std::uint64_t i = std::min<std::uint64_t>(raised, recent.size()); i-- > 0;)
      r.alerts.push_back(recent[i].kind + " (" + recent[i].subject + ")");
    return r;
  }

  void run_chat(pipeline::ChatCall call, CapturingSink& sink) {
    net::io_context ioc;
    std::exception_ptr failure;
    auto done = [&failure](std::exception_ptr e, pipeline::RunOutcome) { failure = e; };
    auto task = pipeline::run_chat(services_, std::move(call), sink);
    net::co_spawn(ioc, std::move(task), done);
    ioc.run();
    if (failure) std::rethrow_exception(failure);
  }

  core::ManualClock clock_;
  std::shared_ptr<const config::Config> cfg_;
  const Scenario& sc_;
  core::SteadyTime t0_{};
  MemoryJobQueue jobs_;
  std::shared_ptr<pipeline::Services> services_;
  std::shared_ptr<ScriptedTransport> transport_;
  std::shared_ptr<RecordingStore> store_;
  std::map<std::string, std::shared_ptr<const auth::Principal>> principals_;
  CircuitStates circuits_;
};

}  // namespace

SimulationResult run_simulation(const config::Config& cfg, const Scenario& scenario) {
  // The run reseeds this thread's generator for every request (determinism). The thread's own
  // stream must go on afterwards as if nothing ran: on a server's admin thread it also draws the
  // UUIDs of /team/new, /budget/new... which would otherwise repeat after every simulation.
  struct RestoreRng {
    std::mt19937_64 saved = core::thread_rng();
    ~RestoreRng() { core::thread_rng() = saved; }
  } restore;
  Simulation sim(cfg, scenario);
  return sim.run();
}

}  // namespace tollgate::simulate
