#pragma once
/// The head of an HTTP/1.x message as it goes on the wire (RFC 9112 sections 3, 4 and 5): the
/// start line, each field as `name: value` with CRLF, and the empty line. The same bytes Beast's
/// serializer writes (`basic_fields::writer`), made into one string: a message with a body held
/// elsewhere then goes out as two buffers in one write, without Beast's serializer walking its
/// buffer views for every send.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <boost/beast/http/message.hpp>

namespace tollgate::http {

/// One header field as views: (name, value).
using FieldView = std::pair<std::string_view, std::string_view>;

/// "HTTP/X.Y ### reason\r\n" + fields + "\r\n". The reason is the one set on the header, else
/// the status code's standard one (Beast's obsolete_reason). Fields are written as held.
std::string wire_head(const boost::beast::http::response_header<>& h);

/// "METHOD target HTTP/X.Y\r\n" + fields + "\r\n"; an unknown verb is written as its string.
std::string wire_head(const boost::beast::http::request_header<>& h);

/// The head of a complete response held as views: "HTTP/X.Y ### reason\r\n", `fields` in order,
/// then the Connection field keep-alive needs and "Content-Length: `content_length`". The bytes
/// wire_head() gives for a Response holding the same fields after keep_alive() and
/// prepare_payload() (ResponseWriter::send), for a status that has a body (not 1xx, 204, 304),
/// when `fields` name Connection, Content-Length and Transfer-Encoding none of them.
std::string wire_head(unsigned status, unsigned version, bool keep_alive, std::span<const FieldView> fields,
                      std::size_t content_length);

}  // namespace tollgate::http
