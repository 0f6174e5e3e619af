#include "api/operation_decode.hpp"

#include <algorithm>

#include <boost/json.hpp>

#include "budget/operation_bounds.hpp"

namespace tollgate::api {
namespace json = boost::json;

namespace {

core::Error bad(std::string param, std::string message, std::string code = "invalid_value") {
  return core::Error::caller(400, "invalid_request_error", std::move(message), std::move(param), std::move(code));
}

/// A JSON integer value (integral doubles too), else nullopt.
std::optional<std::int64_t> integer_of(const json::value& v) {
  if (const auto* i = v.if_int64()) return *i;
  if (const auto* u = v.if_uint64()) return *u > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(*u);
  if (const auto* d = v.if_double(); d && *d >= -9.2e18 && *d <= 9.2e18 && static_cast<double>(static_cast<std::int64_t>(*d)) == *d)
    return static_cast<std::int64_t>(*d);
  return std::nullopt;
}

/// An optional integer field within [lo, hi]: nullopt value when absent or null.
std::expected<std::optional<std::int64_t>, core::Error> int_field(const json::object& o, std::string_view key,
                                                                  std::int64_t lo, std::int64_t hi) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return std::optional<std::int64_t>{};
  const auto n = integer_of(*v);
  const std::string k(key);
  if (!n) return std::unexpected(bad(k, "Invalid '" + k + "': expected an integer."));
  if (*n < lo || *n > hi)
    return std::unexpected(bad(k, "Invalid '" + k + "': expected a value between " + std::to_string(lo) + " and " +
                                      std::to_string(hi) + ", but got " + std::to_string(*n) + " instead."));
  return std::optional<std::int64_t>(*n);
}

/// A token array: non-empty, every element an integer >= 0. `where` names it in errors.
std::optional<core::Error> check_tokens(const json::array& a, const std::string& param, const std::string& where) {
  if (a.empty()) return bad(param, "Invalid '" + where + "': a token array must not be empty.");
  if (a.size() > kMaxTokenArrayLength)
    return bad(param, "Invalid '" + where + "': at most " + std::to_string(kMaxTokenArrayLength) + " tokens.");
  for (const auto& t : a) {
    const auto n = integer_of(t);
    if (!n || *n < 0 || *n > 0xFFFFFFFFLL)
      return bad(param, "Invalid '" + where + "': token ids must be non-negative integers.");
  }
  return std::nullopt;
}

/// `input` / `prompt`: a non-empty string, an array of non-empty strings, a token array, or an
/// array of token arrays, with at most `max_items` items. `empty_strings`: empty strings allowed.
std::optional<core::Error> check_prompt_value(const json::value* v, const std::string& param, std::size_t max_items,
                                              bool empty_strings) {
  if (v == nullptr || v->is_null()) return bad(param, "missing required parameter: '" + param + "'", "missing_required_parameter");
  if (const auto* s = v->if_string()) {
    if (s->empty() && !empty_strings) return bad(param, "Invalid '" + param + "': string must not be empty.");
    return std::nullopt;
  }
  const auto* a = v->if_array();
  if (a == nullptr)
    return bad(param, "Invalid '" + param + "': expected a string, an array of strings, an array of integers or an array of integer arrays.",
               "invalid_type");
  if (a->empty()) return bad(param, "Invalid '" + param + "': an array must not be empty.");
  if (a->front().is_number()) return check_tokens(*a, param, param);
  if (a->size() > max_items)
    return bad(param, "Invalid '" + param + "': an array must have at most " + std::to_string(max_items) + " items, but got " +
                          std::to_string(a->size()) + ".");
  const bool strings = a->front().is_string();
  for (std::size_t i = 0; i < a->size(); ++i) {
    const auto& e = (*a)[i];
    const std::string where = param + "[" + std::to_string(i) + "]";
    if (strings) {
      if (!e.is_string()) return bad(param, "Invalid '" + where + "': expected a string (every item of the array alike).", "invalid_type");
      if (e.get_string().empty() && !empty_strings) return bad(param, "Invalid '" + where + "': string must not be empty.");
    } else {
      if (!e.is_array()) return bad(param, "Invalid '" + where + "': expected an array of integers.", "invalid_type");
      if (auto err = check_tokens(e.get_array(), param, where)) return err;
    }
  }
  return std::nullopt;
}

std::optional<core::Error> read_stream(const json::object& body, pipeline::ChatCall& call) {
  if (const auto* st = body.if_contains("stream"); st && !st->is_null()) {
    if (!st->is_bool()) return bad("stream", "'stream' must be a boolean");
    call.stream = st->get_bool();
  }
  if (const auto* so = body.if_contains("stream_options"); so && so->is_object())
    if (const auto* iu = so->get_object().if_contains("include_usage"); iu && iu->is_bool()) call.include_usage = iu->get_bool();
  return std::nullopt;
}

}  // namespace

std::optional<core::Error> decode_embeddings(json::object& body, pipeline::ChatCall& call) {
  call.api = providers::CallApi::embeddings;
  if (auto err = check_prompt_value(body.if_contains("input"), "input", kMaxEmbeddingInputs, false)) return err;
  if (const auto* f = body.if_contains("encoding_format"); f && !f->is_null()) {
    if (!f->is_string() || (f->get_string() != "float" && f->get_string() != "base64"))
      return bad("encoding_format", "Invalid 'encoding_format': expected 'float' or 'base64'.");
  }
  if (auto dims = int_field(body, "dimensions", 1, kMaxEmbeddingDimensions); !dims) return std::move(dims.error());
  if (const auto* st = body.if_contains("stream"); st && !st->is_null() && !(st->is_bool() && !st->get_bool()))
    return bad("stream", "'stream' is not supported for embeddings", "unsupported_parameter");
  body.erase("stream");
  call.stream = false;
  call.output = pipeline::OutputRequest{};
  call.output.no_output = true;
  call.caller_output_fields.clear();
  return std::nullopt;
}

std::optional<core::Error> decode_completions(json::object& body, pipeline::ChatCall& call) {
  call.api = providers::CallApi::completions;
  const auto* prompt = body.if_contains("prompt");
  if (auto err = check_prompt_value(prompt, "prompt", kMaxTokenArrayLength, true)) return err;
  if (auto err = read_stream(body, call)) return err;
  auto max_tokens = int_field(body, "max_tokens", 1, INT64_MAX);
  if (!max_tokens) return std::move(max_tokens.error());
  auto n = int_field(body, "n", 1, 128);
  if (!n) return std::move(n.error());
  auto best_of = int_field(body, "best_of", 1, 20);
  if (!best_of) return std::move(best_of.error());
  if (*best_of && **best_of < n->value_or(1))
    return bad("best_of", "Invalid 'best_of': best_of must be greater than or equal to n.");
  if (*best_of && **best_of > 1 && call.stream)
    return bad("best_of", "Invalid 'best_of': best_of cannot be used with stream.", "unsupported_parameter");
  if (const auto* e = body.if_contains("echo"); e && !e->is_null() && !e->is_bool())
    return bad("echo", "Invalid 'echo': expected a boolean.", "invalid_type");
  if (const auto* s = body.if_contains("suffix"); s && !s->is_null() && !s->is_string())
    return bad("suffix", "Invalid 'suffix': expected a string.", "invalid_type");
  if (auto lp = int_field(body, "logprobs", 0, 5); !lp) return std::move(lp.error());
  const std::int64_t prompts = std::max<std::int64_t>(budget::prompt_count(*prompt), 1);  // before `body` changes
  // OpenAI's default limit on this endpoint is 16 tokens: written into the request, so that the
  // bound reserved is the one the upstream enforces (also when nothing is reserved).
  const std::int64_t limit = max_tokens->value_or(kCompletionsDefaultMaxTokens);
  body.erase("max_completion_tokens");  // not a field of this endpoint
  body["max_tokens"] = limit;
  call.caller_output_fields = json::object{{"max_tokens", limit}};
  call.output = pipeline::OutputRequest{};
  call.output.max_tokens = limit;
  // Every completion generated is billed (best_of server-side), for each prompt.
  const std::int64_t per_prompt = std::max(n->value_or(1), best_of->value_or(1));
  call.output.choices = per_prompt * prompts;
  if (const auto* st = body.if_contains("service_tier"); st && st->is_string()) call.output.service_tier = std::string(st->get_string());
  return std::nullopt;
}

}  // namespace tollgate::api
