// The bodies of the model requests the mock received (GET /mock/requests), so that a test can
// check what a gateway sent upstream (fields passed through unchanged, limits written).
#include "mock.hpp"

#include <deque>
#include <mutex>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace tollgate::mock {

namespace {

struct Received {
  std::string path;
  std::string model;
  std::string body;
};

struct Recorded {
  std::mutex mu;
  std::deque<Received> list;
};

Recorded& recorded() {
  static Recorded r;
  return r;
}

}  // namespace

void record_request(std::string_view path, std::string_view model, std::string_view body) {
  auto& r = recorded();
  std::lock_guard lock(r.mu);
  r.list.push_back({std::string(path), std::string(model), std::string(body)});
  while (r.list.size() > kMaxRecorded) r.list.pop_front();
}

std::string recorded_requests_json() {
  auto& r = recorded();
  std::lock_guard lock(r.mu);
  std::string out = R"({"requests":[)";
  bool first = true;
  for (const auto& e : r.list) {
    if (!first) out += ",";
    first = false;
    boost::system::error_code ec;
    auto v = boost::json::parse(e.body, ec);
    out += R"({"path":)" + json_quote(e.path) + R"(,"model":)" + json_quote(e.model) + R"(,"body":)" +
           (ec ? json_quote(e.body) : boost::json::serialize(v)) + "}";
  }
  return out + "]}";
}

void recorded_requests_reset() {
  auto& r = recorded();
  std::lock_guard lock(r.mu);
  r.list.clear();
}

}  // namespace tollgate::mock
