#include "providers/prefill.hpp"

#include <boost/json/array.hpp>

namespace tollgate::providers {

namespace json = boost::json;

namespace {

bool is_mistral(const config::Deployment& d) {
  return d.provider_prefix == "mistral" || d.provider_prefix == "mistralai";
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

bool accepts_prefill(const config::Deployment& d) noexcept {
  if (d.supports_assistant_prefill) return *d.supports_assistant_prefill;
  switch (d.provider) {
    case config::ProviderKind::anthropic:
      return true;
    case config::ProviderKind::bedrock:
      return d.upstream_model.find("anthropic.") != std::string::npos;
    case config::ProviderKind::openai:
      return is_mistral(d);
    default:
      return false;
  }
}

std::string_view prefill_text(std::string_view delivered) noexcept {
  while (!delivered.empty() && is_space(delivered.back())) delivered.remove_suffix(1);
  return delivered;
}

std::optional<std::string> final_assistant_text(const json::object& body) {
  const auto* msgs = body.if_contains("messages");
  if (msgs == nullptr || !msgs->is_array() || msgs->get_array().empty()) return std::nullopt;
  const auto& last = msgs->get_array().back();
  if (!last.is_object()) return std::nullopt;
  const auto& m = last.get_object();
  const auto* role = m.if_contains("role");
  if (role == nullptr || !role->is_string() || role->get_string() != "assistant") return std::nullopt;
  std::string text;
  const auto* content = m.if_contains("content");
  if (content && content->is_string()) text = content->get_string();
  if (content && content->is_array())
    for (const auto& part : content->get_array()) {
      if (!part.is_object()) continue;
      const auto* type = part.get_object().if_contains("type");
      const auto* t = part.get_object().if_contains("text");
      if (type && type->is_string() && type->get_string() == "text" && t && t->is_string()) text += t->get_string();
    }
  return text;
}

void put_prefill(json::object& body, std::string_view prefill, bool content_blocks, bool replace) {
  auto* msgs = body.if_contains("messages");
  if (msgs == nullptr || !msgs->is_array()) return;  // the API layer validated it; nothing to continue
  auto& arr = msgs->get_array();
  json::value content = content_blocks ? json::value(json::array{json::object{{"type", "text"}, {"text", prefill}}})
                                       : json::value(json::string(prefill));
  if (replace && !arr.empty() && arr.back().is_object()) {
    arr.back().get_object()["content"] = std::move(content);
    return;
  }
  arr.push_back(json::object{{"role", "assistant"}, {"content", std::move(content)}});
}

void mark_prefill(const config::Deployment& d, json::object& body) {
  if (d.provider != config::ProviderKind::openai && d.provider != config::ProviderKind::azure) return;
  if (is_mistral(d)) {
    auto* msgs = body.if_contains("messages");
    if (msgs && msgs->is_array() && !msgs->get_array().empty() && msgs->get_array().back().is_object())
      msgs->get_array().back().get_object()["prefix"] = true;
    return;
  }
  body["continue_final_message"] = true;
  body["add_generation_prompt"] = false;
}

}  // namespace tollgate::providers
