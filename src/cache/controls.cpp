#include "cache/controls.hpp"

#include <cmath>

#include <boost/json.hpp>

namespace tollgate::cache {
namespace json = boost::json;

namespace {

/// Seconds as LiteLLM takes them (int or float), rounded up to whole seconds.
std::optional<std::int64_t> seconds_of(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() <= 1'000'000'000'000ULL) return static_cast<std::int64_t>(v.as_uint64());
  if (v.is_double() && std::isfinite(v.as_double()) && std::abs(v.as_double()) < 1e12)
    return static_cast<std::int64_t>(std::ceil(v.as_double()));
  return std::nullopt;
}

std::optional<ControlError> read_one(const json::value& cv, const std::string& where, Controls& out, bool& seen) {
  if (cv.is_null()) return std::nullopt;
  if (!cv.is_object())
    return ControlError{where + " must be an object like {\"no-cache\": true, \"ttl\": 60}", where};
  seen = true;
  const auto& o = cv.get_object();
  for (const char* flag : {"no-cache", "no-store"}) {
    const auto* v = o.if_contains(flag);
    if (!v || v->is_null()) continue;
    if (!v->is_bool()) return ControlError{where + "." + flag + " must be a boolean", where + "." + flag};
    (std::string_view(flag) == "no-cache" ? out.no_cache : out.no_store) = v->as_bool();
  }
  if (const auto* v = o.if_contains("ttl"); v && !v->is_null()) {
    auto s = seconds_of(*v);
    if (!s || *s <= 0) return ControlError{where + ".ttl must be a positive number of seconds", where + ".ttl"};
    out.ttl = *s;
  }
  if (const auto* v = o.if_contains("s-maxage"); v && !v->is_null()) {
    auto s = seconds_of(*v);
    if (!s || *s < 0) return ControlError{where + ".s-maxage must be a number of seconds ≥ 0", where + ".s-maxage"};
    out.s_maxage = *s;
  }
  if (const auto* v = o.if_contains("namespace"); v && !v->is_null()) {
    if (!v->is_string() || v->as_string().empty() || v->as_string().size() > 256)
      return ControlError{where + ".namespace must be a non-empty string of at most 256 characters", where + ".namespace"};
    out.cache_namespace = std::string(v->as_string());
  }
  return std::nullopt;
}

/// Takes `member.cache` out of body[member] when that is an object.
std::optional<json::value> take_nested(json::object& body, const char* member) {
  auto* m = body.if_contains(member);
  if (!m || !m->is_object()) return std::nullopt;
  auto& o = m->get_object();
  auto it = o.find("cache");
  if (it == o.end()) return std::nullopt;
  json::value v = it->value();
  o.erase(it);
  return v;
}

}  // namespace

std::expected<Controls, ControlError> take_controls(json::object& body) {
  Controls out;
  std::optional<json::value> top;
  if (auto it = body.find("cache"); it != body.end()) {
    top = it->value();
    body.erase(it);
  }
  const auto in_metadata = take_nested(body, "metadata");
  const auto in_extra = take_nested(body, "extra_body");
  // Lowest precedence first: a later source overrides what an earlier one set.
  const std::pair<const std::optional<json::value>*, const char*> sources[] = {
      {&in_extra, "extra_body.cache"}, {&in_metadata, "metadata.cache"}, {&top, "cache"}};
  for (const auto& [src, where] : sources) {
    if (!*src) continue;
    Controls layer = out;
    bool seen = false;
    if (auto err = read_one(**src, where, layer, seen)) return std::unexpected(std::move(*err));
    out = layer;
  }
  return out;
}

}  // namespace tollgate::cache
