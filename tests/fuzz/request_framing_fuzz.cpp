// Fuzz target: the HTTP/1.1 request head and body framing exactly as Tollgate's server reads it
// (http/request_framing.hpp: check_partial_head, check_raw_head, configure_request_parser,
// read_refusal, check_request_head, check_no_trailers; the same calls in the same order as
// http/server.cpp's session, over an in-memory stream instead of a socket).
//
// Input: byte 0 = how many bytes each read returns (1..255; 0 = 8192, the server's read size),
// then the bytes a client sends on one connection (pipelined requests allowed).
//
// Properties, for every request the server would hand to a handler:
// - exactly one framing: chunked (Transfer-Encoding, HTTP/1.1, one `chunked` coding) or a
//   Content-Length, never both, and a chunked request carries no Content-Length field;
// - the body has the announced length (Content-Length) and is within the body limit;
// - HTTP/1.1 requests carry exactly one Host; at most kMaxHeaderFields fields; no obs-fold;
// and every refusal is a 4xx/5xx status with a message.
#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <cstring>

#include "fuzz_support.hpp"
#include "http/request_framing.hpp"

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tollgate::fuzz::as_text;
using tollgate::fuzz::take_byte;

constexpr std::size_t kMaxHeaderBytes = 8 * 1024;  // smaller than the server's defaults: faster
constexpr std::size_t kMaxBodyBytes = 64 * 1024;

/// A SyncReadStream over the input: each read returns at most `step` bytes, then EOF (a client
/// that stops sending; the server's timeouts end the same way, without an answer).
struct MemoryStream {
  std::string_view data;
  std::size_t step;

  template <class Buffers>
  std::size_t read_some(const Buffers& buffers, boost::system::error_code& ec) {
    if (data.empty()) {
      ec = net::error::eof;
      return 0;
    }
    ec = {};
    std::size_t want = std::min(step, data.size());
    std::size_t done = 0;
    for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers) && done < want; ++it) {
      net::mutable_buffer b = *it;
      const std::size_t n = std::min(b.size(), want - done);
      std::memcpy(b.data(), data.data() + done, n);
      done += n;
    }
    data.remove_prefix(done);
    return done;
  }
  template <class Buffers>
  std::size_t read_some(const Buffers& buffers) {
    boost::system::error_code ec;
    const auto n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
};

void check_refusal(const tollgate::http::FramingError& e) {
  TG_FUZZ_CHECK(e.status >= 400 && e.status <= 599);
  TG_FUZZ_CHECK(!e.message.empty());
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  return true;
}

/// The properties of a request the server accepted.
void check_accepted(const tollgate::http::RequestParser& parser, std::string_view raw_head) {
  const auto& req = parser.get();
  int hosts = 0, te = 0, cl = 0;
  bool saw_te_field = false;
  std::size_t fields = 0;
  for (const auto& f : req) {
    ++fields;
    if (f.name() == bhttp::field::host) ++hosts;
    if (f.name() == bhttp::field::transfer_encoding) {
      // A list (RFC 9110 §5.6.1: empty elements allowed) over all the fields: one coding, chunked.
      std::string_view rest = f.value();
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        std::string_view v = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
        while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
        if (v.empty()) continue;
        TG_FUZZ_CHECK(iequals(v, "chunked"));
        ++te;
      }
      saw_te_field = true;
    }
    if (f.name() == bhttp::field::content_length) ++cl;
  }
  TG_FUZZ_CHECK(fields <= tollgate::http::kMaxHeaderFields);
  if (req.version() >= 11) TG_FUZZ_CHECK(hosts == 1);
  TG_FUZZ_CHECK(hosts <= 1);
  TG_FUZZ_CHECK(te == (saw_te_field ? 1 : 0));  // chunked exactly once when Transfer-Encoding is there
  TG_FUZZ_CHECK(!(te && cl));                   // exactly one framing
  TG_FUZZ_CHECK(parser.chunked() == (te == 1));
  if (te) TG_FUZZ_CHECK(req.version() >= 11);
  if (parser.content_length()) TG_FUZZ_CHECK(!parser.chunked());
  TG_FUZZ_CHECK(req.body().size() <= kMaxBodyBytes);
  if (cl) {
    TG_FUZZ_CHECK(parser.content_length().has_value());
    TG_FUZZ_CHECK(req.body().size() == *parser.content_length());
  }
  if (!te && !cl) TG_FUZZ_CHECK(req.body().empty());  // a request without framing has no body
  TG_FUZZ_CHECK(!tollgate::http::check_raw_head(raw_head));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tollgate::http;
  std::string_view in = as_text(data, size);
  const std::uint8_t step = take_byte(in);
  MemoryStream stream{in, step == 0 ? std::size_t{8192} : std::size_t{step}};
  beast::flat_buffer buf(kMaxHeaderBytes + 128 * 1024);
  const auto buffered = [&buf] {
    const auto d = buf.cdata();
    return std::string_view(static_cast<const char*>(d.data()), d.size());
  };
  for (int requests = 0; requests < 16; ++requests) {
    boost::system::error_code ec;
    if (buf.size() == 0) {
      const auto n = stream.read_some(buf.prepare(8192), ec);
      if (ec) return 0;
      buf.commit(n);
    }
    std::size_t end = head_end(buffered());
    while (end == std::string_view::npos) {
      if (auto bad = check_partial_head(buffered(), kMaxHeaderBytes)) {
        check_refusal(*bad);
        return 0;
      }
      const auto n = stream.read_some(buf.prepare(8192), ec);
      if (ec) return 0;
      buf.commit(n);
      end = head_end(buffered());
    }
    const std::string raw_head(buffered().substr(0, end));
    if (auto bad = check_raw_head(raw_head)) {
      check_refusal(*bad);
      return 0;
    }
    RequestParser parser;
    configure_request_parser(parser, kMaxHeaderBytes, kMaxBodyBytes);
    bhttp::read_header(stream, buf, parser, ec);
    if (ec) {
      if (auto bad = read_refusal(ec, false, kMaxBodyBytes)) check_refusal(*bad);
      return 0;
    }
    if (auto bad = check_request_head(parser.get())) {
      check_refusal(*bad);
      return 0;
    }
    const auto head_fields = static_cast<std::size_t>(std::distance(parser.get().begin(), parser.get().end()));
    if (!parser.is_done()) {
      bhttp::read(stream, buf, parser, ec);
      if (ec) {
        if (auto bad = read_refusal(ec, true, kMaxBodyBytes)) check_refusal(*bad);
        return 0;
      }
      if (auto bad = check_no_trailers(head_fields, parser.get())) {
        check_refusal(*bad);
        return 0;
      }
    }
    check_accepted(parser, raw_head);
    if (!parser.keep_alive()) return 0;
  }
  return 0;
}
