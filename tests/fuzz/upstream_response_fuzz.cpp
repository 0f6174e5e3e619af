// Fuzz target: the upstream answer as Tollgate's client parses it (http/response_parser.hpp),
// against Beast's own response_parser on the same bytes. An upstream may answer anything: the
// two must agree on every input.
//
// Input: byte 0 = how many bytes each read delivers (1..255; 0 = the whole rest at once), byte 1
// bit 0 = whether the input ends with the connection's close (put_eof), then the bytes an
// upstream sends on one connection.
//
// Properties, read the way the client reads (the head first, stopping at its end, then the body
// with the sink set; header and body limits as configured):
// - both parsers fail at the same point with the same error, or neither does;
// - the same status, version, completion and keep-alive;
// - the same body, byte for byte (ResponseParser appends it to the reader's string);
// - header(name) is, for every field name of the head, the value of Beast's first field of that
//   name (the head as Beast held it when the head was done: trailer fields are not head fields).
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "http/response_parser.hpp"

namespace {

namespace bhttp = boost::beast::http;
using tollgate::fuzz::as_text;
using tollgate::fuzz::take_byte;

constexpr std::uint32_t kHeaderLimit = 8 * 1024;
constexpr std::uint64_t kBodyLimit = 64 * 1024;

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) tollgate::fuzz::property_failed(#cond, __FILE__, __LINE__);       \
  } while (0)

struct Outcome {
  boost::beast::error_code ec;
  std::size_t consumed = 0;  // input bytes taken when it stopped
  int status = 0;
  unsigned version = 0;
  bool done = false, keep_alive = false;
  std::string body;
};

/// Feeds `wire` in reads of `step` bytes (what is left over stays for the next put, as in a
/// connection's buffer); the head with eager off (async_read_header), then the body with eager
/// on. `on_head` runs once, when the head is done.
template <class Parser, class OnHead>
Outcome feed(Parser& p, std::string_view wire, std::size_t step, bool eof, OnHead on_head) {
  Outcome o;
  std::string buffer;
  std::size_t at = 0;
  bool head_seen = false;
  p.header_limit(kHeaderLimit);
  p.body_limit(kBodyLimit);
  for (;;) {
    if (p.is_done()) break;
    if (!buffer.empty()) {
      const std::size_t used = p.put(boost::asio::buffer(buffer), o.ec);
      buffer.erase(0, used);
      o.consumed += used;
      if (o.ec == bhttp::error::need_more) o.ec = {};
      if (o.ec) return o;
      if (!head_seen && p.is_header_done()) {
        head_seen = true;
        on_head();
        p.eager(true);
        continue;  // the body may already be in the buffer
      }
      if (used > 0) continue;
    }
    if (at == wire.size()) break;
    const std::size_t n = std::min(step, wire.size() - at);
    buffer.append(wire.substr(at, n));
    at += n;
  }
  // As Beast's reads end at the connection's close: put_eof once something was received, else
  // end_of_stream (put_eof asserts that the parser got some bytes).
  if (!p.is_done() && eof && at == wire.size() && buffer.empty()) {
    if (p.got_some()) p.put_eof(o.ec);
    else o.ec = bhttp::error::end_of_stream;
  }
  if (!head_seen && p.is_header_done()) on_head();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = as_text(data, size);
  const std::uint8_t step_byte = take_byte(in);
  const bool eof = (take_byte(in) & 1) != 0;
  const std::size_t step = step_byte == 0 ? in.size() + 1 : step_byte;

  // Ours.
  tollgate::http::ResponseParser mine;
  std::string body;
  std::vector<std::pair<std::string, std::string>> mine_head;
  Outcome a = feed(mine, in, step, eof, [&] { mine.body_to(&body); });
  a.body = body;
  a.status = mine.status();
  a.version = static_cast<unsigned>(mine.version());
  a.done = mine.is_done();
  a.keep_alive = a.done && mine.keep_alive();

  // Beast's.
  bhttp::response_parser<bhttp::string_body> beast;
  std::map<std::string, std::string> first_values;  // lower-cased name -> first value
  std::vector<std::string> names;
  bool head_done = false;
  Outcome b = feed(beast, in, step, eof, [&] {
    head_done = true;
    for (const auto& f : beast.get()) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      names.push_back(std::string(f.name_string()));
      first_values.emplace(name, std::string(f.value()));
    }
  });
  b.body = beast.get().body();
  b.status = head_done ? static_cast<int>(beast.get().result_int()) : 0;
  b.version = head_done ? beast.get().version() : 0;
  b.done = beast.is_done();
  b.keep_alive = b.done && beast.keep_alive();

  CHECK(a.ec == b.ec);
  CHECK(a.consumed == b.consumed);
  CHECK(a.done == b.done);
  CHECK(a.body == b.body);
  if (head_done) {
    CHECK(mine.is_header_done());
    CHECK(a.status == b.status);
    CHECK(a.version == b.version);
    CHECK(a.keep_alive == b.keep_alive);
    CHECK(mine.field_count() == names.size());
    for (const auto& n : names) {
      std::string lower = n;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      CHECK(mine.header(n) == first_values[lower]);
    }
  }
  return 0;
}
