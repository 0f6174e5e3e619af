// Prompt media measurement: image sizes (PNG, JPEG, GIF, WebP headers), PDF page counts, and the
// providers' token formulas for them (README "Images and PDFs").
#include "mock.hpp"

#include <cctype>

namespace tollgate::mock {

namespace {

// Largest accepted image side; larger header values are treated as unreadable.
constexpr std::int64_t kMaxImageSide = 1 << 30;

std::uint32_t byte_at(std::string_view b, std::size_t i) { return static_cast<unsigned char>(b[i]); }
std::uint32_t be16(std::string_view b, std::size_t i) { return byte_at(b, i) << 8 | byte_at(b, i + 1); }
std::uint32_t le16(std::string_view b, std::size_t i) { return byte_at(b, i) | byte_at(b, i + 1) << 8; }
std::uint32_t le24(std::string_view b, std::size_t i) { return le16(b, i) | byte_at(b, i + 2) << 16; }
std::uint32_t be32(std::string_view b, std::size_t i) { return be16(b, i) << 16 | be16(b, i + 2); }

std::optional<ImageSize> sized(std::int64_t w, std::int64_t h) {
  if (w <= 0 || h <= 0 || w > kMaxImageSide || h > kMaxImageSide) return std::nullopt;
  return ImageSize{w, h};
}

std::optional<ImageSize> png_size(std::string_view b) {
  // Signature (8), IHDR length (4), "IHDR", width, height (big endian).
  if (b.size() < 24 || b.substr(12, 4) != "IHDR") return std::nullopt;
  return sized(be32(b, 16), be32(b, 20));
}

std::optional<ImageSize> gif_size(std::string_view b) {
  if (b.size() < 10) return std::nullopt;
  return sized(le16(b, 6), le16(b, 8));  // logical screen width, height
}

std::optional<ImageSize> webp_size(std::string_view b) {
  if (b.size() < 30) return std::nullopt;
  std::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8 ") {
    // Frame tag (3 bytes) at 20, start code 9d 01 2a, then 14-bit width and height.
    if (byte_at(b, 23) != 0x9d || byte_at(b, 24) != 0x01 || byte_at(b, 25) != 0x2a) return std::nullopt;
    return sized(le16(b, 26) & 0x3fff, le16(b, 28) & 0x3fff);
  }
  if (chunk == "VP8L") {
    // Signature 0x2f, then width-1 and height-1 as two 14-bit fields, little endian.
    if (byte_at(b, 20) != 0x2f) return std::nullopt;
    std::uint32_t bits = byte_at(b, 21) | byte_at(b, 22) << 8 | byte_at(b, 23) << 16 | byte_at(b, 24) << 24;
    return sized((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1);
  }
  if (chunk == "VP8X") {
    // Flags (1) and reserved (3) at 20, canvas width-1 and height-1 as 24-bit fields.
    return sized(static_cast<std::int64_t>(le24(b, 24)) + 1, static_cast<std::int64_t>(le24(b, 27)) + 1);
  }
  return std::nullopt;
}

bool is_sof(std::uint32_t m) { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc; }

std::optional<ImageSize> jpeg_size(std::string_view b) {
  std::size_t i = 2;  // after SOI
  while (i + 1 < b.size()) {
    if (byte_at(b, i) != 0xff) return std::nullopt;  // lost sync: not a marker
    std::uint32_t m = byte_at(b, i + 1);
    if (m == 0xff) {  // fill byte
      ++i;
      continue;
    }
    i += 2;
    if (m == 0xd8 || m == 0x01 || (m >= 0xd0 && m <= 0xd7)) continue;  // no length
    if (m == 0xd9 || m == 0xda) return std::nullopt;  // end of image / scan before any frame
    if (i + 2 > b.size()) return std::nullopt;
    std::size_t len = be16(b, i);
    if (len < 2) return std::nullopt;
    if (is_sof(m)) {
      // Length (2), precision (1), height (2), width (2).
      if (len < 7 || i + 7 > b.size()) return std::nullopt;
      return sized(be16(b, i + 5), be16(b, i + 3));
    }
    i += len;
  }
  return std::nullopt;
}

bool is_pdf_delimiter(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '/' || c == '<' || c == '>' || c == '[' ||
         c == ']' || c == '(' || c == ')' || c == '%' || c == '{' || c == '}';
}

std::size_t skip_pdf_space(std::string_view s, std::size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// What a `/Type` key at `at` names: 2 = /Pages, 1 = /Page, 0 = something else.
int pdf_type_at(std::string_view s, std::size_t at) {
  std::size_t i = skip_pdf_space(s, at + 5);  // after "/Type"
  if (s.substr(i, 5) != "/Page") return 0;
  i += 5;
  if (i < s.size() && s[i] == 's') {
    ++i;
    return i >= s.size() || is_pdf_delimiter(s[i]) ? 2 : 0;
  }
  return i >= s.size() || is_pdf_delimiter(s[i]) ? 1 : 0;
}

// The largest `/Count N` in `obj` (-1 when none).
std::int64_t max_count_in(std::string_view obj) {
  std::int64_t best = -1;
  for (std::size_t at = obj.find("/Count"); at != std::string_view::npos; at = obj.find("/Count", at + 6)) {
    std::size_t i = skip_pdf_space(obj, at + 6);
    if (i >= obj.size() || !std::isdigit(static_cast<unsigned char>(obj[i]))) continue;
    std::int64_t v = 0;
    for (; i < obj.size() && std::isdigit(static_cast<unsigned char>(obj[i])); ++i) {
      v = v * 10 + (obj[i] - '0');
      if (v > kMaxCompletionTokens) v = kMaxCompletionTokens;
    }
    if (v > best) best = v;
  }
  return best;
}

// ceil(a / b) for positive b.
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::string_view string_field(const boost::json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

const boost::json::object* object_field(const boost::json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

std::optional<ImageSize> decoded_size(const std::optional<std::string>& bytes) {
  return bytes ? image_size(*bytes) : std::nullopt;
}

void add_pdf(const std::optional<std::string>& bytes, const MediaRules& rules, MediaTally& out) {
  std::int64_t pages = bytes ? pdf_page_count(*bytes) : 0;
  out.pdf_pages += pages;
  out.pdf_tokens += pages * rules.pdf_tokens_per_page;
}

void tally_openai(const boost::json::object& part, std::string_view type, const MediaRules& rules,
                  MediaTally& out) {
  if (type == "image_url") {
    std::string_view url;
    bool low = false;
    if (auto* iu = object_field(part, "image_url")) {
      url = string_field(*iu, "url");
      low = string_field(*iu, "detail") == "low";
    } else {
      url = string_field(part, "image_url");
    }
    out.image_tokens += rules.image_tokens ? *rules.image_tokens
                                           : openai_image_tokens(decoded_size(data_url_decode(url)), low);
  } else if (type == "file") {
    auto* file = object_field(part, "file");
    std::string_view data = file ? string_field(*file, "file_data") : std::string_view();
    if (data.empty()) return;  // a file_id: the mock cannot see its pages
    add_pdf(data.starts_with("data:") ? data_url_decode(data) : base64_decode(data), rules, out);
  }
}

void tally_anthropic(const boost::json::object& part, std::string_view type, const MediaRules& rules,
                     MediaTally& out) {
  const boost::json::object* source = object_field(part, "source");
  bool inline_data = source && string_field(*source, "type") == "base64";
  if (type == "image") {
    if (rules.image_tokens) {
      out.image_tokens += *rules.image_tokens;
      return;
    }
    std::optional<std::string> bytes;
    if (inline_data) bytes = base64_decode(string_field(*source, "data"));
    out.image_tokens += anthropic_image_tokens(decoded_size(bytes));
  } else if (type == "document" && inline_data && string_field(*source, "media_type") == "application/pdf") {
    add_pdf(base64_decode(string_field(*source, "data")), rules, out);
  }
}

}  // namespace

std::optional<ImageSize> image_size(std::string_view b) {
  if (b.size() >= 8 && b.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8)) return png_size(b);
  if (b.size() >= 3 && byte_at(b, 0) == 0xff && byte_at(b, 1) == 0xd8 && byte_at(b, 2) == 0xff) return jpeg_size(b);
  if (b.size() >= 6 && (b.substr(0, 6) == "GIF87a" || b.substr(0, 6) == "GIF89a")) return gif_size(b);
  if (b.size() >= 12 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP") return webp_size(b);
  return std::nullopt;
}

std::int64_t pdf_page_count(std::string_view pdf) {
  std::int64_t pages_count = -1;  // the largest /Count of a /Pages object
  std::int64_t page_objects = 0;
  // Objects end with "endobj"; each span up to one is searched for its /Type.
  std::size_t begin = 0;
  while (begin < pdf.size()) {
    std::size_t end = pdf.find("endobj", begin);
    std::string_view obj = pdf.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
    bool pages_object = false;
    for (std::size_t at = obj.find("/Type"); at != std::string_view::npos; at = obj.find("/Type", at + 5)) {
      int t = pdf_type_at(obj, at);
      if (t == 2) pages_object = true;
      if (t == 1 && page_objects < kMaxCompletionTokens) ++page_objects;
    }
    if (pages_object) {
      std::int64_t c = max_count_in(obj);
      if (c > pages_count) pages_count = c;
    }
    if (end == std::string_view::npos) break;
    begin = end + 6;
  }
  return pages_count >= 0 ? pages_count : page_objects;
}

std::int64_t openai_image_tokens(const std::optional<ImageSize>& size, bool low_detail) {
  if (low_detail) return 85;
  if (!size) return 765;
  // The final size is (w, h) * num / den, kept exact in integers: first fit inside 2048x2048,
  // then, if the shortest side is still above 768, scale it to 768.
  std::int64_t w = size->width, h = size->height;
  std::int64_t longest = w > h ? w : h, shortest = w < h ? w : h;
  std::int64_t num = 1, den = 1;
  if (longest > 2048) {
    num = 2048;
    den = longest;
  }
  if (shortest * num > 768 * den) {
    num = 768;
    den = shortest;
  }
  std::int64_t tiles = ceil_div(w * num, den * 512) * ceil_div(h * num, den * 512);
  return 85 + 170 * tiles;
}

std::int64_t anthropic_image_tokens(const std::optional<ImageSize>& size) {
  if (!size) return 1600;
  std::int64_t w = size->width, h = size->height;
  if (w > 1568 || h > 1568) {
    // The long edge becomes 1568, the other is scaled alike and rounded to the nearest pixel.
    if (w >= h) {
      h = (h * 1568 * 2 + w) / (2 * w);
      w = 1568;
    } else {
      w = (w * 1568 * 2 + h) / (2 * h);
      h = 1568;
    }
    if (w < 1) w = 1;
    if (h < 1) h = 1;
  }
  // Anthropic also scales an image down to about 1.15 megapixels (~1,600 tokens): the bill never
  // exceeds that (https://docs.anthropic.com/en/docs/build-with-claude/vision).
  const std::int64_t tokens = ceil_div(w * h, 750);
  return tokens < 1600 ? tokens : 1600;
}

void tally_media_part(const boost::json::object& part, const MediaRules& rules, MediaTally& out) {
  std::string_view type = string_field(part, "type");
  if (type.empty()) return;
  if (rules.anthropic)
    tally_anthropic(part, type, rules, out);
  else
    tally_openai(part, type, rules, out);
}

}  // namespace tollgate::mock
