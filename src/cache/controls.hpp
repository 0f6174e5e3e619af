#pragma once
/// LiteLLM's per-request cache controls (docs: proxy/caching_controls): a `cache` object in the
/// request body — `{"no-cache": bool, "no-store": bool, "ttl": seconds, "s-maxage": seconds,
/// "namespace": str}` — also read, as LiteLLM does, from `metadata.cache` and `extra_body.cache`
/// (the top-level object wins over metadata, metadata over extra_body).

#include <cstdint>
#include <expected>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

namespace tollgate::cache {

/// What a request asked of the cache.
struct Controls {
  bool no_cache = false;                  ///< do not answer from the cache (the answer may still be stored)
  bool no_store = false;                  ///< do not store this request's answer
  std::optional<std::int64_t> ttl;        ///< seconds this answer is kept (> 0)
  std::optional<std::int64_t> s_maxage;   ///< accept a cached answer at most this old, seconds (≥ 0)
  std::optional<std::string> cache_namespace;  ///< key prefix instead of cache_params.namespace
};

/// A control that is not of its documented type: the message names the field
/// (`cache.ttl must be a positive number of seconds`); `param` is the body path (`cache.ttl`).
struct ControlError {
  std::string message;
  std::string param;
};

/// Reads the controls from `body` and removes them from it (`cache`, `metadata.cache`,
/// `extra_body.cache`: none reaches a provider). Unknown members of `cache` are ignored, as in
/// LiteLLM. A `cache` that is not an object, or a control of the wrong type, is an error.
std::expected<Controls, ControlError> take_controls(boost::json::object& body);

}  // namespace tollgate::cache
