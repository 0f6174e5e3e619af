#include "pipeline/upstream_errors.hpp"

namespace tollgate::pipeline {

policy::TransportEvent transport_event(const http::TransportError& e) {
  using K = http::TransportError::Kind;
  switch (e.kind) {
    case K::connect_failed: return policy::TransportEvent::connect_failed;
    case K::write_failed: return policy::TransportEvent::failed_before_send;
    case K::reset: return e.sent ? policy::TransportEvent::reset_after_send : policy::TransportEvent::connect_failed;
    case K::timeout: return e.sent ? policy::TransportEvent::timeout_after_send : policy::TransportEvent::connect_failed;
    case K::protocol_error: return policy::TransportEvent::malformed_body;
    case K::body_too_large: return policy::TransportEvent::oversized_body;
    case K::cancelled: return e.sent ? policy::TransportEvent::reset_after_send : policy::TransportEvent::failed_before_send;
  }
  return policy::TransportEvent::connect_failed;
}

core::Error transport_error(const http::TransportError& e, const config::Deployment& d) {
  using K = http::TransportError::Kind;
  const int status = e.kind == K::timeout ? 504 : 502;
  const std::string what = e.kind == K::timeout ? "timed out" : "failed";
  auto err = core::Error::gateway(status, status == 504 ? "timeout" : "api_error",
                                  "upstream " + d.model_name + " (" + d.id + ") " + what + ": " + e.message,
                                  status == 504 ? "upstream_timeout" : "upstream_unavailable");
  err.origin = core::ErrorOrigin::upstream;
  return err;
}

core::Error shutdown_error() {
  return core::Error::gateway(503, "api_error",
                              "the gateway is shutting down: this request was still running when its drain time "
                              "(tollgate_settings.drain_timeout_ms) ran out; retry it",
                              "gateway_shutting_down");
}

core::Error malformed_error(const config::Deployment& d, const std::string& why) {
  auto err = core::Error::gateway(502, "api_error", "upstream " + d.model_name + " (" + d.id + ") " + why,
                                  "bad_upstream_response");
  err.origin = core::ErrorOrigin::upstream;
  return err;
}

}  // namespace tollgate::pipeline
