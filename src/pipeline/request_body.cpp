#include "pipeline/request_body.hpp"

#include "cache/request_key.hpp"
#include "pipeline/cache_step.hpp"

namespace tollgate::pipeline {

json::object caller_body(const RunState& st) {
  json::object b = st.call.body;
  b["model"] = st.call.model;  // the adapters write the upstream model in place
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    b.erase(k);
    if (const auto* v = st.call.caller_output_fields.if_contains(k)) b[k] = *v;
  }
  return b;
}

std::string cache_key(const RunState& st) {
  // The response cache's key without a namespace (cache/request_key.hpp): the same request,
  // whether it was answered before or after the adapters rewrote the body.
  return cache::request_key("", cache_caller(st), st.call.model, caller_body(st));
}

json::object deferred_body(const RunState& st) {
  json::object b = caller_body(st);
  b.erase("stream");
  b.erase("stream_options");
  const auto& p = st.principal();
  if (!p.tags.empty()) {
    json::array tags;
    for (const auto& t : p.tags) tags.emplace_back(t);
    auto& md = b["metadata"];
    if (!md.is_object()) md = json::object();
    md.as_object()["tags"] = std::move(tags);
  }
  const auto& bud = st.trace.budget;
  json::object rb;
  rb["max_retries"] = bud.max_retries;
  rb["max_fallbacks"] = bud.max_fallbacks;
  rb["deadline_ms"] = bud.deadline.count();
  if (bud.max_request_cost < budget::kMaxNanos) rb["max_request_cost"] = budget::format_dollars(bud.max_request_cost);
  b["tollgate_request_budget"] = std::move(rb);
  return b;
}

}  // namespace tollgate::pipeline
