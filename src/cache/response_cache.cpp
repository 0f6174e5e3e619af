#include "cache/response_cache.hpp"
#include "core/json_parse.hpp"

#include <boost/json.hpp>

namespace tollgate::cache {
namespace json = boost::json;

std::string encode(const CachedAnswer& a) {
  json::object o;
  o["completion"] = a.completion;
  o["cost_nanos"] = a.cost_nanos;
  o["stored_ms"] = a.stored_unix_ms;
  return json::serialize(o);
}

std::optional<CachedAnswer> decode(std::string_view text) {
  boost::system::error_code ec;
  auto v = core::parse_json(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  const auto* c = o.if_contains("completion");
  const auto* n = o.if_contains("cost_nanos");
  const auto* t = o.if_contains("stored_ms");
  if (!c || !c->is_string() || !n || !n->is_int64() || !t || !t->is_int64()) return std::nullopt;
  return CachedAnswer{std::string(c->get_string()), n->get_int64(), t->get_int64()};
}

}  // namespace tollgate::cache
