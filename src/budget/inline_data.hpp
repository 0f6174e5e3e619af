#pragma once
// Reading inline payloads (a `data:` URL or a bare base64 field of a request body) without copying
// or decoding more than the caller asks for: the input-token bounds look at a few header bytes of
// an image, scan a PDF once, or only need a payload's size. Pure; thread-safe (a Base64Reader is a
// small value owned by one caller).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tollgate::budget {

/// The parts of a `data:` URL whose payload is base64 (RFC 2397: `data:[<media type>][;<param>]*;base64,<data>`).
struct DataUrl {
  std::string_view media_type;  ///< as written, e.g. "image/png" (empty when the URL names none)
  std::string_view base64;      ///< the base64 characters after the comma, not decoded
};

/// Splits `url` when it is a base64 `data:` URL (the scheme is matched case-insensitively).
/// nullopt for anything else: http(s) URLs, file ids, percent-encoded (non-base64) data URLs.
[[nodiscard]] std::optional<DataUrl> parse_base64_data_url(std::string_view url) noexcept;

/// An upper bound of the bytes `base64` decodes to, from its length alone (no decoding): every
/// character except trailing '=' padding is assumed to carry 6 bits, so whitespace or invalid
/// characters only make the bound larger.
[[nodiscard]] std::int64_t base64_decoded_size_bound(std::string_view base64) noexcept;

/// Sequential decoder over a base64 view (standard or URL-safe alphabet). ASCII whitespace is
/// skipped; decoding stops at '=' padding or at the first character outside the alphabet (then
/// failed() is true). Never allocates; the view must outlive the reader.
class Base64Reader {
 public:
  explicit Base64Reader(std::string_view base64) noexcept : in_(base64) {}

  /// Decodes up to `out.size()` bytes into `out`; returns how many were written (fewer only at the
  /// end of the data).
  std::size_t read(std::span<std::uint8_t> out) noexcept;

  /// The next decoded byte, or nullopt at the end of the data.
  std::optional<std::uint8_t> next() noexcept;

  /// Skips `n` decoded bytes; false when the data ends first.
  bool skip(std::uint64_t n) noexcept;

  /// Decoded bytes consumed so far.
  [[nodiscard]] std::uint64_t position() const noexcept { return produced_; }

  /// True once a character outside the alphabet (other than whitespace and padding) was met.
  [[nodiscard]] bool failed() const noexcept { return failed_; }

 private:
  bool refill() noexcept;  // decodes the next group into pending_

  std::string_view in_;
  std::size_t pos_ = 0;
  std::uint64_t produced_ = 0;
  std::uint8_t pending_[3] = {0, 0, 0};
  std::uint8_t pending_len_ = 0;
  std::uint8_t pending_pos_ = 0;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace tollgate::budget
