#include "budget/media_tokens.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace tollgate::budget {
namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

constexpr std::int64_t sat_add(std::int64_t a, std::int64_t b) { return a > kInt64Max - b ? kInt64Max : a + b; }
constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kInt64Max / b ? kInt64Max : a * b;
}
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// ---------------------------------------------------------------- the family table
//
// OpenAI: https://developers.openai.com/api/docs/guides/images-vision ("Model sizing behavior",
// "Calculating costs"). Anthropic: https://docs.anthropic.com/en/docs/build-with-claude/vision and
// https://platform.claude.com/docs/en/build-with-claude/vision. Gemini:
// https://ai.google.dev/gemini-api/docs/tokens, https://ai.google.dev/gemini-api/docs/media-resolution.
// Anthropic tool prompt: https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/overview#pricing.

// Claude's hidden tool-use system prompt: at most 530 tokens (Claude 3 Opus, tool_choice auto);
// also applied to Gemini and unknown families, which document nothing.
constexpr std::int64_t kToolPrompt = 530;

// OpenAI's largest documented patch multiplier (gpt-5-nano, gpt-4.1-nano, gpt-5.4-nano: 2.46),
// used for patch models the multiplier table does not list.
constexpr std::int64_t kLargestDocumentedMultiplier = 2'460;

constexpr MediaFamily tiles(std::string_view name, std::int64_t base, std::int64_t tile) {
  MediaFamily f;
  f.name = name;
  f.kind = MediaFamilyKind::openai_tiles;
  f.base_tokens = base;
  f.tile_tokens = tile;
  return f;
}

constexpr MediaFamily patches(std::string_view name, PatchLimit low, PatchLimit high, PatchLimit automatic,
                              PatchLimit original, std::int64_t multiplier_milli) {
  MediaFamily f;
  f.name = name;
  f.kind = MediaFamilyKind::openai_patches;
  f.low = low;
  f.high = high;
  f.automatic = automatic;
  f.original = original;
  f.multiplier_documented = multiplier_milli > 0;
  f.multiplier_milli = multiplier_milli > 0 ? multiplier_milli : kLargestDocumentedMultiplier;
  return f;
}

// The 1,536-patch models: `high` allows 1,536 patches or a 2048-px longest side. `low` is listed
// but its sizing is not documented ("low is not always fewer tokens than high"): treated as high.
constexpr PatchLimit kPatch1536{1'536, 2'048};
constexpr MediaFamily patches1536(std::string_view name, std::int64_t multiplier_milli) {
  return patches(name, kPatch1536, kPatch1536, kPatch1536, kPatch1536, multiplier_milli);
}

constexpr MediaFamily claude(std::string_view name, std::int64_t long_edge, std::int64_t cap, bool area) {
  MediaFamily f;
  f.name = name;
  f.kind = MediaFamilyKind::claude;
  f.max_long_edge = long_edge;
  f.max_image_tokens = cap;
  f.area_formula = area;
  f.tool_prompt_tokens = kToolPrompt;
  return f;
}

// Claude models released before the high-resolution tier (Opus 4.7): long edge 1568 px, 1568
// visual tokens (current docs) / "~1,600 tokens" and w×h/750 (earlier docs) → capped at 1,600.
constexpr MediaFamily kClaudeStandard = claude("claude standard", 1'568, 1'600, true);
// High-resolution Claude models (Opus 4.7 and later): long edge 2576 px, at most 4,784 visual tokens.
constexpr MediaFamily kClaudeHighRes = claude("claude high-res", 2'576, 4'784, false);

constexpr MediaFamily gemini_tiles() {
  MediaFamily f;
  f.name = "gemini 1.x/2.x";
  f.kind = MediaFamilyKind::gemini_tiles;
  f.page_image_tokens = 258;  // "each document page is equivalent to 258 tokens"
  f.tool_prompt_tokens = kToolPrompt;
  return f;
}
constexpr MediaFamily kGeminiTiles = gemini_tiles();

constexpr MediaFamily gemini_budget() {
  // media_resolution levels for images: low 280, medium 560, high 1,120 (default), ultra high 2,240.
  MediaFamily f;
  f.name = "gemini 3";
  f.kind = MediaFamilyKind::gemini_budget;
  f.max_image_tokens = 2'240;
  f.page_image_tokens = 2'240;
  f.tool_prompt_tokens = kToolPrompt;
  return f;
}
constexpr MediaFamily kGeminiBudget = gemini_budget();

constexpr MediaFamily unknown_family() {
  MediaFamily f;
  f.name = "unknown";
  f.kind = MediaFamilyKind::unknown;
  f.tool_prompt_tokens = kToolPrompt;
  return f;
}
constexpr MediaFamily kUnknown = unknown_family();

// gpt-5.6 family: `original`/`auto` keep the input size (no patch budget, no pixel limit); the API
// rejects images over 30,000 patches. `low`/`high` limits are "finite" but unpublished: 30,000 too.
constexpr PatchLimit kPatch30000{30'000, 0};
constexpr MediaFamily kGpt56 = patches("gpt-5.6", kPatch30000, kPatch30000, kPatch30000, kPatch30000, 0);

constexpr PatchLimit kPatch2500{2'500, 2'048};
constexpr PatchLimit kPatch10000{10'000, 6'000};

// Exact names (plus snapshot suffixes). Multiplier 0 = not in OpenAI's multiplier table.
constexpr std::array kOpenAi = {
    tiles("gpt-5", 70, 140),
    tiles("gpt-5-chat-latest", 70, 140),
    tiles("gpt-4o", 85, 170),
    tiles("gpt-4.1", 85, 170),
    tiles("gpt-4.5", 85, 170),
    tiles("gpt-4.5-preview", 85, 170),
    tiles("gpt-4-turbo", 85, 170),  // the earlier guide's GPT-4 Turbo with vision: 85 + 170 × tiles
    tiles("gpt-4o-mini", 2'833, 5'667),
    tiles("o1", 75, 150),
    tiles("o1-pro", 75, 150),
    tiles("o3", 75, 150),
    tiles("computer-use-preview", 65, 129),
    patches1536("gpt-5.4-mini", 1'620),
    patches1536("gpt-5.4-nano", 2'460),
    patches1536("gpt-5-mini", 1'620),
    patches1536("gpt-5-nano", 2'460),
    patches1536("gpt-4.1-mini", 1'620),
    patches1536("gpt-4.1-nano", 2'460),
    patches1536("o4-mini", 1'720),
    patches1536("gpt-5.2", 0),
    patches1536("gpt-5.2-chat-latest", 0),
    patches1536("gpt-5.2-codex", 0),
    patches1536("gpt-5.3-codex", 0),
    patches1536("gpt-5-codex-mini", 0),
    patches1536("gpt-5.1-codex-mini", 0),
    // gpt-5.4: auto = high; gpt-5.5: auto = original.
    patches("gpt-5.4", kPatch2500, kPatch2500, kPatch2500, kPatch10000, 0),
    patches("gpt-5.5", kPatch2500, kPatch2500, kPatch10000, kPatch10000, 0),
};

// Claude models of the standard tier (names as in the Messages API, snapshot suffixes allowed).
constexpr std::array<std::string_view, 14> kClaudeStandardNames = {
    "claude-3-haiku",    "claude-3-sonnet",   "claude-3-opus",    "claude-3-5-sonnet", "claude-3-5-haiku",
    "claude-3-7-sonnet", "claude-sonnet-4",   "claude-opus-4",    "claude-opus-4-1",   "claude-sonnet-4-5",
    "claude-haiku-4-5",  "claude-opus-4-5",   "claude-opus-4-6",  "claude-sonnet-4-6",
};

// ---------------------------------------------------------------- maxima

constexpr std::int64_t patch_tokens(std::int64_t patch_count, std::int64_t multiplier_milli) {
  return ceil_div(sat_mul(patch_count, multiplier_milli), 1000);
}

constexpr std::optional<std::int64_t> family_max(const MediaFamily& f) {
  switch (f.kind) {
    case MediaFamilyKind::openai_tiles:
      // Fit in 2048², short side ≤ 768 → at most 2 × 4 tiles of 512 px.
      return f.base_tokens + 8 * f.tile_tokens;
    case MediaFamilyKind::openai_patches: {
      std::int64_t m = 0;
      for (const PatchLimit& l : {f.low, f.high, f.automatic, f.original}) {
        m = std::max(m, patch_tokens(l.max_patches, f.multiplier_milli));
      }
      return m;
    }
    case MediaFamilyKind::claude:
    case MediaFamilyKind::gemini_budget:
      return f.max_image_tokens;
    case MediaFamilyKind::gemini_tiles:
    case MediaFamilyKind::unknown:
      return std::nullopt;
  }
  return std::nullopt;
}

constexpr std::int64_t compute_largest() {
  std::int64_t m = 0;
  for (const auto& f : kOpenAi) m = std::max(m, family_max(f).value_or(0));
  for (const auto* f : {&kGpt56, &kClaudeStandard, &kClaudeHighRes, &kGeminiBudget}) m = std::max(m, family_max(*f).value_or(0));
  return m;
}
constexpr std::int64_t kLargestImage = compute_largest();
static_assert(kLargestImage == 73'800, "gpt-5.6: 30,000 patches × 2.46");

// ---------------------------------------------------------------- name matching

constexpr char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// `rest` is what follows a table name in the model: a snapshot / deployment decoration or nothing.
bool is_snapshot_suffix(std::string_view rest) {
  if (rest.empty()) return true;
  if (rest[0] == '@' || rest[0] == ':') return true;
  if (rest[0] != '-') return false;
  rest.remove_prefix(1);
  if (rest.starts_with("latest")) return true;
  if (rest.size() >= 2 && rest[0] == 'v' && is_digit(rest[1])) return true;
  std::size_t digits = 0;
  while (digits < rest.size() && is_digit(rest[digits])) ++digits;
  return digits >= 4;
}

bool matches(std::string_view model, std::string_view name) {
  return model.starts_with(name) && is_snapshot_suffix(model.substr(name.size()));
}

}  // namespace

ImageDetail parse_image_detail(std::string_view detail) noexcept {
  if (detail == "low") return ImageDetail::low;
  if (detail == "high") return ImageDetail::high;
  if (detail == "original") return ImageDetail::original;
  return ImageDetail::automatic;
}

const MediaFamily& media_family_for(std::string_view model) noexcept {
  std::array<char, 160> buf{};
  if (model.size() > buf.size()) return kUnknown;
  for (std::size_t i = 0; i < model.size(); ++i) buf[i] = lower(model[i]);
  std::string_view m(buf.data(), model.size());
  if (const auto slash = m.rfind('/'); slash != std::string_view::npos) m.remove_prefix(slash + 1);

  if (const auto at = m.find("claude"); at != std::string_view::npos) {
    const std::string_view c = m.substr(at);
    for (std::string_view name : kClaudeStandardNames) {
      if (matches(c, name)) return kClaudeStandard;
    }
    return kClaudeHighRes;
  }
  if (const auto at = m.find("gemini-"); at != std::string_view::npos) {
    const std::string_view g = m.substr(at);
    if (g.starts_with("gemini-1.") || g.starts_with("gemini-2.")) return kGeminiTiles;
    if (g.starts_with("gemini-3") && (g.size() == 8 || !is_digit(g[8]))) return kGeminiBudget;
    return kUnknown;
  }
  for (const MediaFamily& f : kOpenAi) {
    if (matches(m, f.name)) return f;
  }
  if (m.starts_with("gpt-5.6") && (m.size() == 7 || !is_digit(m[7]))) return kGpt56;
  return kUnknown;
}

std::int64_t largest_image_token_bound() noexcept { return kLargestImage; }

namespace {

// Scales (w, h) down, preserving the aspect ratio, so the longest side is at most `limit`; the
// other side is rounded UP (any real resizer rounds to that pixel or below).
void fit_long_edge(std::int64_t& w, std::int64_t& h, std::int64_t limit) {
  const std::int64_t longest = std::max(w, h);
  if (limit <= 0 || longest <= limit) return;
  if (w >= h) {
    h = std::max<std::int64_t>(1, ceil_div(h * limit, w));
    w = limit;
  } else {
    w = std::max<std::int64_t>(1, ceil_div(w * limit, h));
    h = limit;
  }
}

std::int64_t openai_tiles_bound(const MediaFamily& f, ImageSize s, ImageDetail detail) {
  if (detail == ImageDetail::low) return f.base_tokens;
  // high / auto (= high) / original (not a tile-model level: treated as high).
  // The formula is symmetric, so work on (long, short).
  const std::int64_t long_side = std::max(s.width, s.height);
  const std::int64_t short_side = std::min(s.width, s.height);
  // Step 1: fit in a 2048 × 2048 square. The short side's rounding is not documented and feeds
  // step 2's divisor, so both roundings are tried (an unrounded one lies between them).
  std::int64_t l1 = long_side;
  std::int64_t s1_low = short_side;
  std::int64_t s1_high = short_side;
  if (long_side > 2'048) {
    l1 = 2'048;
    s1_low = std::max<std::int64_t>(1, short_side * 2'048 / long_side);
    s1_high = std::max<std::int64_t>(1, ceil_div(short_side * 2'048, long_side));
  }
  std::int64_t tiles = 0;
  for (const std::int64_t s1 : {s1_low, s1_high}) {
    // Step 2: the shortest side scaled (down only) to 768 px; the long side rounded up.
    std::int64_t l2 = l1;
    std::int64_t s2 = s1;
    if (s1 > 768) {
      l2 = ceil_div(l1 * 768, s1);
      s2 = 768;
    }
    tiles = std::max(tiles, ceil_div(l2, 512) * ceil_div(s2, 512));
  }
  return sat_add(f.base_tokens, sat_mul(tiles, f.tile_tokens));
}

const PatchLimit& patch_limit(const MediaFamily& f, ImageDetail detail) {
  switch (detail) {
    case ImageDetail::low: return f.low;
    case ImageDetail::high: return f.high;
    case ImageDetail::original: return f.original.max_patches > 0 ? f.original : f.high;
    case ImageDetail::automatic: return f.automatic;
  }
  return f.automatic;
}

std::int64_t openai_patches_bound(const MediaFamily& f, ImageSize s, ImageDetail detail) {
  const PatchLimit& limit = patch_limit(f, detail);
  std::int64_t w = s.width;
  std::int64_t h = s.height;
  fit_long_edge(w, h, limit.max_dimension);
  // Patches covering the (dimension-limited) image; a resize to the patch budget lands at or below
  // the budget, so min(count, budget) bounds steps A–C of the documented algorithm.
  const std::int64_t count = std::min(sat_mul(ceil_div(w, 32), ceil_div(h, 32)), limit.max_patches);
  return patch_tokens(count, f.multiplier_milli);
}

std::int64_t claude_bound(const MediaFamily& f, ImageSize s) {
  std::int64_t w = s.width;
  std::int64_t h = s.height;
  fit_long_edge(w, h, f.max_long_edge);
  // Visual tokens = ceil(w/28) × ceil(h/28); resizing to the token budget only lowers it.
  std::int64_t t = ceil_div(w, 28) * ceil_div(h, 28);
  if (f.area_formula) t = std::max(t, ceil_div(w * h, 750));
  return std::min(t, f.max_image_tokens);
}

std::int64_t gemini_tiles_bound(ImageSize s) {
  if (s.width <= 384 && s.height <= 384) return 258;
  // Vertex AI's description: tiles of (shortest side / 1.5), clamped to [256, 768], each resized to
  // 768² and 258 tokens. Rounding the tile side down gives at least as many tiles as any rounding,
  // and at least as many as the Gemini API's plain 768-px tiling.
  const std::int64_t tile = std::clamp<std::int64_t>(std::min(s.width, s.height) * 2 / 3, 256, 768);
  return sat_mul(sat_mul(ceil_div(s.width, tile), ceil_div(s.height, tile)), 258);
}

}  // namespace

std::optional<std::int64_t> image_token_bound(const MediaFamily& family, std::optional<ImageSize> size,
                                              ImageDetail detail) noexcept {
  if (family.kind == MediaFamilyKind::unknown) return kLargestImage;
  if (!size || size->width <= 0 || size->height <= 0) return family_max(family);
  switch (family.kind) {
    case MediaFamilyKind::openai_tiles: return openai_tiles_bound(family, *size, detail);
    case MediaFamilyKind::openai_patches: return openai_patches_bound(family, *size, detail);
    case MediaFamilyKind::claude: return claude_bound(family, *size);
    case MediaFamilyKind::gemini_tiles: return gemini_tiles_bound(*size);
    case MediaFamilyKind::gemini_budget: return family.max_image_tokens;
    case MediaFamilyKind::unknown: break;
  }
  return kLargestImage;
}

std::int64_t pdf_page_token_bound(const MediaFamily& family) noexcept {
  std::int64_t image = family.page_image_tokens;
  if (image <= 0) image = family_max(family).value_or(kLargestImage);
  return sat_add(kPdfTextTokensPerPage, image);
}

}  // namespace tollgate::budget
