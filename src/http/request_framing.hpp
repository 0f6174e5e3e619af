#pragma once
/// Request framing rules of RFC 9112 that Boost.Beast's parser leaves to the server (issue 14
/// §3), so that a request another hop could read differently — the root of request smuggling —
/// is refused with the connection closed instead of served. Beast itself already refuses bad
/// Content-Length values, a Transfer-Encoding whose last coding is not `chunked`, Content-Length
/// beside Transfer-Encoding, bare CR, NUL and invalid field names; what is left is checked here:
///
/// - obs-fold (a header line starting with SP or HTAB, RFC 9112 §5.2): refused (Beast would
///   fold it into the previous value);
/// - Transfer-Encoding on HTTP/1.0 (§6.1: the framing is faulty) → 400; any coding other than
///   one `chunked` (gzip, xchunked, …) → 501, a transfer coding Tollgate does not implement;
/// - Host missing on HTTP/1.1, or given more than once (§3.2) → 400;
/// - a chunk extension longer than kMaxChunkExtensionBytes → 400 (server.cpp's chunk callback);
/// - trailer fields in a request (Beast would add them to the checked head) → 400 (server.cpp);
/// - bytes that cannot start a request line → 400 at once, not after the header timeout;
/// - more than kMaxHeaderFields header fields → 431.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

namespace tollgate::http {

/// Why a request is refused: the status to answer it with and the message (the API's error
/// body carries it). The connection is closed after the answer.
struct FramingError {
  int status = 400;
  std::string message;
};

/// The longest chunk extension (the bytes after a chunk size's `;`) a request may carry.
inline constexpr std::size_t kMaxChunkExtensionBytes = 4096;

/// The most header fields a request may carry (issue 14 §4: a head of many tiny fields costs a
/// field node each, within the header byte limit); more → 431.
inline constexpr std::size_t kMaxHeaderFields = 128;

/// Where the request head in `bytes` ends: the offset just past its empty line ("\r\n\r\n", or a
/// bare "\n\n" that Beast will refuse), or npos when it has not all arrived yet.
std::size_t head_end(std::string_view bytes) noexcept;

/// Checks the first bytes of a request whose head has not all arrived: a request line starts
/// with a method token (RFC 9110 §9: tchar), so anything else (a TLS ClientHello, binary) is
/// refused at once rather than after the header timeout. nullopt when it may still be HTTP.
std::optional<FramingError> check_request_start(std::string_view bytes);

/// Checks the bytes of a request whose head has not all arrived yet (`buffered`: everything read
/// so far): check_request_start, then more than `max_header_bytes` buffered without the head's
/// empty line → 431. nullopt: read on.
std::optional<FramingError> check_partial_head(std::string_view buffered, std::size_t max_header_bytes);

/// Checks the raw request head (request line and header lines, as received) for obs-fold.
std::optional<FramingError> check_raw_head(std::string_view head);

/// Checks a parsed request head: Transfer-Encoding and Host as listed above, and at most
/// kMaxHeaderFields fields (431).
std::optional<FramingError> check_request_head(const boost::beast::http::request_header<>& head);

/// The parser a request is read with (the server's; the fuzz target's, tests/fuzz/).
using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

/// Sets the server's reading rules on a fresh `parser`: the header limit (`max_header_bytes`,
/// Beast's header_limit → 431), the body limit (`max_body_bytes`, body_limit → 413), and a chunk
/// header callback refusing a chunk extension longer than kMaxChunkExtensionBytes
/// (bad_chunk_extension → 400).
void configure_request_parser(RequestParser& parser, std::size_t max_header_bytes, std::size_t max_body_bytes);

/// What a failed read answers. `ec` is the error of reading the head (`in_body` false: Beast's
/// read_header) or the body (`in_body` true: read after the head was checked). nullopt: the
/// connection ends without an answer (the peer went away or was cut: timeout, EOF, reset before
/// a head; EOF, a cut body, cancellation while reading a body); else the refusal to answer with
/// before closing: body_limit → 413 naming `max_body_bytes`, header_limit → 431, a body timeout
/// → 408, anything else → 400 "malformed HTTP request: <Beast's message>".
std::optional<FramingError> read_refusal(const boost::system::error_code& ec, bool in_body, std::size_t max_body_bytes);

/// Trailer fields of a chunked body would be added to the head after check_request_head saw it
/// (a second Host, an Authorization no front proxy saw): `head_fields` is the head's field count
/// when it was checked, `after_body` the request once its body was read. More fields → 400.
std::optional<FramingError> check_no_trailers(std::size_t head_fields, const boost::beast::http::request_header<>& after_body);

}  // namespace tollgate::http
