#include "cache/request_key.hpp"

#include <algorithm>
#include <vector>

#include <boost/json/serialize.hpp>

#include "auth/keys.hpp"

namespace tollgate::cache {
namespace json = boost::json;

namespace {

void write_canonical(const json::value& v, std::string& out) {
  switch (v.kind()) {
    case json::kind::object: {
      const auto& o = v.get_object();
      std::vector<const json::key_value_pair*> members;
      members.reserve(o.size());
      for (const auto& kv : o) members.push_back(&kv);
      std::sort(members.begin(), members.end(), [](auto* a, auto* b) { return a->key() < b->key(); });
      out += '{';
      for (std::size_t i = 0; i < members.size(); ++i) {
        if (i) out += ',';
        out += json::serialize(json::value(members[i]->key()));
        out += ':';
        write_canonical(members[i]->value(), out);
      }
      out += '}';
      return;
    }
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v.get_array()) {
        if (!first) out += ',';
        first = false;
        write_canonical(e, out);
      }
      out += ']';
      return;
    }
    default:
      out += json::serialize(v);
  }
}

}  // namespace

std::string canonical_json(const json::value& v) {
  std::string out;
  write_canonical(v, out);
  return out;
}

bool ignored_in_key(std::string_view m) {
  static constexpr std::string_view kIgnored[] = {"stream",     "stream_options", "cache",         "metadata",
                                                  "extra_body", "litellm_metadata", "caching",     "tags",
                                                  "mock_response", "fallbacks",   "num_retries"};
  return std::find(std::begin(kIgnored), std::end(kIgnored), m) != std::end(kIgnored);
}

std::string request_key(std::string_view ns, std::string_view caller, std::string_view model,
                        const json::object& caller_body) {
  json::object parts;
  json::object body;
  for (const auto& kv : caller_body)
    if (!ignored_in_key(kv.key())) body[kv.key()] = kv.value();
  body["model"] = model;
  parts["caller"] = caller;
  parts["request"] = std::move(body);
  const std::string hash = auth::sha256_hex(canonical_json(parts));
  if (ns.empty()) return hash;
  std::string out(ns);
  out += ':';
  out += hash;
  return out;
}

}  // namespace tollgate::cache
