#include "config/huggingface.hpp"

namespace tollgate::config {

namespace {

constexpr std::string_view kRouter = "https://router.huggingface.co";

/// `url` as an OpenAI-compatible base: .../v1 kept, .../chat/completions cut to what precedes
/// it, anything else gets /v1.
std::string openai_base(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  constexpr std::string_view tail = "/chat/completions";
  if (url.ends_with(tail)) return url.substr(0, url.size() - tail.size());
  if (url.ends_with("/v1")) return url;
  return url + "/v1";
}

}  // namespace

void apply_huggingface_routes(Deployment& d) {
  if (!d.api_base.empty()) {
    d.api_base = openai_base(d.api_base);
    return;
  }
  if (d.upstream_model.starts_with("http://") || d.upstream_model.starts_with("https://")) {
    d.api_base = openai_base(d.upstream_model);
    d.upstream_model = "tgi";
    return;
  }
  const auto slash = d.upstream_model.find('/');
  const bool has_provider = slash != std::string::npos && d.upstream_model.find('/', slash + 1) != std::string::npos;
  if (!has_provider) {
    d.api_base = std::string(kRouter) + "/hf-inference/models/" + d.upstream_model + "/v1";
    return;
  }
  const std::string provider = d.upstream_model.substr(0, slash);
  d.upstream_model = d.upstream_model.substr(slash + 1) + ":" + provider;
  d.api_base = std::string(kRouter) + "/v1";
}

}  // namespace tollgate::config
