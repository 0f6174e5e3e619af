#include "http/aws_eventstream.hpp"

#include <array>

namespace tollgate::http {

namespace {

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

std::uint32_t be32(std::string_view s, std::size_t at) noexcept {
  return (std::uint32_t{static_cast<unsigned char>(s[at])} << 24) | (std::uint32_t{static_cast<unsigned char>(s[at + 1])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(s[at + 2])} << 8) | std::uint32_t{static_cast<unsigned char>(s[at + 3])};
}

void put32(std::string& s, std::uint32_t v) {
  for (int sh = 24; sh >= 0; sh -= 8) s.push_back(static_cast<char>((v >> sh) & 0xFF));
}

constexpr std::size_t kPrelude = 12;  // total length, headers length, prelude CRC
constexpr std::size_t kMinMessage = kPrelude + 4;

}  // namespace

std::uint32_t crc32(std::string_view data, std::uint32_t crc) noexcept {
  crc = ~crc;
  for (const char ch : data) crc = kTable[(crc ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string_view EventStreamMessage::header(std::string_view name) const noexcept {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return {};
}

bool EventStreamParser::fail(std::string why) {
  failed_ = true;
  error_ = std::move(why);
  buf_.clear();
  buf_.shrink_to_fit();
  return false;
}

bool EventStreamParser::decode(std::string_view msg, EventStreamMessage& out) {
  const std::uint32_t headers_len = be32(msg, 4);
  if (headers_len > msg.size() - kMinMessage) return fail("headers longer than the message");
  std::string_view h = msg.substr(kPrelude, headers_len);
  out.headers.clear();
  while (!h.empty()) {
    const std::size_t name_len = static_cast<unsigned char>(h[0]);
    if (name_len == 0 || h.size() < 1 + name_len + 1) return fail("malformed header");
    std::string name(h.substr(1, name_len));
    const auto type = static_cast<unsigned char>(h[1 + name_len]);
    h.remove_prefix(2 + name_len);
    std::size_t fixed = 0;
    switch (type) {
      case 0: case 1: fixed = 0; break;
      case 2: fixed = 1; break;
      case 3: fixed = 2; break;
      case 4: fixed = 4; break;
      case 5: case 8: fixed = 8; break;
      case 9: fixed = 16; break;
      case 6: case 7: {
        if (h.size() < 2) return fail("malformed header");
        const std::size_t len = (std::size_t{static_cast<unsigned char>(h[0])} << 8) | static_cast<unsigned char>(h[1]);
        if (h.size() < 2 + len) return fail("malformed header");
        if (type == 7) out.headers.emplace_back(std::move(name), std::string(h.substr(2, len)));
        h.remove_prefix(2 + len);
        continue;
      }
      default: return fail("unknown header value type " + std::to_string(type));
    }
    if (h.size() < fixed) return fail("malformed header");
    h.remove_prefix(fixed);
  }
  out.payload.assign(msg.substr(kPrelude + headers_len, msg.size() - kPrelude - headers_len - 4));
  return true;
}

bool EventStreamParser::feed(std::string_view bytes, const std::function<void(const EventStreamMessage&)>& on_message) {
  if (failed_) return false;
  buf_.append(bytes);
  std::size_t pos = 0;
  EventStreamMessage m;
  while (buf_.size() - pos >= kPrelude) {
    const std::string_view rest(buf_.data() + pos, buf_.size() - pos);
    const std::uint32_t total = be32(rest, 0);
    if (crc32(rest.substr(0, 8)) != be32(rest, 8)) return fail("prelude CRC mismatch");
    if (total < kMinMessage) return fail("message shorter than its prelude");
    if (total > max_) return fail("message of " + std::to_string(total) + " bytes over the limit");
    if (rest.size() < total) break;
    const std::string_view msg = rest.substr(0, total);
    if (crc32(msg.substr(0, total - 4)) != be32(msg, total - 4)) return fail("message CRC mismatch");
    if (!decode(msg, m)) return false;
    pos += total;
    on_message(m);
  }
  buf_.erase(0, pos);
  return true;
}

std::string encode_event_stream_message(const std::vector<std::pair<std::string, std::string>>& headers,
                                        std::string_view payload) {
  std::string h;
  for (const auto& [k, v] : headers) {
    h.push_back(static_cast<char>(k.size()));
    h += k;
    h.push_back(7);
    h.push_back(static_cast<char>((v.size() >> 8) & 0xFF));
    h.push_back(static_cast<char>(v.size() & 0xFF));
    h += v;
  }
  std::string out;
  const auto total = static_cast<std::uint32_t>(kMinMessage + h.size() + payload.size());
  put32(out, total);
  put32(out, static_cast<std::uint32_t>(h.size()));
  put32(out, crc32(out));
  out += h;
  out += payload;
  put32(out, crc32(out));
  return out;
}

}  // namespace tollgate::http
