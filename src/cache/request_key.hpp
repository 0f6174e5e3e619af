#pragma once
/// The response cache's key (issue 11 §4): an exact match on the request as the caller sent it.
/// The same key serves the response cache and the `stale_cache` degradation mode, so that an
/// answer one request left is found by an identical later one, whatever happened in between
/// (the adapters rewrite `model` and the output bound in the body they send; the key is built
/// from the caller's own fields, never from that body).

#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace tollgate::cache {

/// `v` as canonical JSON text: object members sorted by key (byte order) at every depth, no
/// whitespace, Boost.JSON's number and string forms. Two values that compare equal as JSON
/// (member order aside) give the same text.
std::string canonical_json(const boost::json::value& v);

/// Body members that steer the gateway or the transport, not the answer: left out of the key
/// (`stream`, `stream_options`, `cache`, `metadata`, `extra_body`, `litellm_metadata`, `caching`,
/// `tags`, `mock_response`, `fallbacks`, `num_retries`).
bool ignored_in_key(std::string_view member);

/// The key of a request: `<namespace>:<sha256 hex>` (`<sha256 hex>` when `ns` is empty) of the
/// caller (a key hash, "master" or "anonymous": one caller never sees another's answer), the
/// model group as the caller asked for it, and `caller_body` (the body with the caller's own
/// model and output limits) without the members ignored_in_key() names.
std::string request_key(std::string_view ns, std::string_view caller, std::string_view model,
                        const boost::json::object& caller_body);

}  // namespace tollgate::cache
