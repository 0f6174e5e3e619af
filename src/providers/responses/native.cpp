#include "providers/responses/native.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

#include "providers/openai_errors.hpp"
#include "providers/responses/translate.hpp"

namespace tollgate::providers::responses {
namespace json = boost::json;

namespace {

std::string trim_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

bool is_azure(const config::Deployment& d) { return d.provider == config::ProviderKind::azure; }

/// {base}/responses or Azure's {base}/openai/v1/responses.
std::expected<std::string, std::string> responses_url(const config::Deployment& d) {
  if (is_azure(d)) {
    if (d.api_base.empty()) return std::unexpected("azure deployment " + d.id + " has no api_base");
    std::string base = trim_slash(d.api_base);
    if (base.ends_with("/openai/v1")) return base + "/responses";
    if (base.ends_with("/openai")) return base + "/v1/responses";
    return base + "/openai/v1/responses";
  }
  return (d.api_base.empty() ? std::string("https://api.openai.com/v1") : trim_slash(d.api_base)) + "/responses";
}

std::expected<http::OutgoingRequest, std::string> request_to(const config::Deployment& d, const std::string& url) {
  auto target = http::parse_url(url);
  if (!target) return std::unexpected(target.error());
  http::OutgoingRequest req;
  req.target = std::move(*target);
  if (!d.api_key.empty()) {
    if (is_azure(d)) req.headers.emplace_back("api-key", d.api_key);
    else req.headers.emplace_back("Authorization", "Bearer " + d.api_key);
  }
  return req;
}

/// The error of a failed stream: an `error` event ({code, message, param}) or response.failed
/// ({response: {error: {code, message}}}). Rate limits are 429, everything else a 500.
policy::Outcome stream_failure(const json::object& error) {
  policy::Outcome o = outcome_from_openai_error(0, error);
  o.status = o.error_code == "rate_limit_exceeded" ? 429 : o.error_code == "insufficient_quota" ? 429 : 500;
  return o;
}

class EventsDecoder final : public StreamDecoder {
 public:
  void on_event(const http::SseEvent& ev, std::vector<std::string>& out) override {
    const std::string_view name = ev.event;
    // Most events are relayed without parsing; only the ones that end the stream are read.
    const bool terminal = name.empty() || name == "response.completed" || name == "response.incomplete" ||
                          name == "response.failed" || name == "error";
    if (!terminal) {
      out.emplace_back(ev.data);
      return;
    }
    boost::system::error_code ec;
    auto v = core::parse_json(ev.data, ec);
    if (ec || !v.is_object()) {
      if (name.empty()) return;  // not an event of this API
      error_ = stream_failure(json::object{{"code", "malformed_event"}, {"message", "an event that is not JSON"}});
      return;
    }
    const auto& o = v.get_object();
    const auto* type = o.if_contains("type");
    const std::string_view t = type && type->is_string() ? std::string_view(type->get_string()) : name;
    const auto* response = o.if_contains("response");
    const json::object* resp = response && response->is_object() ? &response->get_object() : nullptr;
    if (resp != nullptr)
      if (const auto* u = resp->if_contains("usage"); u && !u->is_null()) usage_ = usage_from_responses(*u);
    if (t == "error") {
      error_ = stream_failure(o);
      return;
    }
    if (t == "response.failed") {
      const auto* err = resp ? resp->if_contains("error") : nullptr;
      error_ = stream_failure(err && err->is_object() ? err->get_object() : json::object{{"message", "response.failed"}});
      return;
    }
    if (t == "response.completed" || t == "response.incomplete") finished_ = true;
    out.emplace_back(ev.data);
  }
  bool finished() const override { return finished_; }
  // Responses events: any `*.delta` (text, reasoning, tool-call arguments) or a function call item.
  bool carries_output(std::string_view data) const override {
    return data.find(".delta\"") != std::string_view::npos ||
           (data.find("\"response.output_item.added\"") != std::string_view::npos &&
            data.find("\"function_call\"") != std::string_view::npos);
  }
  Usage usage() const override { return usage_; }
  bool usage_final() const override { return finished_ && usage_.reported; }
  std::optional<policy::Outcome> error() const override { return error_; }

 private:
  bool finished_ = false;
  Usage usage_;
  std::optional<policy::Outcome> error_;
};

class NativeResponses final : public Provider {
 public:
  bool relays_openai_body() const override { return true; }

  void set_output_limit(const config::Deployment&, json::object& body, std::int64_t tokens, OutputField) const override {
    body.erase("max_tokens");
    body.erase("max_completion_tokens");
    body["max_output_tokens"] = tokens;
  }

  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, json::object& body,
                                                                  bool stream) const override {
    auto url = responses_url(d);
    if (!url) return std::unexpected(url.error());
    auto req = request_to(d, *url);
    if (!req) return req;
    body["model"] = d.upstream_model;
    if (stream) body["stream"] = true;
    else body.erase("stream");
    req->body = json::serialize(body);
    return req;
  }

  std::expected<Parsed, std::string> parse_response(const config::Deployment&, std::string_view body) const override {
    boost::system::error_code ec;
    auto v = core::parse_json(body, ec);
    if (ec || !v.is_object()) return std::unexpected("upstream returned a body that is not JSON");
    auto& o = v.as_object();
    const auto* output = o.if_contains("output");
    if (output == nullptr || !output->is_array()) return std::unexpected("upstream response has no output");
    Parsed p;
    if (const auto* u = o.if_contains("usage")) p.usage = usage_from_responses(*u);
    if (const auto* st = o.if_contains("service_tier"); st && st->is_string())
      p.usage.service_tier = std::string(st->get_string());
    p.completion = std::move(o);
    return p;
  }

  policy::Outcome parse_error(int status, std::string_view body) const override {
    return outcome_from_openai_body(status, body);
  }

  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment&, bool) const override {
    return std::make_unique<EventsDecoder>();
  }
};

}  // namespace

const Provider& native_adapter() {
  static const NativeResponses instance;
  return instance;
}

std::expected<http::OutgoingRequest, std::string> stored_response_request(const config::Deployment& d,
                                                                          std::string_view id) {
  auto url = responses_url(d);
  if (!url) return std::unexpected(url.error());
  return request_to(d, *url + "/" + std::string(id));
}

}  // namespace tollgate::providers::responses
