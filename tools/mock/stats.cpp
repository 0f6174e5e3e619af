// What the "provider" served and billed, for tests to compare with the gateway's records.
#include "mock.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <array>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace tollgate::mock {

namespace {

// Sums of non-negative counts saturate instead of overflowing (huge scripted prompt_tokens).
void add_to(std::int64_t& total, std::int64_t v) {
  total = v > INT64_MAX - total ? INT64_MAX : total + v;
}

// Billed amounts of every kind, summed over bills.
struct Totals {
  std::int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  std::int64_t cache_write_tokens = 0, cache_write_1h_tokens = 0, reasoning_tokens = 0;
  std::int64_t audio_input_tokens = 0, audio_output_tokens = 0, image_input_tokens = 0;
  std::int64_t pdf_pages = 0, pdf_input_tokens = 0, web_search_calls = 0;
  std::int64_t accepted_prediction_tokens = 0, rejected_prediction_tokens = 0;
  std::map<std::string, std::int64_t> service_tiers;  ///< billed requests per reported tier

  void add(const Bill& b) {
    const Counts& k = b.counts;
    add_to(prompt_tokens, k.prompt);
    add_to(completion_tokens, k.billed_output());
    add_to(cached_tokens, k.cached);
    add_to(cache_write_tokens, k.cache_write);
    add_to(cache_write_1h_tokens, k.cache_write_1h);
    add_to(reasoning_tokens, k.reasoning);
    add_to(audio_input_tokens, k.audio_input);
    add_to(audio_output_tokens, k.audio_output);
    add_to(image_input_tokens, b.image_input_tokens);
    add_to(pdf_pages, b.pdf_pages);
    add_to(pdf_input_tokens, b.pdf_input_tokens);
    add_to(web_search_calls, k.web_search_calls);
    add_to(accepted_prediction_tokens, k.accepted_prediction);
    add_to(rejected_prediction_tokens, k.rejected_prediction);
    ++service_tiers[b.service_tier];
  }

  void write(boost::json::object& o) const {
    o["prompt_tokens"] = prompt_tokens;
    o["completion_tokens"] = completion_tokens;
    o["cached_tokens"] = cached_tokens;
    o["cache_write_tokens"] = cache_write_tokens;
    o["cache_write_1h_tokens"] = cache_write_1h_tokens;
    o["reasoning_tokens"] = reasoning_tokens;
    o["audio_input_tokens"] = audio_input_tokens;
    o["audio_output_tokens"] = audio_output_tokens;
    o["image_input_tokens"] = image_input_tokens;
    o["pdf_pages"] = pdf_pages;
    o["pdf_input_tokens"] = pdf_input_tokens;
    o["web_search_calls"] = web_search_calls;
    o["accepted_prediction_tokens"] = accepted_prediction_tokens;
    o["rejected_prediction_tokens"] = rejected_prediction_tokens;
    boost::json::object tiers;
    for (const auto& [tier, count] : service_tiers) tiers[tier] = count;
    o["service_tiers"] = std::move(tiers);
  }
};

struct ModelStats {
  std::int64_t requests = 0, succeeded = 0, failed = 0, streams = 0, cancelled = 0;
  Totals billed;
};

struct BillEntry {
  Bill bill;
  Outcome outcome;
};

struct Stats {
  std::mutex mu;
  std::int64_t requests_total = 0;
  std::int64_t cancelled_total = 0;
  std::map<std::string, ModelStats> models;
  std::set<std::string> seen;
  Totals totals;
  std::deque<BillEntry> bills;  ///< the newest kMaxBills, oldest first
  /// The W3C trace context of the newest kMaxBills requests: {model, traceparent, tracestate}.
  std::deque<std::array<std::string, 3>> traces;
};

Stats& stats() {
  static Stats s;
  return s;
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::succeeded: return "succeeded";
    case Outcome::failed: return "failed";
    case Outcome::cancelled: return "cancelled";
  }
  return "failed";
}

boost::json::object bill_json(const BillEntry& e) {
  const Bill& b = e.bill;
  const Counts& k = b.counts;
  boost::json::object o;
  o["model"] = b.model;
  o["family"] = !b.family.empty() ? b.family : b.anthropic ? "anthropic" : "openai";
  o["stream"] = b.stream;
  o["outcome"] = outcome_name(e.outcome);
  o["service_tier"] = b.service_tier;
  o["request_id"] = b.request_id;
  o["response_id"] = b.response_id;
  if (b.client_call_id)
    o["client_call_id"] = *b.client_call_id;
  else
    o["client_call_id"] = nullptr;
  o["prompt_tokens"] = k.prompt;
  o["completion_tokens"] = k.billed_output();
  o["cached_tokens"] = k.cached;
  o["cache_write_tokens"] = k.cache_write;
  o["cache_write_1h_tokens"] = k.cache_write_1h;
  o["reasoning_tokens"] = k.reasoning;
  o["reasoning_outside"] = k.reasoning_outside;
  o["audio_input_tokens"] = k.audio_input;
  o["audio_output_tokens"] = k.audio_output;
  o["image_input_tokens"] = b.image_input_tokens;
  o["pdf_pages"] = b.pdf_pages;
  o["pdf_input_tokens"] = b.pdf_input_tokens;
  o["web_search_calls"] = k.web_search_calls;
  o["accepted_prediction_tokens"] = k.accepted_prediction;
  o["rejected_prediction_tokens"] = k.rejected_prediction;
  return o;
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

void stats_request_end(const std::string& model, Outcome outcome, const Bill* bill) {
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
  if (!bill) return;
  m.billed.add(*bill);
  s.totals.add(*bill);
  if (s.bills.size() >= kMaxBills) s.bills.pop_front();
  s.bills.push_back({*bill, outcome});
}

void stats_note_trace(const std::string& model, std::string traceparent, std::string tracestate) {
  auto& s = stats();
  std::lock_guard lock(s.mu);
  if (s.traces.size() >= kMaxBills) s.traces.pop_front();
  s.traces.push_back({model, std::move(traceparent), std::move(tracestate)});
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
  boost::json::object totals;
  boost::json::array bills;
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
      m.billed.write(o);
      models[name] = std::move(o);
    }
    s.totals.write(totals);
    bills.reserve(s.bills.size());
    for (const auto& e : s.bills) bills.push_back(bill_json(e));
  }
  root["totals"] = std::move(totals);
  root["models"] = std::move(models);
  root["bills"] = std::move(bills);
  boost::json::array traces;
  {
    std::lock_guard lock(s.mu);
    for (const auto& t : s.traces)
      traces.push_back(boost::json::object{{"model", t[0]}, {"traceparent", t[1]}, {"tracestate", t[2]}});
  }
  root["traces"] = std::move(traces);
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
  s.totals = Totals{};
  s.bills.clear();
  s.traces.clear();
}

}  // namespace tollgate::mock
