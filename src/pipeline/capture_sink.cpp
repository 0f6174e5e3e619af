#include "pipeline/capture_sink.hpp"

#include <boost/json.hpp>

namespace tollgate::pipeline {
namespace net = boost::asio;
namespace json = boost::json;

std::string captured_error_body(const core::Error& e) {
  json::object inner;
  inner["message"] = e.message;
  inner["type"] = e.type;
  inner["code"] = e.code.empty() ? json::value(nullptr) : json::value(e.code);
  inner["status"] = e.status;
  json::object o;
  o["error"] = std::move(inner);
  return json::serialize(o);
}

net::awaitable<bool> CaptureSink::send_completion(const json::object& completion, std::string raw, const Headers&) {
  result = raw.empty() ? json::serialize(completion) : std::move(raw);
  co_return true;
}

net::awaitable<bool> CaptureSink::send_json(int s, std::string body, const Headers&) {
  status = s;
  error = std::move(body);
  co_return true;
}

net::awaitable<bool> CaptureSink::send_error(const core::Error& e, const Headers&) {
  status = e.status;
  error = captured_error_body(e);
  failure = e;
  co_return true;
}

}  // namespace tollgate::pipeline
