#include "budget/json_text.hpp"

#include <boost/json/basic_parser_impl.hpp>

#include <algorithm>
#include <cstdint>

namespace tollgate::budget::detail {
namespace {

using boost::json::error_code;
using boost::json::string_view;

// Builds a JsonText tree from Boost.JSON's SAX events. Containers under construction live on a
// stack (never recursion), so input depth is bounded only by the parser's max_depth.
class Builder {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  JsonText root;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(JsonText::Kind::object); }
  bool on_object_end(std::size_t, error_code&) { return close(); }
  bool on_array_begin(error_code&) { return open(JsonText::Kind::array); }
  bool on_array_end(std::size_t, error_code&) { return close(); }
  bool on_key_part(string_view s, std::size_t, error_code&) { return append(s); }
  bool on_key(string_view s, std::size_t, error_code&) {
    append(s);
    keys_.back() = std::move(part_);
    part_.clear();
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) { return append(s); }
  bool on_string(string_view s, std::size_t, error_code&) { return scalar(JsonText::Kind::string, s); }
  bool on_number_part(string_view s, error_code&) { return append(s); }
  bool on_int64(std::int64_t, string_view s, error_code&) { return scalar(JsonText::Kind::number, s); }
  bool on_uint64(std::uint64_t, string_view s, error_code&) { return scalar(JsonText::Kind::number, s); }
  bool on_double(double, string_view s, error_code&) { return scalar(JsonText::Kind::number, s); }
  bool on_bool(bool b, error_code&) {
    JsonText v;
    v.kind = JsonText::Kind::boolean;
    v.boolean = b;
    return add(std::move(v));
  }
  bool on_null(error_code&) { return add(JsonText{}); }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

 private:
  bool append(string_view s) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool scalar(JsonText::Kind kind, string_view s) {
    append(s);
    JsonText v;
    v.kind = kind;
    v.text = std::move(part_);
    part_.clear();
    return add(std::move(v));
  }
  bool open(JsonText::Kind kind) {
    JsonText v;
    v.kind = kind;
    stack_.push_back(std::move(v));
    keys_.emplace_back();
    return true;
  }
  bool close() {
    JsonText v = std::move(stack_.back());
    stack_.pop_back();
    keys_.pop_back();
    return add(std::move(v));
  }
  bool add(JsonText v) {
    if (stack_.empty()) {
      root = std::move(v);
    } else if (stack_.back().kind == JsonText::Kind::array) {
      stack_.back().items.push_back(std::move(v));
    } else {
      stack_.back().members.emplace_back(std::move(keys_.back()), std::move(v));
    }
    return true;
  }

  std::vector<JsonText> stack_;
  std::vector<std::string> keys_;
  std::string part_;
};

}  // namespace

const JsonText* JsonText::find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string_view kind_name(JsonText::Kind kind) noexcept {
  switch (kind) {
    case JsonText::Kind::null: return "null";
    case JsonText::Kind::boolean: return "a boolean";
    case JsonText::Kind::number: return "a number";
    case JsonText::Kind::string: return "a string";
    case JsonText::Kind::array: return "an array";
    case JsonText::Kind::object: return "an object";
  }
  return "a value";
}

std::expected<JsonText, std::string> parse_json_text(std::string_view json) {
  boost::json::basic_parser<Builder> parser(boost::json::parse_options{});
  error_code ec;
  const std::size_t used = parser.write_some(false, json.data(), json.size(), ec);
  if (!ec && used != json.size()) ec = boost::json::error::extra_data;
  if (ec) {
    const auto consumed = json.substr(0, std::min(used, json.size()));
    const auto line = 1 + std::count(consumed.begin(), consumed.end(), '\n');
    return std::unexpected("not valid JSON: " + ec.message() + " (line " + std::to_string(line) + ")");
  }
  return std::move(parser.handler().root);
}

}  // namespace tollgate::budget::detail
