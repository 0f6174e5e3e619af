#include "providers/embeddings_answer.hpp"

#include <bit>

#include <boost/json.hpp>

#include "budget/inline_data.hpp"

namespace tollgate::providers {
namespace json = boost::json;

std::expected<std::vector<std::string_view>, std::string> embedding_texts(const json::object& request) {
  std::vector<std::string_view> out;
  const auto* input = request.if_contains("input");
  if (input != nullptr && input->is_string()) {
    out.emplace_back(input->get_string());
    return out;
  }
  if (input != nullptr && input->is_array()) {
    out.reserve(input->get_array().size());
    for (const auto& item : input->get_array()) {
      if (!item.is_string()) break;
      out.emplace_back(item.get_string());
    }
    if (out.size() == input->get_array().size() && !out.empty()) return out;
  }
  return std::unexpected(std::string("token-array input (integer token ids) can only be embedded by OpenAI and Azure "
                                     "deployments: send the text instead"));
}

std::optional<std::int64_t> embedding_dimensions(const json::object& request) {
  const auto* v = request.if_contains("dimensions");
  if (v == nullptr) return std::nullopt;
  if (const auto* i = v->if_int64(); i && *i >= 1) return *i;
  if (const auto* u = v->if_uint64(); u && *u >= 1 && *u <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(*u);
  return std::nullopt;
}

std::optional<std::string> embeddings_input_refusal(const config::Deployment& d, const json::object& request) {
  if (d.provider == config::ProviderKind::openai || d.provider == config::ProviderKind::azure) return std::nullopt;
  auto texts = embedding_texts(request);
  if (texts) return std::nullopt;
  return "deployment '" + (d.id.empty() ? d.model_name : d.id) + "' (" + d.provider_prefix + "): " + texts.error();
}

bool is_embedding_vector(const json::value& value) {
  const auto* a = value.if_array();
  if (a == nullptr || a->empty()) return false;
  for (const auto& x : *a)
    if (!x.is_number()) return false;
  return true;
}

json::object embeddings_list(json::array vectors, std::string_view model, const Usage& usage) {
  json::array data;
  data.reserve(vectors.size());
  for (std::size_t i = 0; i < vectors.size(); ++i)
    data.push_back(json::object{{"object", "embedding"}, {"index", i}, {"embedding", std::move(vectors[i])}});
  const std::int64_t prompt = usage.reported ? usage.prompt_tokens : 0;
  return json::object{{"object", "list"},
                      {"data", std::move(data)},
                      {"model", model},
                      {"usage", json::object{{"prompt_tokens", prompt}, {"total_tokens", prompt}}}};
}

bool wants_base64_embeddings(const json::object& request) {
  const auto* f = request.if_contains("encoding_format");
  return f != nullptr && f->is_string() && f->get_string() == "base64";
}

void encode_embeddings_base64(json::object& list) {
  auto* data = list.if_contains("data");
  if (data == nullptr || !data->is_array()) return;
  for (auto& item : data->get_array()) {
    auto* e = item.is_object() ? item.get_object().if_contains("embedding") : nullptr;
    if (e == nullptr || !e->is_array()) continue;
    std::string bytes;
    bytes.reserve(e->get_array().size() * 4);
    for (const auto& x : e->get_array()) {
      const auto bits = std::bit_cast<std::uint32_t>(static_cast<float>(x.is_number() ? x.to_number<double>() : 0.0));
      for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>((bits >> (8 * k)) & 0xFFu));
    }
    *e = budget::base64_encode(bytes);
  }
}

}  // namespace tollgate::providers
