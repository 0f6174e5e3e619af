#include "providers/embeddings_list.hpp"

#include <bit>
#include <cstdint>

#include <openssl/evp.h>

namespace tollgate::providers {
namespace json = boost::json;

json::object embeddings_list(json::array vectors, std::string_view model, const Usage& usage) {
  json::array data;
  data.reserve(vectors.size());
  std::int64_t index = 0;
  for (auto& v : vectors)
    data.push_back(json::object{{"object", "embedding"}, {"index", index++}, {"embedding", std::move(v)}});
  json::object out{{"object", "list"}, {"data", std::move(data)}, {"model", model}};
  if (usage.reported)
    out["usage"] = json::object{{"prompt_tokens", usage.prompt_tokens}, {"total_tokens", usage.prompt_tokens}};
  return out;
}

std::string float32_base64(const json::array& vector) {
  std::string bytes(vector.size() * 4, '\0');
  for (std::size_t i = 0; i < vector.size(); ++i) {
    const auto& x = vector[i];
    const double d = x.is_double() ? x.get_double() : x.is_int64() ? static_cast<double>(x.get_int64())
                                                    : x.is_uint64() ? static_cast<double>(x.get_uint64()) : 0.0;
    const auto u = std::bit_cast<std::uint32_t>(static_cast<float>(d));
    for (std::size_t k = 0; k < 4; ++k) bytes[i * 4 + k] = static_cast<char>((u >> (8 * k)) & 0xFFu);
  }
  std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

void apply_encoding_format(const json::object& request, json::object& list) {
  const auto* f = request.if_contains("encoding_format");
  if (f == nullptr || !f->is_string() || f->get_string() != "base64") return;
  auto* data = list.if_contains("data");
  if (data == nullptr || !data->is_array()) return;
  for (auto& item : data->get_array()) {
    auto* o = item.if_object();
    auto* e = o ? o->if_contains("embedding") : nullptr;
    if (e != nullptr && e->is_array()) *e = float32_base64(e->get_array());
  }
}

}  // namespace tollgate::providers
