#pragma once
/// The upstream response parser: Beast's HTTP/1.x response parser (RFC 9112: status line, field
/// lines, framing by Content-Length, chunked transfer coding or the connection's close) with a
/// compact head and no body buffer of its own.
///
/// Beast's `response_parser` keeps the head in a `basic_fields`: one allocation, and a node in a
/// name-ordered set, for every field of every answer, though the attempt loop reads only a few
/// (content type, retry-after, rate-limit headers). Here the fields' text is kept in one buffer,
/// in arrival order, and a field is found by a linear, case-insensitive scan. The body is
/// appended to a string the reader names as it is parsed (no intermediate body buffer).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/basic_parser.hpp>

namespace tollgate::http {

class ResponseParser final : public boost::beast::http::basic_parser<false> {
 public:
  ResponseParser();

  /// The status code (e.g. 200), 0 before the status line is parsed.
  int status() const noexcept { return status_; }
  /// The HTTP version as 10 or 11, 0 before the status line is parsed.
  int version() const noexcept { return version_; }
  /// The value of the first field named `name` (compared case-insensitively, RFC 9110 section
  /// 5.1), as the parser gave it (without surrounding whitespace); empty when there is none.
  /// Fields of the head only (a chunked body's trailer fields are not kept). Valid as long as
  /// the parser.
  std::string_view header(std::string_view name) const noexcept;
  /// How many field lines the head had.
  std::size_t field_count() const noexcept { return fields_.size(); }
  /// Where the body goes: each parsed piece of it (content, or a chunk's data without its
  /// framing) is appended to `*out`. nullptr: a body byte is then an error (`body_to` must be set
  /// before reading the body). Bytes a read brings beyond the head stay in the reader's buffer
  /// until the next read, as with any Beast parser.
  void body_to(std::string* out) noexcept { out_ = out; }

 private:
  struct Field {
    std::uint32_t name_at, name_size, value_at, value_size;
  };
  void on_request_impl(boost::beast::http::verb, boost::beast::string_view, boost::beast::string_view, int,
                       boost::beast::error_code&) override;
  void on_response_impl(int code, boost::beast::string_view reason, int version, boost::beast::error_code& ec) override;
  void on_field_impl(boost::beast::http::field, boost::beast::string_view name, boost::beast::string_view value,
                     boost::beast::error_code& ec) override;
  void on_header_impl(boost::beast::error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, boost::beast::error_code&) override {}
  std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, boost::beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view body, boost::beast::error_code& ec) override;
  void on_finish_impl(boost::beast::error_code&) override {}

  int status_ = 0;
  int version_ = 0;
  std::string text_;  ///< every field's name then value, back to back
  std::vector<Field> fields_;
  std::string* out_ = nullptr;
};

}  // namespace tollgate::http
