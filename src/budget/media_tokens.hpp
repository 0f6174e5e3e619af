#pragma once
// What media inputs (images, PDF pages, audio) and tool definitions cost in input tokens, per model
// family, from each provider's documented rules; used by input_token_upper_bound (token_bounds.hpp).
// Every function returns an UPPER BOUND: where a documented formula leaves rounding open, the
// rounding that costs more is used. Sources and formulas: docs/budgets.md "Input bounds". Pure; thread-safe;
// the family table is constant data.

#include "budget/media_size.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace tollgate::budget {

/// How a family turns an image into tokens.
enum class MediaFamilyKind : std::uint8_t {
  openai_tiles,    ///< OpenAI GPT-4o/4.1/4.5/5, o1/o3, CUA: base + tiles × 512-px tile tokens
  openai_patches,  ///< OpenAI patch models: 32-px patches under a patch budget × a multiplier
  claude,          ///< Anthropic Claude: 28-px patches (and ~w×h/750) after a long-edge resize, capped
  gemini_tiles,    ///< Gemini 1.x/2.x: 258 per image ≤ 384 px, else 258 per tile (no documented maximum)
  gemini_budget,   ///< Gemini 3: a fixed per-image token budget by media resolution
  unknown,         ///< not in the table: the largest finite per-image maximum of all families
};

/// A patch-model limit for one `detail` level.
struct PatchLimit {
  std::int64_t max_patches = 0;    ///< patch budget (32×32 px patches)
  std::int64_t max_dimension = 0;  ///< longest side in px before patching; 0 = no pixel limit
};

/// The media rules of one model family (constant data; see media_family_for).
struct MediaFamily {
  std::string_view name;  ///< the rule's name for diagnostics ("gpt-4o", "claude standard", ...)
  MediaFamilyKind kind = MediaFamilyKind::unknown;
  std::int64_t base_tokens = 0;        ///< openai_tiles: tokens of a `detail: low` image and base of high
  std::int64_t tile_tokens = 0;        ///< openai_tiles: tokens per 512×512 tile
  PatchLimit low;                      ///< openai_patches: `detail: low`
  PatchLimit high;                     ///< openai_patches: `detail: high`
  PatchLimit automatic;                ///< openai_patches: `detail: auto` / omitted
  PatchLimit original;                 ///< openai_patches: `detail: original`
  std::int64_t multiplier_milli = 1000;  ///< openai_patches: token multiplier × 1000 (1.62 → 1620)
  bool multiplier_documented = true;   ///< false: not in OpenAI's table, the largest documented one is used
  std::int64_t max_long_edge = 0;      ///< claude: the long edge images are resized to fit, px
  std::int64_t max_image_tokens = 0;   ///< claude: per-image cap; gemini_budget: the per-image budget
  bool area_formula = false;           ///< claude: also bound by the older ceil(w × h / 750)
  std::int64_t page_image_tokens = 0;  ///< documented tokens of one PDF page image; 0 = the image maximum
  std::int64_t tool_prompt_tokens = 0; ///< hidden system prompt added once when `tools` are present
};

/// The `detail` of an image part (OpenAI `image_url.detail`, Responses `input_image.detail`).
enum class ImageDetail : std::uint8_t { automatic, low, high, original };

/// "low" / "high" / "original" / "auto"; anything else (or absent) is `automatic`.
[[nodiscard]] ImageDetail parse_image_detail(std::string_view detail) noexcept;

/// The family of `model` (case-insensitive; anything up to the last '/' is ignored, and Claude names
/// are found inside Bedrock/Vertex ids like "us.anthropic.claude-sonnet-4-20250514-v1:0"). A table
/// name matches the model exactly or followed by a snapshot suffix: "@…", ":…", "-latest…",
/// "-v<digit>…" or "-" + at least 4 digits (a date); so "gpt-4o-2024-08-06" is gpt-4o but
/// "gpt-4o-mini" is not, and "claude-opus-4-7" is not "claude-opus-4". Models named nowhere in the
/// providers' tables get MediaFamilyKind::unknown — except unlisted Claude models, which get the
/// high-resolution Claude tier (newer Claude models are high-resolution), and "gpt-5.6…", the
/// GPT-5.6 family. Never fails.
[[nodiscard]] const MediaFamily& media_family_for(std::string_view model) noexcept;

/// The largest per-image bound of any family with a finite maximum (used for unknown models).
[[nodiscard]] std::int64_t largest_image_token_bound() noexcept;

/// An upper bound of one image's tokens on `family`, for an image of `size` (nullopt = dimensions
/// unknown: a URL, a file id, undecodable data) at `detail`. nullopt when the family has no finite
/// maximum and the size is unknown (Gemini 1.x/2.x tiling) — the caller then falls back to the
/// model's context limit.
[[nodiscard]] std::optional<std::int64_t> image_token_bound(const MediaFamily& family, std::optional<ImageSize> size,
                                                            ImageDetail detail) noexcept;

/// Text tokens assumed per PDF page: the upper end of Anthropic's documented 1,500–3,000 per page.
inline constexpr std::int64_t kPdfTextTokensPerPage = 3'000;

/// An upper bound of one PDF page's tokens on `family`: kPdfTextTokensPerPage + the family's page
/// image (its documented per-page figure, else its largest image; unknown families and Gemini
/// 1.x/2.x without a figure: largest_image_token_bound()).
[[nodiscard]] std::int64_t pdf_page_token_bound(const MediaFamily& family) noexcept;

/// Audio input tokens per second of audio, for every family: 32, Gemini's documented rate and the
/// largest documented one (OpenAI: user audio is 1 token per 100 ms = 10/s).
inline constexpr std::int64_t kAudioTokensPerSecond = 32;

/// Tokens charged per provider-defined tool (a `tools` entry whose `type` is neither absent,
/// "function" nor "custom", e.g. Anthropic computer/bash/text-editor tools): covers Anthropic's
/// documented computer-use definition (735) plus its system-prompt overhead (≤ 499).
inline constexpr std::int64_t kBuiltinToolTokens = 1'300;

}  // namespace tollgate::budget
