#include "budget/token_bounds.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <limits>

namespace tollgate::budget {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Saturating helpers over non-negative int64 token counts.
std::int64_t sat_add(std::int64_t a, std::int64_t b) { return a > kInt64Max - b ? kInt64Max : a + b; }
std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kInt64Max / b ? kInt64Max : a * b;
}

std::int64_t utf8_bytes_of_strings(const boost::json::value& v) {
  if (const auto* s = v.if_string()) return static_cast<std::int64_t>(s->size());
  std::int64_t total = 0;
  if (const auto* a = v.if_array()) {
    for (const auto& e : *a) total = sat_add(total, utf8_bytes_of_strings(e));
  } else if (const auto* o = v.if_object()) {
    for (const auto& kv : *o) total = sat_add(total, utf8_bytes_of_strings(kv.value()));
  }
  return total;
}

bool is_image_part(const boost::json::object& part) {
  const auto* type = part.if_contains("type");
  if (type == nullptr || !type->is_string()) return part.contains("image_url");
  const auto& t = type->get_string();
  return t == "image_url" || t == "image" || t == "input_image";
}

std::int64_t message_bound(const boost::json::value& message, std::int64_t tokens_per_image) {
  std::int64_t total = kPerMessageTokenOverhead;
  const auto* m = message.if_object();
  if (m == nullptr) return sat_add(total, utf8_bytes_of_strings(message));
  for (const auto& kv : *m) {
    const auto& v = kv.value();
    if (kv.key() == "content" && v.is_array()) {
      for (const auto& part : v.get_array()) {
        total = sat_add(total, kPerMessageTokenOverhead);
        const auto* po = part.if_object();
        if (po != nullptr && is_image_part(*po)) {
          total = sat_add(total, tokens_per_image);
        } else {
          total = sat_add(total, utf8_bytes_of_strings(part));
        }
      }
    } else if (kv.key() == "tool_calls" && v.is_array()) {
      for (const auto& call : v.get_array()) {
        total = sat_add(total, sat_add(kPerMessageTokenOverhead, utf8_bytes_of_strings(call)));
      }
    } else {
      total = sat_add(total, utf8_bytes_of_strings(v));
    }
  }
  return total;
}

std::optional<std::int64_t> positive_int(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = v->if_int64()) return *i > 0 ? std::optional<std::int64_t>(*i) : std::nullopt;
  if (const auto* u = v->if_uint64()) {
    return *u > 0 ? std::optional<std::int64_t>(*u > static_cast<std::uint64_t>(kInt64Max)
                                                     ? kInt64Max
                                                     : static_cast<std::int64_t>(*u))
                  : std::nullopt;
  }
  if (const auto* d = v->if_double()) {
    // Integral doubles ("max_tokens": 100.0) only; the value is a token count, not money.
    if (*d >= 1 && *d < 9.2e18 && static_cast<double>(static_cast<std::int64_t>(*d)) == *d) {
      return static_cast<std::int64_t>(*d);
    }
  }
  return std::nullopt;
}

}  // namespace

std::int64_t input_token_upper_bound(const boost::json::object& chat, std::int64_t tokens_per_image) {
  tokens_per_image = std::max<std::int64_t>(tokens_per_image, 0);
  std::int64_t total = kPerRequestTokenOverhead;
  if (const auto* messages = chat.if_contains("messages")) {
    if (const auto* a = messages->if_array()) {
      for (const auto& m : *a) total = sat_add(total, message_bound(m, tokens_per_image));
    } else {
      total = sat_add(total, utf8_bytes_of_strings(*messages));
    }
  }
  for (std::string_view key : {"system", "prompt", "input"}) {
    if (const auto* v = chat.if_contains(key)) {
      // Anthropic `system` may be an array of text blocks: same per-part overhead as content.
      if (v->is_array()) total = sat_add(total, sat_mul(kPerMessageTokenOverhead, static_cast<std::int64_t>(v->get_array().size())));
      total = sat_add(total, utf8_bytes_of_strings(*v));
    }
  }
  for (std::string_view key : {"tools", "functions", "response_format", "tool_choice"}) {
    const auto* v = chat.if_contains(key);
    if (v == nullptr || v->is_null()) continue;
    total = sat_add(total, static_cast<std::int64_t>(boost::json::serialize(*v).size()));
    if (const auto* a = v->if_array()) {
      total = sat_add(total, sat_mul(kPerRequestTokenOverhead, static_cast<std::int64_t>(a->size())));
    }
  }
  return total;
}

std::int64_t output_token_upper_bound(const boost::json::object& chat, std::optional<std::int64_t> model_max_output) {
  std::optional<std::int64_t> requested = positive_int(chat, "max_completion_tokens");
  if (!requested) requested = positive_int(chat, "max_tokens");
  const std::int64_t n = positive_int(chat, "n").value_or(1);
  if (model_max_output && *model_max_output <= 0) model_max_output.reset();
  std::int64_t per_choice = kDefaultOutputTokenBound;
  if (requested && model_max_output) {
    per_choice = std::min(*requested, *model_max_output);
  } else if (requested) {
    per_choice = *requested;
  } else if (model_max_output) {
    per_choice = *model_max_output;
  }
  return sat_mul(per_choice, n);
}

}  // namespace tollgate::budget
