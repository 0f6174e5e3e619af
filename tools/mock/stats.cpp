// What the "provider" served and billed, for tests to compare with the gateway's records.
#include "mock.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <map>
#include <mutex>
#include <set>

namespace tollgate::mock {

namespace {

struct ModelStats {
  std::int64_t requests = 0, succeeded = 0, failed = 0, streams = 0, cancelled = 0;
  std::int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

struct Stats {
  std::mutex mu;
  std::int64_t requests_total = 0;
  std::int64_t cancelled_total = 0;
  std::map<std::string, ModelStats> models;
  std::set<std::string> seen;
};

Stats& stats() {
  static Stats s;
  return s;
}

}  // namespace

void stats_request_begin(const std::string* model, bool stream) {
  auto& s = stats();
  std::lock_guard lock(s.mu);
  ++s.requests_total;
  if (!model) return;
  auto& m = s.models[*model];
  ++m.requests;
  if (stream) ++m.streams;
  s.seen.insert(*model);
}

void stats_request_end(const std::string& model, Outcome outcome, std::int64_t prompt_tokens,
                       std::int64_t completion_tokens, std::int64_t cached_tokens) {
  auto& s = stats();
  std::lock_guard lock(s.mu);
  auto& m = s.models[model];
  switch (outcome) {
    case Outcome::succeeded: ++m.succeeded; break;
    case Outcome::failed: ++m.failed; break;
    case Outcome::cancelled:
      ++m.cancelled;
      ++s.cancelled_total;
      break;
  }
  m.prompt_tokens += prompt_tokens;
  m.completion_tokens += completion_tokens;
  m.cached_tokens += cached_tokens;
}

void stats_note_model(const std::string& model) {
  auto& s = stats();
  std::lock_guard lock(s.mu);
  s.seen.insert(model);
}

std::string stats_json() {
  auto& s = stats();
  boost::json::object root;
  boost::json::object models;
  {
    std::lock_guard lock(s.mu);
    root["requests_total"] = s.requests_total;
    root["cancelled_total"] = s.cancelled_total;
    for (const auto& [name, m] : s.models) {
      boost::json::object o;
      o["requests"] = m.requests;
      o["succeeded"] = m.succeeded;
      o["failed"] = m.failed;
      o["streams"] = m.streams;
      o["cancelled"] = m.cancelled;
      o["prompt_tokens"] = m.prompt_tokens;
      o["completion_tokens"] = m.completion_tokens;
      o["cached_tokens"] = m.cached_tokens;
      models[name] = std::move(o);
    }
  }
  root["models"] = std::move(models);
  return boost::json::serialize(root);
}

std::string models_json() {
  auto& s = stats();
  std::string out = R"({"object":"list","data":[)";
  std::lock_guard lock(s.mu);
  bool first = true;
  for (const auto& name : s.seen) {
    if (!first) out += ',';
    first = false;
    out += R"({"id":)" + json_quote(name) +
           R"(,"object":"model","created":1700000000,"owned_by":"tollgate-mock"})";
  }
  out += "]}";
  return out;
}

void stats_reset() {
  auto& s = stats();
  std::lock_guard lock(s.mu);
  s.requests_total = 0;
  s.cancelled_total = 0;
  s.models.clear();
  s.seen.clear();
}

}  // namespace tollgate::mock
