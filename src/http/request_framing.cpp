#include "http/request_framing.hpp"

#include <algorithm>
#include <iterator>

#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

namespace tollgate::http {

namespace bhttp = boost::beast::http;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

}  // namespace

std::size_t head_end(std::string_view bytes) noexcept {
  const auto crlf = bytes.find("\r\n\r\n");
  const auto lf = bytes.find("\n\n");
  const auto a = crlf == std::string_view::npos ? crlf : crlf + 4;
  const auto b = lf == std::string_view::npos ? lf : lf + 2;
  return std::min(a, b);
}

std::optional<FramingError> check_request_start(std::string_view bytes) {
  if (bytes.empty()) return std::nullopt;
  const unsigned char c = static_cast<unsigned char>(bytes.front());
  const bool token = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  if (token) return std::nullopt;
  return FramingError{400, "malformed HTTP request: not an HTTP request line"};
}

std::optional<FramingError> check_partial_head(std::string_view buffered, std::size_t max_header_bytes) {
  if (auto bad = check_request_start(buffered)) return bad;  // not HTTP (a TLS hello, garbage): at once
  if (buffered.size() > max_header_bytes) return FramingError{431, "request header fields too large"};
  return std::nullopt;
}

std::optional<FramingError> check_raw_head(std::string_view head) {
  // A line (after the request line) that starts with SP or HTAB continues the previous one.
  for (std::size_t i = head.find('\n'); i != std::string_view::npos && i + 1 < head.size(); i = head.find('\n', i + 1)) {
    const char next = head[i + 1];
    if (next == ' ' || next == '\t')
      return FramingError{400, "malformed HTTP request: obsolete line folding (obs-fold) in a header field"};
  }
  return std::nullopt;
}

std::optional<FramingError> check_request_head(const bhttp::request_header<>& head) {
  int hosts = 0;
  bool te = false;
  std::string codings;
  std::size_t fields = 0;
  for (const auto& f : head) {
    if (++fields > kMaxHeaderFields)
      return FramingError{431, "request header fields too large: more than " + std::to_string(kMaxHeaderFields) + " fields"};
    if (f.name() == bhttp::field::host) ++hosts;
    if (f.name() == bhttp::field::transfer_encoding) {
      te = true;
      if (!codings.empty()) codings += ',';
      codings += std::string_view(f.value());
    }
  }
  if (hosts > 1) return FramingError{400, "malformed HTTP request: more than one Host header field"};
  if (hosts == 0 && head.version() >= 11) return FramingError{400, "malformed HTTP request: HTTP/1.1 without a Host header field"};
  if (!te) return std::nullopt;
  if (head.version() < 11)
    return FramingError{400, "malformed HTTP request: Transfer-Encoding in an HTTP/1.0 request"};
  // Exactly one coding, chunked: Beast refuses a list that does not end in chunked.
  std::string_view rest(codings);
  int chunked = 0;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto coding = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (coding.empty()) continue;
    if (!iequals(coding, "chunked"))
      return FramingError{501, "transfer coding '" + std::string(coding.substr(0, 64)) + "' is not implemented (only chunked)"};
    ++chunked;
  }
  if (chunked != 1) return FramingError{400, "malformed HTTP request: Transfer-Encoding must be chunked, once"};
  return std::nullopt;
}

void configure_request_parser(RequestParser& parser, std::size_t max_header_bytes, std::size_t max_body_bytes) {
  parser.header_limit(static_cast<std::uint32_t>(max_header_bytes));
  parser.body_limit(static_cast<std::uint64_t>(max_body_bytes));
  // A chunk extension is read whole before the chunk: longer ones are refused. Beast keeps a
  // reference to the callback: a stateless one with static storage outlives every parser.
  static auto on_chunk = [](std::uint64_t, std::string_view extensions, boost::system::error_code& ec) {
    if (extensions.size() > kMaxChunkExtensionBytes) ec = bhttp::error::bad_chunk_extension;
  };
  parser.on_chunk_header(on_chunk);
}

std::optional<FramingError> read_refusal(const boost::system::error_code& ec, bool in_body, std::size_t max_body_bytes) {
  namespace net = boost::asio;
  if (ec == bhttp::error::body_limit)
    return FramingError{413, "request body exceeds the limit of " + std::to_string(max_body_bytes) + " bytes"};
  if (!in_body) {
    if (ec == bhttp::error::header_limit) return FramingError{431, "request header fields too large"};
    if (ec == boost::beast::error::timeout || ec == bhttp::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted)
      return std::nullopt;
    return FramingError{400, "malformed HTTP request: " + ec.message()};
  }
  if (ec == boost::beast::error::timeout) return FramingError{408, "request body not received in time"};
  if (ec == net::error::eof || ec == bhttp::error::partial_message || ec == net::error::operation_aborted)
    return std::nullopt;
  return FramingError{400, "malformed HTTP request: " + ec.message()};
}

std::optional<FramingError> check_no_trailers(std::size_t head_fields, const bhttp::request_header<>& after_body) {
  if (static_cast<std::size_t>(std::distance(after_body.begin(), after_body.end())) != head_fields)
    return FramingError{400, "malformed HTTP request: trailer fields in a request are not accepted"};
  return std::nullopt;
}

}  // namespace tollgate::http
