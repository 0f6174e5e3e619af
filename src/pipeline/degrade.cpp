#include "pipeline/degrade.hpp"
#include "core/json_parse.hpp"

#include "auth/access.hpp"
#include "pipeline/cache_step.hpp"
#include "pipeline/request_body.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/run_finish.hpp"

namespace tollgate::pipeline {

net::awaitable<void> Degrader::degrade(const config::DegradationConfig& named, std::string why,
                                       std::optional<core::Error> error) {
  config::DegradationConfig dc = named;  // an alias as target: access and budgets see its group
  if (!dc.model.empty()) dc.model = st_.svc->groups->resolve_alias(dc.model);
  const std::string mode(config::to_string(dc.mode));
  const bool needs_upstream =
      dc.mode == config::DegradationMode::equivalent || dc.mode == config::DegradationMode::reduced;
  if (needs_upstream) {
    std::string impossible;
    if (!st_.svc->groups->contains(dc.model)) impossible = "model group '" + dc.model + "' unknown";
    else if (!st_.time_for_an_attempt()) impossible = "no time left";
    else if (st_.cfg.general_settings.enforce_fallback_model_access && !auth::may_call(st_.principal(), dc.model, st_.cfg))
      impossible = "the key may not call '" + dc.model + "'";
    if (!impossible.empty()) {
      if (impossible.starts_with("the key")) st_.skipped.emplace_back(dc.model, "model_access_denied");
      st_.step_stop("degradation " + mode + " not possible: " + impossible);
      co_await fail_run(st_, std::move(error));
      co_return;
    }
  }
  TraceStep st;
  st.kind = TraceStep::Kind::degrade;
  st.group = dc.model;
  st.reason = mode + " (" + why + ")";
  st_.trace.steps.push_back(std::move(st));
  // The last attempt's "leave the group" is, in fact, this degradation.
  for (auto it = st_.trace.steps.rbegin(); it != st_.trace.steps.rend(); ++it)
    if (it->kind == TraceStep::Kind::attempt) {
      if (it->decision == "fallback") it->decision = "degrade";
      break;
    }
  switch (dc.mode) {
    case config::DegradationMode::none: break;
    case config::DegradationMode::equivalent:
    case config::DegradationMode::reduced: {
      if (dc.mode == config::DegradationMode::reduced && dc.max_tokens) cap_output_tokens(*dc.max_tokens);
      st_.degradation = mode;
      st_.caveat = dc.caveat;
      GroupResult r;
      co_await try_group_(dc.model, true, false, r);
      if (r.ok || st_.gone) {
        st_.trace.degradation = r.ok ? mode : std::string();
        finish_run(st_, r.ok, r.ok ? std::nullopt : std::optional<int>(499));
        co_return;
      }
      st_.degradation.clear();
      if (!r.attempted && r.refusal) st_.step_skip(dc.model, r.refusal->reason);
      break;
    }
    case config::DegradationMode::stale_cache: {
      const auto max_age = dc.max_age.value_or(milliseconds(3'600'000));
      auto hit = st_.svc->stale_cache->get(cache_key(st_), max_age, st_.svc->clock->now());
      if (!hit) {
        st_.step_stop("stale_cache: no answer to an identical request in the last " +
                        std::to_string(max_age.count()) + " ms");
        break;
      }
      auto parsed = parse_completion(hit->body);
      if (!parsed) break;
      st_.degradation = mode;
      st_.cache_age = hit->age;
      st_.trace.degradation = mode;
      auto headers = response_headers(st_, std::nullopt);
      co_await send_stored_answer(st_, *parsed, std::move(hit->body), headers);
      finish_run(st_, true, std::nullopt);
      co_return;
    }
    case config::DegradationMode::deferred: {
      if (!st_.svc->jobs) {
        st_.step_stop("deferred: no job store is configured");
        break;
      }
      if (const auto& f = st_.call.native_only_feature.empty() ? st_.call.hidden_input : st_.call.native_only_feature;
          !f.empty()) {
        // A job replays the chat translation, which cannot carry it.
        st_.step_stop("deferred: a call with '" + f + "' cannot be deferred");
        break;
      }
      store::JobRecord job;
      job.model_group = st_.call.model;
      job.call_type = st_.call.call_type;
      if (st_.principal().key) job.api_key = st_.principal().key->token_hash;
      job.request_body = json::serialize(deferred_body(st_));
      job.status = "queued";
      auto stored = co_await st_.svc->jobs->defer(std::move(job), st_.deadline);
      if (!stored && stored.error().why == DeferRefused::Why::queue_full) {
        // The key's queue is full: answered as fail_fast, naming why it was not deferred.
        st_.step_stop("deferred: not queued: " + stored.error().message);
        st_.trace.degradation = "fail_fast";
        st_.degradation = "fail_fast";
        auto err = core::Error::gateway(
            503, "api_error",
            "model group '" + st_.call.model + "' is degraded by policy (fallback_policy degradation mode deferred): " +
                why + "; the request was not deferred: " + stored.error().message,
            "deferred_queue_full");
        co_await fail_run(st_, err);
        co_return;
      }
      if (!stored) {
        st_.step_stop("deferred: the job could not be stored: " + stored.error().message);
        break;
      }
      st_.degradation = mode;
      st_.trace.degradation = mode;
      st_.trace.outcome = "deferred";
      auto headers = response_headers(st_, std::nullopt);
      headers.emplace_back("location", "/v1/tollgate/jobs/" + stored->id);
      auto body = job_json(*stored, why);
      co_await st_.sink.send_json(202, body, headers);
      finish_run(st_, true, std::nullopt);
      co_return;
    }
    case config::DegradationMode::fail_fast: {
      st_.trace.degradation = mode;
      st_.degradation = mode;
      auto err = core::Error::gateway(
          503, "api_error",
          "model group '" + st_.call.model + "' is degraded by policy (fallback_policy degradation mode fail_fast): " +
              why + (error ? "; last upstream error: " + error->message : std::string()),
          "degraded_fail_fast");
      co_await fail_run(st_, err);
      co_return;
    }
  }
  co_await fail_run(st_, std::move(error));
}

void Degrader::cap_output_tokens(std::int64_t cap) {
  if (st_.call.output.max_tokens && *st_.call.output.max_tokens <= cap) return;
  st_.call.output.max_tokens = cap;
  const char* k = st_.call.caller_output_fields.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  st_.call.caller_output_fields.erase("max_tokens");
  st_.call.caller_output_fields.erase("max_completion_tokens");
  st_.call.caller_output_fields[k] = cap;
}

std::optional<json::object> Degrader::parse_completion(const std::string& text) {
  boost::system::error_code ec;
  auto v = core::parse_json(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

}  // namespace tollgate::pipeline
