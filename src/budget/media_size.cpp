#include "budget/media_size.hpp"

#include "budget/inline_data.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <span>

namespace tollgate::budget {
namespace {

__extension__ typedef unsigned __int128 u128;

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Reads exactly `n` bytes into `buf`; false when the data ends first.
bool read_exact(Base64Reader& r, std::uint8_t* buf, std::size_t n) {
  return r.read(std::span<std::uint8_t>(buf, n)) == n;
}

std::uint32_t be16(const std::uint8_t* p) { return (std::uint32_t{p[0]} << 8) | p[1]; }
std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}
std::uint32_t le16(const std::uint8_t* p) { return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8); }
std::uint32_t le24(const std::uint8_t* p) { return le16(p) | (std::uint32_t{p[2]} << 16); }
std::uint32_t le32(const std::uint8_t* p) { return le24(p) | (std::uint32_t{p[3]} << 24); }

bool same(const std::uint8_t* p, std::string_view s) { return std::memcmp(p, s.data(), s.size()) == 0; }

std::optional<ImageSize> make_size(std::uint32_t w, std::uint32_t h) {
  if (w == 0 || h == 0) return std::nullopt;
  return ImageSize{static_cast<std::int64_t>(w), static_cast<std::int64_t>(h)};
}

// ------------------------------------------------------------------ images

std::optional<ImageSize> png_size(Base64Reader& r) {
  // Signature already consumed. Chunks: length (BE u32), type, data, CRC. IHDR must be first,
  // except that Apple's "CgBI" PNGs put a 4-byte CgBI chunk before it.
  for (int chunk = 0; chunk < 2; ++chunk) {
    std::uint8_t h[8];
    if (!read_exact(r, h, 8)) return std::nullopt;
    const std::uint32_t len = be32(h);
    if (same(h + 4, "IHDR")) {
      std::uint8_t d[8];
      if (len < 8 || !read_exact(r, d, 8)) return std::nullopt;
      return make_size(be32(d), be32(d + 4));
    }
    if (!same(h + 4, "CgBI") || !r.skip(std::uint64_t{len} + 4)) return std::nullopt;
  }
  return std::nullopt;
}

bool is_jpeg_sof(std::uint8_t m) {
  // SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC).
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}

std::optional<ImageSize> jpeg_size(Base64Reader& r) {
  // SOI already consumed. Walk marker segments until a SOFn; SOS/EOI first means no frame header.
  for (int segments = 0; segments < 65'536; ++segments) {
    auto b = r.next();
    // Tolerate junk between segments: scan to the next 0xFF.
    int junk = 0;
    while (b && *b != 0xFF && junk++ < 65'536) b = r.next();
    if (!b || *b != 0xFF) return std::nullopt;
    do {
      b = r.next();  // fill bytes (0xFF 0xFF ...)
    } while (b && *b == 0xFF);
    if (!b) return std::nullopt;
    const std::uint8_t m = *b;
    if (m == 0x00 || m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7)) continue;  // no length
    if (m == 0xD9 || m == 0xDA) return std::nullopt;  // EOI / SOS before any frame header
    std::uint8_t lenb[2];
    if (!read_exact(r, lenb, 2)) return std::nullopt;
    const std::uint32_t len = be16(lenb);
    if (len < 2) return std::nullopt;
    if (is_jpeg_sof(m)) {
      std::uint8_t f[5];  // precision, height (BE u16), width (BE u16)
      if (len < 7 || !read_exact(r, f, 5)) return std::nullopt;
      return make_size(be16(f + 3), be16(f + 1));
    }
    if (!r.skip(len - 2)) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ImageSize> webp_size(const std::uint8_t* b, std::size_t n) {
  // RIFF <size> WEBP <fourcc> <chunk size> <payload...>; payload starts at byte 20.
  if (n < 30) return std::nullopt;
  const std::uint8_t* p = b + 20;
  if (same(b + 12, "VP8 ")) {
    // Frame tag (3 bytes), start code 9D 01 2A, then 14-bit width and height (2 scale bits each,
    // ignored like libwebp does).
    if (p[3] != 0x9D || p[4] != 0x01 || p[5] != 0x2A) return std::nullopt;
    return make_size(le16(p + 6) & 0x3FFF, le16(p + 8) & 0x3FFF);
  }
  if (same(b + 12, "VP8L")) {
    if (p[0] != 0x2F) return std::nullopt;
    const std::uint32_t bits = le32(p + 1);
    return make_size((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1);
  }
  if (same(b + 12, "VP8X")) {
    // Flags (1), reserved (3), canvas width − 1 (LE u24), canvas height − 1 (LE u24).
    return make_size(le24(p + 4) + 1, le24(p + 7) + 1);
  }
  return std::nullopt;
}

MediaKind sniff(const std::uint8_t* b, std::size_t n) {
  if (n >= 8 && b[0] == 0x89 && same(b + 1, "PNG\r\n\x1a\n")) return MediaKind::png;
  if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return MediaKind::jpeg;
  if (n >= 6 && (same(b, "GIF87a") || same(b, "GIF89a"))) return MediaKind::gif;
  if (n >= 12 && same(b, "RIFF") && same(b + 8, "WEBP")) return MediaKind::webp;
  if (n >= 12 && same(b, "RIFF") && same(b + 8, "WAVE")) return MediaKind::wav;
  if (n >= 3 && same(b, "ID3")) return MediaKind::mp3;
  if (n >= 2 && b[0] == 0xFF && (b[1] & 0xE0) == 0xE0) return MediaKind::mp3;  // MPEG audio frame sync
  // A PDF header may follow up to 1 KiB of junk (PDF 32000-1, annex H; Acrobat's tolerance).
  for (std::size_t i = 0; i + 5 <= n; ++i) {
    if (b[i] == '%' && same(b + i, "%PDF-")) return MediaKind::pdf;
  }
  return MediaKind::unknown;
}

// ------------------------------------------------------------------ PDF

// One pass over a PDF's bytes: a small tokenizer (names, integers, keywords, dictionaries) that
// records, per dictionary, its /Type and /Count, and skips comments, strings and stream bodies.
class PdfScanner {
 public:
  void feed(std::uint8_t c) {
    switch (state_) {
      case State::stream: return stream_byte(c);
      case State::comment:
        if (c == '\r' || c == '\n') state_ = State::normal;
        return;
      case State::literal: return literal_byte(c);
      case State::hex:
        if (c == '>') state_ = State::normal;
        return;
      case State::name: return name_byte(c);
      case State::regular: return regular_byte(c);
      case State::normal: return normal_byte(c);
    }
  }

  void finish() {
    if (state_ == State::name) end_name();
    if (state_ == State::regular) end_regular();
  }

  [[nodiscard]] std::optional<std::int64_t> pages() const {
    if (object_streams_) return std::nullopt;
    const std::int64_t n = std::max(max_count_, page_dicts_);
    if (n <= 0) return std::nullopt;
    return n;
  }

 private:
  enum class State : std::uint8_t { normal, comment, literal, hex, name, regular, stream };
  enum class Pending : std::uint8_t { none, type, count };
  struct Frame {
    Pending pending = Pending::none;
    bool page = false;
    bool pages = false;
    bool objstm = false;
    std::int64_t count = 0;
  };
  static constexpr int kMaxFrames = 32;
  static constexpr std::size_t kMaxName = 16;
  static constexpr std::string_view kEndstream = "endstream";

  static bool is_space(std::uint8_t c) { return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '; }
  static bool is_delim(std::uint8_t c) {
    return c == '(' || c == ')' || c == '<' || c == '>' || c == '[' || c == ']' || c == '{' || c == '}' || c == '/' || c == '%';
  }
  static int hex_value(std::uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  Frame* top() { return depth_ > 0 && depth_ <= kMaxFrames ? &frames_[static_cast<std::size_t>(depth_ - 1)] : nullptr; }

  void other_token() {
    if (auto* f = top()) f->pending = Pending::none;
  }

  void normal_byte(std::uint8_t c) {
    if (last_lt_) {
      last_lt_ = false;
      if (c == '<') return open_dict();
      state_ = State::hex;  // "<" starts a hex string
      other_token();
      if (c == '>') state_ = State::normal;
      return;
    }
    if (last_gt_) {
      last_gt_ = false;
      if (c == '>') return close_dict();
      // A lone '>' outside a hex string is malformed: ignore it and go on with this byte.
    }
    if (is_space(c)) return;
    switch (c) {
      case '%': state_ = State::comment; return;
      case '(':
        state_ = State::literal;
        literal_depth_ = 1;
        literal_escape_ = false;
        other_token();
        return;
      case '<': last_lt_ = true; return;
      case '>': last_gt_ = true; return;
      case '/':
        state_ = State::name;
        name_len_ = 0;
        name_overflow_ = false;
        name_hex_ = 0;
        return;
      case '[': case ']': case '{': case '}': case ')': other_token(); return;
      default:
        state_ = State::regular;
        reg_len_ = 0;
        reg_overflow_ = false;
        regular_byte(c);
        return;
    }
  }

  void literal_byte(std::uint8_t c) {
    if (literal_escape_) {
      literal_escape_ = false;
      return;
    }
    if (c == '\\') literal_escape_ = true;
    else if (c == '(') ++literal_depth_;
    else if (c == ')' && --literal_depth_ == 0) state_ = State::normal;
  }

  void name_push(std::uint8_t c) {
    if (name_len_ < kMaxName) name_[name_len_++] = static_cast<char>(c);
    else name_overflow_ = true;
  }

  void name_byte(std::uint8_t c) {
    if (name_hex_ > 0) {  // inside a #xx escape
      const int v = hex_value(c);
      if (v >= 0) {
        name_hex_value_ = name_hex_value_ * 16 + v;
        if (++name_hex_ == 3) {
          name_push(static_cast<std::uint8_t>(name_hex_value_));
          name_hex_ = 0;
        }
        return;
      }
      name_hex_ = 0;  // malformed escape: keep what we have and go on with this byte
    }
    if (is_space(c) || is_delim(c)) {
      end_name();
      state_ = State::normal;
      normal_byte(c);
      return;
    }
    if (c == '#') {
      name_hex_ = 1;
      name_hex_value_ = 0;
      return;
    }
    name_push(c);
  }

  void end_name() {
    const std::string_view n = name_overflow_ ? std::string_view{} : std::string_view(name_, name_len_);
    Frame* f = top();
    if (f == nullptr) return;
    if (f->pending == Pending::type) {
      f->pending = Pending::none;
      if (n == "Page") f->page = true;
      else if (n == "Pages") f->pages = true;
      else if (n == "ObjStm") f->objstm = true;
      return;
    }
    // A name in key position (or a name value after some other key).
    if (n == "Type") f->pending = Pending::type;
    else if (n == "Count") f->pending = Pending::count;
    else f->pending = Pending::none;
  }

  void regular_byte(std::uint8_t c) {
    if (is_space(c) || is_delim(c)) {
      end_regular();
      if (state_ == State::stream) {
        stream_byte(c);
        return;
      }
      state_ = State::normal;
      normal_byte(c);
      return;
    }
    if (reg_len_ < sizeof reg_) reg_[reg_len_++] = static_cast<char>(c);
    else reg_overflow_ = true;
  }

  void end_regular() {
    state_ = State::normal;
    const std::string_view t = reg_overflow_ ? std::string_view{} : std::string_view(reg_, reg_len_);
    if (t == "stream") {
      state_ = State::stream;
      match_ = 0;
      other_token();
      return;
    }
    // An integer? (sign allowed; a '.' makes it a real, which is no count.)
    std::int64_t v = 0;
    bool digits = !t.empty();
    std::size_t i = 0;
    bool negative = false;
    if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
      negative = t[0] == '-';
      i = 1;
      digits = t.size() > 1;
    }
    for (; i < t.size() && digits; ++i) {
      if (t[i] < '0' || t[i] > '9') {
        digits = false;
        break;
      }
      v = v > (kInt64Max - 9) / 10 ? kInt64Max : v * 10 + (t[i] - '0');
    }
    Frame* f = top();
    if (f == nullptr) return;
    if (digits && !negative && f->pending == Pending::count) f->count = std::max(f->count, v);
    f->pending = Pending::none;
  }

  void stream_byte(std::uint8_t c) {
    // Knuth–Morris–Pratt over "endstream" (its only self-overlap is the single 'e').
    while (true) {
      if (static_cast<char>(c) == kEndstream[match_]) {
        if (++match_ == kEndstream.size()) {
          state_ = State::normal;
          match_ = 0;
        }
        return;
      }
      if (match_ == 0) return;
      match_ = kFailure[match_];
    }
  }

  void open_dict() {
    other_token();  // the dictionary is the value of the parent's pending key, if any
    ++depth_;
    if (auto* f = top()) *f = Frame{};
  }

  void close_dict() {
    if (depth_ == 0) return;  // unbalanced ">>": ignore
    if (auto* f = top()) {
      if (f->page) ++page_dicts_;
      if (f->pages) max_count_ = std::max(max_count_, f->count);
      if (f->objstm) object_streams_ = true;
    }
    --depth_;
    other_token();
  }

  // KMP failure function of "endstream": only 'e' repeats (positions 0 and 6).
  static constexpr std::array<std::size_t, 9> kFailure = {0, 0, 0, 0, 0, 0, 0, 1, 0};

  State state_ = State::normal;
  bool last_lt_ = false;
  bool last_gt_ = false;
  int literal_depth_ = 0;
  bool literal_escape_ = false;
  char name_[kMaxName] = {};
  std::size_t name_len_ = 0;
  bool name_overflow_ = false;
  int name_hex_ = 0;
  int name_hex_value_ = 0;
  char reg_[24] = {};
  std::size_t reg_len_ = 0;
  bool reg_overflow_ = false;
  std::size_t match_ = 0;
  int depth_ = 0;
  std::array<Frame, kMaxFrames> frames_{};
  std::int64_t max_count_ = 0;
  std::int64_t page_dicts_ = 0;
  bool object_streams_ = false;
};

}  // namespace

MediaKind sniff_media_kind(std::string_view base64) noexcept {
  std::array<std::uint8_t, 1024> head{};
  Base64Reader r(base64);
  const std::size_t n = r.read(head);
  return sniff(head.data(), n);
}

std::optional<ImageSize> read_image_size(std::string_view base64) noexcept {
  Base64Reader r(base64);
  std::uint8_t b[30];
  // Enough for every signature; WebP needs its first 30 bytes.
  const std::size_t n = r.read(std::span<std::uint8_t>(b, 8));
  if (n < 3) return std::nullopt;
  if (n == 8 && b[0] == 0x89 && same(b + 1, "PNG\r\n\x1a\n")) return png_size(r);
  if (b[0] == 0xFF && b[1] == 0xD8) {
    // Re-read from just after SOI so the marker walk starts at the first segment.
    Base64Reader j(base64);
    if (!j.skip(2)) return std::nullopt;
    return jpeg_size(j);
  }
  if (n < 8) return std::nullopt;
  const std::size_t more = r.read(std::span<std::uint8_t>(b + 8, sizeof b - 8));
  const std::size_t total = 8 + more;
  if (total >= 10 && (same(b, "GIF87a") || same(b, "GIF89a"))) return make_size(le16(b + 6), le16(b + 8));
  if (total >= 12 && same(b, "RIFF") && same(b + 8, "WEBP")) return webp_size(b, total);
  return std::nullopt;
}

std::optional<std::int64_t> read_pdf_page_count(std::string_view base64) noexcept {
  if (sniff_media_kind(base64) != MediaKind::pdf) return std::nullopt;
  PdfScanner scanner;
  Base64Reader r(base64);
  std::array<std::uint8_t, 4096> buf{};
  for (;;) {
    const std::size_t n = r.read(buf);
    for (std::size_t i = 0; i < n; ++i) scanner.feed(buf[i]);
    if (n < buf.size()) break;
  }
  scanner.finish();
  return scanner.pages();
}

std::optional<std::int64_t> read_audio_duration_ms_bound(std::string_view base64, std::string_view format) noexcept {
  const std::int64_t total = base64_decoded_size_bound(base64);
  // Duration of `bytes` at `bytes_per_second`, in ms, rounded up (both > 0, bytes ≤ ~2^62 / 1000).
  auto ms_at = [](std::int64_t bytes, std::int64_t bytes_per_second) -> std::int64_t {
    const auto num = static_cast<u128>(bytes) * 1000U;
    const auto den = static_cast<u128>(bytes_per_second);
    const u128 ms = (num + den - 1) / den;
    return ms > static_cast<u128>(kInt64Max) ? kInt64Max : static_cast<std::int64_t>(ms);
  };
  constexpr std::int64_t kLowestBytesPerSecond = kLowestAudioBitrate / 8;
  std::array<std::uint8_t, 16> head{};
  Base64Reader peek(base64);
  const std::size_t n = peek.read(head);
  const MediaKind kind = sniff(head.data(), n);
  if (kind == MediaKind::mp3 || (kind == MediaKind::unknown && format == "mp3")) {
    return total > 0 ? std::optional<std::int64_t>(ms_at(total, kLowestBytesPerSecond)) : std::nullopt;
  }
  if (kind != MediaKind::wav) return std::nullopt;

  // RIFF/WAVE: walk the chunks to `fmt ` and `data`.
  Base64Reader r(base64);
  if (!r.skip(12)) return std::nullopt;
  bool have_fmt = false;
  std::uint32_t tag = 0;
  std::uint32_t channels = 0;
  std::uint32_t sample_rate = 0;
  std::uint32_t byte_rate = 0;
  std::uint32_t bits = 0;
  for (int chunk = 0; chunk < 64; ++chunk) {
    std::uint8_t h[8];
    if (!read_exact(r, h, 8)) return std::nullopt;
    const std::uint32_t size = le32(h + 4);
    if (same(h, "fmt ")) {
      std::uint8_t f[26] = {};
      const std::uint32_t want = std::min<std::uint32_t>(size, sizeof f);
      if (want < 16 || !read_exact(r, f, want)) return std::nullopt;
      tag = le16(f);
      channels = le16(f + 2);
      sample_rate = le32(f + 4);
      byte_rate = le32(f + 8);
      bits = le16(f + 14);
      if (tag == 0xFFFE && want >= 26) tag = le16(f + 24);  // WAVE_FORMAT_EXTENSIBLE: sub-format GUID
      have_fmt = true;
      if (!r.skip(std::uint64_t{size} - want + (size & 1U))) return std::nullopt;
      continue;
    }
    if (same(h, "data")) {
      if (!have_fmt) return std::nullopt;
      const std::int64_t audio = total - static_cast<std::int64_t>(r.position());
      if (audio <= 0) return std::int64_t{0};
      const bool pcm_like = tag == 1 || tag == 3 || tag == 6 || tag == 7;
      if (!pcm_like) return ms_at(audio, kLowestBytesPerSecond);
      const std::int64_t computed =
          static_cast<std::int64_t>(sample_rate) * static_cast<std::int64_t>(channels) * static_cast<std::int64_t>(bits) / 8;
      std::int64_t rate = computed;
      if (byte_rate > 0 && (rate <= 0 || static_cast<std::int64_t>(byte_rate) < rate)) rate = byte_rate;
      if (rate <= 0) return std::nullopt;
      return ms_at(audio, rate);
    }
    if (!r.skip(std::uint64_t{size} + (size & 1U))) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace tollgate::budget
