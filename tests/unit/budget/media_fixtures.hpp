#pragma once
// Tiny media payloads built in the tests: just the headers the size readers look at (PNG IHDR,
// JPEG SOF, GIF screen descriptor, WebP VP8/VP8L/VP8X, WAV fmt/data, PDF objects), and a base64
// encoder to wrap them in data: URLs.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tollgate::budget::test {

using Bytes = std::vector<std::uint8_t>;

inline std::string base64(const Bytes& b) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((b.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= b.size(); i += 3) {
    const std::uint32_t v = (std::uint32_t{b[i]} << 16) | (std::uint32_t{b[i + 1]} << 8) | b[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (b.size() - i == 1) {
    const std::uint32_t v = std::uint32_t{b[i]} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (b.size() - i == 2) {
    const std::uint32_t v = (std::uint32_t{b[i]} << 16) | (std::uint32_t{b[i + 1]} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

inline Bytes bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }
inline void append(Bytes& b, std::string_view s) { b.insert(b.end(), s.begin(), s.end()); }
inline void be16(Bytes& b, std::uint32_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}
inline void be32(Bytes& b, std::uint32_t v) {
  be16(b, v >> 16);
  be16(b, v & 0xFFFF);
}
inline void le16(Bytes& b, std::uint32_t v) {
  b.push_back(static_cast<std::uint8_t>(v));
  b.push_back(static_cast<std::uint8_t>(v >> 8));
}
inline void le24(Bytes& b, std::uint32_t v) {
  le16(b, v & 0xFFFF);
  b.push_back(static_cast<std::uint8_t>(v >> 16));
}
inline void le32(Bytes& b, std::uint32_t v) {
  le16(b, v & 0xFFFF);
  le16(b, v >> 16);
}

inline Bytes png(std::uint32_t w, std::uint32_t h) {
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  be32(b, 13);
  append(b, "IHDR");
  be32(b, w);
  be32(b, h);
  b.insert(b.end(), {8, 6, 0, 0, 0});  // bit depth, colour type, compression, filter, interlace
  be32(b, 0);                          // CRC (not checked)
  return b;
}

/// A JPEG: SOI, an APP0 segment, an APP1 segment of `app1_size` bytes (EXIF-like padding), a DQT,
/// then SOF0 (or SOF2 when progressive) with the size, then SOS.
inline Bytes jpeg(std::uint32_t w, std::uint32_t h, std::size_t app1_size = 0, bool progressive = false) {
  Bytes b = {0xFF, 0xD8};
  b.insert(b.end(), {0xFF, 0xE0});
  be16(b, 16);
  append(b, "JFIF");
  b.insert(b.end(), {0, 1, 1, 0, 0, 1, 0, 1, 0, 0});
  if (app1_size > 0) {
    b.insert(b.end(), {0xFF, 0xE1});
    be16(b, static_cast<std::uint32_t>(app1_size + 2));
    // Bytes that look like markers inside the payload must be skipped by length, not parsed.
    for (std::size_t i = 0; i < app1_size; ++i) b.push_back(i % 2 == 0 ? 0xFF : 0xC0);
  }
  b.insert(b.end(), {0xFF, 0xDB});
  be16(b, 67);
  b.push_back(0);
  for (int i = 0; i < 64; ++i) b.push_back(1);
  b.insert(b.end(), {0xFF, 0xFF, static_cast<std::uint8_t>(progressive ? 0xC2 : 0xC0)});  // with a fill byte
  be16(b, 17);
  b.push_back(8);
  be16(b, h);
  be16(b, w);
  b.push_back(3);
  for (int c = 1; c <= 3; ++c) b.insert(b.end(), {static_cast<std::uint8_t>(c), 0x11, 0});
  b.insert(b.end(), {0xFF, 0xDA});
  be16(b, 12);
  b.insert(b.end(), {3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0});
  b.insert(b.end(), {0x12, 0x34, 0xFF, 0xD9});
  return b;
}

inline Bytes gif(std::uint32_t w, std::uint32_t h) {
  Bytes b = bytes("GIF89a");
  le16(b, w);
  le16(b, h);
  b.insert(b.end(), {0xF7, 0, 0});
  return b;
}

inline Bytes riff_webp(std::string_view fourcc, const Bytes& payload) {
  Bytes b = bytes("RIFF");
  le32(b, static_cast<std::uint32_t>(4 + 8 + payload.size()));
  append(b, "WEBP");
  append(b, fourcc);
  le32(b, static_cast<std::uint32_t>(payload.size()));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

inline Bytes webp_vp8(std::uint32_t w, std::uint32_t h) {
  Bytes p = {0x50, 0x2A, 0x00, 0x9D, 0x01, 0x2A};
  le16(p, w & 0x3FFF);
  le16(p, h & 0x3FFF);
  p.insert(p.end(), 12, 0);
  return riff_webp("VP8 ", p);
}

inline Bytes webp_vp8l(std::uint32_t w, std::uint32_t h) {
  Bytes p = {0x2F};
  le32(p, ((w - 1) & 0x3FFF) | (((h - 1) & 0x3FFF) << 14));
  p.insert(p.end(), 12, 0);
  return riff_webp("VP8L", p);
}

inline Bytes webp_vp8x(std::uint32_t w, std::uint32_t h) {
  Bytes p = {0x10, 0, 0, 0};
  le24(p, w - 1);
  le24(p, h - 1);
  p.insert(p.end(), 12, 0);
  return riff_webp("VP8X", p);
}

/// A RIFF/WAVE file: `fmt ` (format tag, channels, rate, bits) then `data` with `data_bytes` zeros.
inline Bytes wav(std::uint32_t sample_rate, std::uint32_t channels, std::uint32_t bits, std::uint32_t data_bytes,
                 std::uint32_t tag = 1, bool list_chunk = false) {
  Bytes b = bytes("RIFF");
  le32(b, 0);  // size (not checked)
  append(b, "WAVE");
  if (list_chunk) {
    append(b, "LIST");
    le32(b, 5);
    append(b, "INFOx");
    b.push_back(0);  // pad byte of the odd-sized chunk
  }
  append(b, "fmt ");
  le32(b, 16);
  le16(b, tag);
  le16(b, channels);
  le32(b, sample_rate);
  le32(b, sample_rate * channels * bits / 8);
  le16(b, channels * bits / 8);
  le16(b, bits);
  append(b, "data");
  le32(b, data_bytes);
  b.insert(b.end(), data_bytes, 0);
  return b;
}

/// A small uncompressed PDF: a catalog, a /Pages node with /Count `count` (omitted when < 0), and
/// `page_objects` /Page dictionaries; `extra` is appended as another object (e.g. a stream).
inline std::string pdf(int count, int page_objects, std::string_view extra = {}) {
  std::string s = "%PDF-1.4\n%\xE2\xE3\xCF\xD3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n";
  s += "2 0 obj\n<< /Type /Pages /Kids [";
  for (int i = 0; i < page_objects; ++i) s += std::to_string(3 + i) + " 0 R ";
  s += "]";
  if (count >= 0) s += " /Count " + std::to_string(count);
  s += " >>\nendobj\n";
  for (int i = 0; i < page_objects; ++i) {
    s += std::to_string(3 + i) +
         " 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 9 0 R >> >> >>\nendobj\n";
  }
  s += extra;
  s += "trailer\n<< /Root 1 0 R >>\n%%EOF\n";
  return s;
}

}  // namespace tollgate::budget::test
