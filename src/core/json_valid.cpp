#include "core/json_valid.hpp"

#include <boost/json/basic_parser_impl.hpp>

namespace tollgate::core {
namespace {

// A handler that accepts every event: the parser alone decides well-formedness.
struct NullHandler {
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  using ec = boost::system::error_code;
  bool on_document_begin(ec&) { return true; }
  bool on_document_end(ec&) { return true; }
  bool on_object_begin(ec&) { return true; }
  bool on_object_end(std::size_t, ec&) { return true; }
  bool on_array_begin(ec&) { return true; }
  bool on_array_end(std::size_t, ec&) { return true; }
  bool on_key_part(std::string_view, std::size_t, ec&) { return true; }
  bool on_key(std::string_view, std::size_t, ec&) { return true; }
  bool on_string_part(std::string_view, std::size_t, ec&) { return true; }
  bool on_string(std::string_view, std::size_t, ec&) { return true; }
  bool on_number_part(std::string_view, ec&) { return true; }
  bool on_int64(std::int64_t, std::string_view, ec&) { return true; }
  bool on_uint64(std::uint64_t, std::string_view, ec&) { return true; }
  bool on_double(double, std::string_view, ec&) { return true; }
  bool on_bool(bool, ec&) { return true; }
  bool on_null(ec&) { return true; }
  bool on_comment_part(std::string_view, ec&) { return true; }
  bool on_comment(std::string_view, ec&) { return true; }
};

}  // namespace

bool is_json_text(std::string_view text) noexcept {
  boost::json::parse_options opt;
  opt.max_depth = kMaxJsonDepth;
  boost::json::basic_parser<NullHandler> p{opt};
  boost::system::error_code ec;
  const auto n = p.write_some(false, text.data(), text.size(), ec);
  return !ec && n == text.size() && p.done();
}

}  // namespace tollgate::core
