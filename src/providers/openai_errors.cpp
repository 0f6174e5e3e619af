#include "providers/openai_errors.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

namespace tollgate::providers {
namespace json = boost::json;

namespace {
std::string text_of(const json::value* v) {
  if (!v) return {};
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_int64()) return std::to_string(v->as_int64());
  if (v->is_uint64()) return std::to_string(v->as_uint64());
  return {};
}
}  // namespace

policy::Outcome outcome_from_openai_error(int status, const json::object& e) {
  policy::Outcome o;
  o.status = status;
  o.error_type = text_of(e.if_contains("type"));
  o.error_code = text_of(e.if_contains("code"));
  o.message = text_of(e.if_contains("message"));
  // Azure puts the content filter verdict in innererror.code ("ResponsibleAIPolicyViolation").
  if (auto* inner = e.if_contains("innererror"); inner && inner->is_object() && o.error_code.empty())
    o.error_code = text_of(inner->as_object().if_contains("code"));
  return o;
}

policy::Outcome outcome_from_openai_body(int status, std::string_view body) {
  boost::system::error_code ec;
  auto v = core::parse_json(body, ec);
  if (!ec && v.is_object()) {
    auto& o = v.as_object();
    if (auto* e = o.if_contains("error")) {
      if (e->is_object()) {
        auto out = outcome_from_openai_error(status, e->as_object());
        out.error_body = true;
        return out;
      }
      if (e->is_string()) {
        policy::Outcome out;
        out.status = status;
        out.message = std::string(e->as_string());
        out.error_body = true;
        return out;
      }
    }
    // Some OpenAI-compatible servers answer {"detail": "..."} (FastAPI) or, vLLM,
    // {"object":"error","message":...}: their own error answers. Any other JSON object (a load
    // balancer's {"message": "Gateway Timeout"}, a completion) is not evidence of an unbilled error.
    policy::Outcome out;
    out.status = status;
    const auto* kind = o.if_contains("object");
    out.error_body = o.contains("detail") || (kind && kind->is_string() && kind->as_string() == "error");
    for (auto key : {"message", "detail"})
      if (auto* m = o.if_contains(key); m && m->is_string()) out.message = std::string(m->as_string());
    return out;
  }
  policy::Outcome out;
  out.status = status;
  const bool html = body.find("<html") != std::string_view::npos || body.find("<HTML") != std::string_view::npos ||
                    body.find("<!DOCTYPE") != std::string_view::npos;
  out.message = html ? "upstream answered " + std::to_string(status) + " with an HTML page"
                     : "upstream answered " + std::to_string(status) + " with a non-JSON body";
  return out;
}

}  // namespace tollgate::providers
