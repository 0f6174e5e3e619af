#pragma once
// The size of an inline media payload, read from its base64 text without copying it: image
// dimensions (PNG, JPEG, GIF, WebP headers), a PDF's page count, an audio clip's duration. The
// input-token bounds turn these into tokens (media_tokens.hpp). Pure; thread-safe; no allocation.
//
// The format is always sniffed from the bytes (magic numbers), never taken from the declared media
// type, so a mislabelled payload is sized by what it is. Every reader answers nullopt when it cannot
// be sure; the caller then falls back to the model's maximum.

#include <cstdint>
#include <optional>
#include <string_view>

namespace tollgate::budget {

/// What an inline payload is, from its first bytes.
enum class MediaKind : std::uint8_t { unknown, png, jpeg, gif, webp, pdf, wav, mp3 };

/// Pixel dimensions of an image (both > 0).
struct ImageSize {
  std::int64_t width = 0;   ///< pixels
  std::int64_t height = 0;  ///< pixels
};

/// Sniffs the kind of the payload `base64` decodes to (decodes at most 16 bytes).
[[nodiscard]] MediaKind sniff_media_kind(std::string_view base64) noexcept;

/// The dimensions of the image `base64` decodes to:
///   PNG  — IHDR (width/height, big-endian u32), after an optional Apple CgBI chunk;
///   GIF  — logical screen descriptor (little-endian u16);
///   WebP — `VP8 ` key frame (14-bit sizes), `VP8L` (14-bit sizes − 1), `VP8X` canvas (24-bit − 1);
///   JPEG — the first SOFn marker (C0–C3, C5–C7, C9–CB, CD–CF) found by walking the marker
///          segments from SOI; stops at SOS/EOI.
/// nullopt for other formats, truncated or undecodable data, or a zero dimension (e.g. a JPEG whose
/// height is deferred to a DNL marker). EXIF orientation is ignored: every token formula used with
/// these sizes is symmetric in width and height. Decodes only the header bytes (JPEG: up to the SOF
/// marker, skipping segment payloads).
[[nodiscard]] std::optional<ImageSize> read_image_size(std::string_view base64) noexcept;

/// The page count of the PDF `base64` decodes to, scanning the whole file once:
/// max(the largest `/Count N` of a `/Type /Pages` dictionary, the number of `/Type /Page`
/// dictionaries). Comments, strings and stream bodies are skipped; `#xx` escapes in names are
/// decoded. nullopt when the data is not a PDF, when no page information is visible, or when the
/// file uses object streams (`/Type /ObjStm`): page dictionaries may then be compressed where the
/// scanner cannot see them (a signed or incrementally updated PDF can show one uncompressed page
/// and hide the rest), so no visible count can be trusted. Cost: one pass over the decoded bytes.
[[nodiscard]] std::optional<std::int64_t> read_pdf_page_count(std::string_view base64) noexcept;

/// The lowest bitrate assumed for compressed audio whose duration is estimated from its size,
/// bits per second: 8 kbit/s, the lowest standard MP3 bitrate (MPEG-2.5 Layer III).
inline constexpr std::int64_t kLowestAudioBitrate = 8'000;

/// An upper bound of the duration, in milliseconds (rounded up), of the audio `base64` decodes to.
/// `format` is the declared format ("wav", "mp3", ...); the bytes are sniffed first:
///   WAV (RIFF/WAVE): PCM, IEEE float, A-law/µ-law and WAVE_FORMAT_EXTENSIBLE use the smaller of the
///        declared byte rate and sample_rate × channels × bits/8; the audio bytes are everything from
///        the `data` chunk to the end of the payload (a lying chunk size cannot shorten the clip);
///        other WAV codecs (ADPCM, ...) are estimated like MP3;
///   MP3 (ID3 tag or an MPEG audio frame sync, or declared "mp3"): payload bytes at
///        kLowestAudioBitrate (no frame parsing, so VBR and lying headers are covered).
/// nullopt for other or unreadable data (a WAV without `fmt `/`data`, a zero rate, an unknown format).
[[nodiscard]] std::optional<std::int64_t> read_audio_duration_ms_bound(std::string_view base64,
                                                                       std::string_view format) noexcept;

}  // namespace tollgate::budget
