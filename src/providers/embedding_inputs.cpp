#include "providers/embedding_inputs.hpp"


#include <boost/json.hpp>


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

std::optional<Provider::Refusal> refuse_token_inputs(const json::object& request) {
  auto texts = embedding_texts(request);
  if (texts) return std::nullopt;
  return Provider::Refusal{texts.error(), "input"};
}

bool is_embedding_vector(const json::value& value) {
  const auto* a = value.if_array();
  if (a == nullptr || a->empty()) return false;
  for (const auto& x : *a)
    if (!x.is_number()) return false;
  return true;
}

}  // namespace tollgate::providers
