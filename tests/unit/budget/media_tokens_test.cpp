#include "budget/media_tokens.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tollgate::budget {
namespace {

std::int64_t bound(std::string_view model, std::int64_t w, std::int64_t h, ImageDetail d = ImageDetail::automatic) {
  return image_token_bound(media_family_for(model), ImageSize{w, h}, d).value_or(-1);
}

std::int64_t unknown_size_bound(std::string_view model, ImageDetail d = ImageDetail::automatic) {
  return image_token_bound(media_family_for(model), std::nullopt, d).value_or(-1);
}

// ------------------------------------------------------------------ family resolution

TEST(MediaFamily, ResolvesNamesSnapshotsAndPrefixes) {
  EXPECT_EQ(media_family_for("gpt-4o").name, "gpt-4o");
  EXPECT_EQ(media_family_for("gpt-4o-2024-08-06").name, "gpt-4o");
  EXPECT_EQ(media_family_for("openai/gpt-4o").name, "gpt-4o");
  EXPECT_EQ(media_family_for("azure/GPT-4o").name, "gpt-4o");
  EXPECT_EQ(media_family_for("gpt-4o-mini-2024-07-18").name, "gpt-4o-mini");
  EXPECT_EQ(media_family_for("gpt-4.1-mini").name, "gpt-4.1-mini");
  EXPECT_EQ(media_family_for("gpt-4.1-2025-04-14").name, "gpt-4.1");
  EXPECT_EQ(media_family_for("gpt-4.5-preview-2025-02-27").name, "gpt-4.5-preview");
  EXPECT_EQ(media_family_for("o1-2024-12-17").name, "o1");
  EXPECT_EQ(media_family_for("o4-mini-2025-04-16").name, "o4-mini");
  EXPECT_EQ(media_family_for("gpt-5-2025-08-07").name, "gpt-5");
  EXPECT_EQ(media_family_for("gpt-5-chat-latest").name, "gpt-5-chat-latest");
  EXPECT_EQ(media_family_for("gpt-5-mini").name, "gpt-5-mini");
  EXPECT_EQ(media_family_for("gpt-5.4").name, "gpt-5.4");
  EXPECT_EQ(media_family_for("gpt-5.4-mini").name, "gpt-5.4-mini");
  EXPECT_EQ(media_family_for("gpt-5.6-pro").name, "gpt-5.6");
  EXPECT_EQ(media_family_for("computer-use-preview-2025-03-11").name, "computer-use-preview");
  // Not documented anywhere: unknown.
  for (std::string_view m : {"gpt-4o1", "o3-mini", "o3-pro", "gpt-5.1", "gpt-5-codex", "gpt-4o-audio-preview",
                             "llama-3.3-70b", "mistral-large", "", "gpt-5.60"}) {
    EXPECT_EQ(media_family_for(m).kind, MediaFamilyKind::unknown) << m;
  }
}

TEST(MediaFamily, ClaudeTiers) {
  for (std::string_view m : {"claude-3-5-sonnet-20241022", "claude-3-5-sonnet-latest", "claude-sonnet-4-20250514",
                             "anthropic/claude-3-7-sonnet", "claude-3-5-sonnet-v2@20241022",
                             "us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-opus-4-1-20250805",
                             "claude-haiku-4-5", "claude-sonnet-4-6"}) {
    EXPECT_EQ(media_family_for(m).name, "claude standard") << m;
  }
  // Unlisted Claude models (Opus 4.7 and later) get the high-resolution tier.
  for (std::string_view m : {"claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5", "claude-next"}) {
    EXPECT_EQ(media_family_for(m).name, "claude high-res") << m;
  }
}

TEST(MediaFamily, Gemini) {
  EXPECT_EQ(media_family_for("gemini-2.0-flash").kind, MediaFamilyKind::gemini_tiles);
  EXPECT_EQ(media_family_for("gemini/gemini-2.5-pro").kind, MediaFamilyKind::gemini_tiles);
  EXPECT_EQ(media_family_for("gemini-1.5-flash-002").kind, MediaFamilyKind::gemini_tiles);
  EXPECT_EQ(media_family_for("gemini-3-pro-preview").kind, MediaFamilyKind::gemini_budget);
  EXPECT_EQ(media_family_for("gemini-3.1-flash").kind, MediaFamilyKind::gemini_budget);
  EXPECT_EQ(media_family_for("gemini-4-ultra").kind, MediaFamilyKind::unknown);
}

TEST(ImageDetail, Parses) {
  EXPECT_EQ(parse_image_detail("low"), ImageDetail::low);
  EXPECT_EQ(parse_image_detail("high"), ImageDetail::high);
  EXPECT_EQ(parse_image_detail("original"), ImageDetail::original);
  EXPECT_EQ(parse_image_detail("auto"), ImageDetail::automatic);
  EXPECT_EQ(parse_image_detail("LOW"), ImageDetail::automatic);
  EXPECT_EQ(parse_image_detail(""), ImageDetail::automatic);
}

// ------------------------------------------------------------------ documented examples

TEST(ImageTokens, OpenAiTileExamples) {
  // https://developers.openai.com/api/docs/guides/images-vision#calculating-costs
  EXPECT_EQ(bound("gpt-4o", 1024, 1024, ImageDetail::high), 765);
  EXPECT_EQ(bound("gpt-4o", 2048, 4096, ImageDetail::high), 1105);
  EXPECT_EQ(bound("gpt-4o", 4096, 8192, ImageDetail::low), 85);
  EXPECT_EQ(bound("gpt-4o", 512, 512), 255);  // auto = high
  EXPECT_EQ(bound("gpt-4o", 128, 64), 255);   // never scaled up (measured: one tile)
  EXPECT_EQ(bound("gpt-4o-mini", 1024, 1024), 2'833 + 4 * 5'667);
  EXPECT_EQ(bound("gpt-4o-mini", 1024, 1024, ImageDetail::low), 2'833);
  EXPECT_EQ(bound("gpt-5", 1024, 1024), 70 + 4 * 140);
  EXPECT_EQ(bound("o1", 1024, 1024), 75 + 4 * 150);
  EXPECT_EQ(bound("computer-use-preview", 1024, 1024), 65 + 4 * 129);
  EXPECT_EQ(bound("gpt-4o", 1024, 1024, ImageDetail::original), 765);  // not a tile level: as high
  // Maxima (unknown size): 8 tiles.
  EXPECT_EQ(unknown_size_bound("gpt-4o"), 85 + 8 * 170);
  EXPECT_EQ(unknown_size_bound("gpt-4o-mini"), 2'833 + 8 * 5'667);
  EXPECT_EQ(unknown_size_bound("gpt-4o", ImageDetail::low), 85 + 8 * 170);  // conservative: max over details
}

TEST(ImageTokens, OpenAiPatchExamples) {
  // 1024 × 1024: 1,024 patches; 1800 × 2400: 1,452 patches after the budget resize (≤ 1,536).
  EXPECT_EQ(bound("gpt-4.1-mini", 1024, 1024), 1'659);  // ceil(1024 × 1.62)
  EXPECT_EQ(bound("gpt-4.1-nano", 1024, 1024), 2'520);  // ceil(1024 × 2.46)
  EXPECT_EQ(bound("o4-mini", 1024, 1024), 1'762);       // ceil(1024 × 1.72)
  EXPECT_GE(bound("gpt-4.1-mini", 1800, 2400), static_cast<std::int64_t>(std::ceil(1452 * 1.62)));
  EXPECT_EQ(bound("gpt-4.1-mini", 1800, 2400), 2'489);   // the 1,536-patch budget × 1.62, as billed
  EXPECT_EQ(bound("gpt-4.1-mini", 128, 64), 13);         // 4 × 2 patches × 1.62 (measured 13 + text)
  EXPECT_EQ(bound("gpt-4.1-mini", 1024, 1024, ImageDetail::low), 1'659);  // low is not cheaper
  EXPECT_EQ(unknown_size_bound("gpt-5-mini"), 2'489);
  // Undocumented multiplier → the largest documented one (2.46).
  EXPECT_EQ(bound("gpt-5.2", 1024, 1024), 2'520);
  // gpt-5.4: high 2,500 patches / 2048 px (auto = high), original 10,000 / 6000 px.
  EXPECT_EQ(bound("gpt-5.4", 4000, 4000), 6'150);                          // 2,500 × 2.46
  EXPECT_EQ(bound("gpt-5.4", 4000, 4000, ImageDetail::original), 24'600);  // 10,000 × 2.46
  EXPECT_EQ(bound("gpt-5.5", 4000, 4000), 24'600);                         // auto = original
  EXPECT_EQ(bound("gpt-5.5", 4000, 4000, ImageDetail::high), 6'150);
  // gpt-5.6 original keeps the size: only the 30,000-patch rejection limit bounds it.
  EXPECT_EQ(bound("gpt-5.6", 3200, 3200), 24'600);  // 100 × 100 patches × 2.46
  EXPECT_EQ(unknown_size_bound("gpt-5.6"), 73'800);
}

TEST(ImageTokens, ClaudeExamples) {
  // https://docs.anthropic.com/en/docs/build-with-claude/vision: ~54 / ~1334 / ~1590 tokens.
  EXPECT_EQ(bound("claude-sonnet-4", 200, 200), 64);  // 8 × 8 patches > 200² / 750
  EXPECT_EQ(bound("claude-sonnet-4", 1000, 1000), 1'334);
  EXPECT_EQ(bound("claude-sonnet-4", 1092, 1092), 1'590);
  EXPECT_EQ(bound("claude-sonnet-4", 8000, 8000), 1'600);
  EXPECT_EQ(unknown_size_bound("claude-3-5-sonnet"), 1'600);
  // High-resolution tier: 28-px patches, long edge 2576, at most 4,784.
  EXPECT_EQ(bound("claude-opus-4-7", 1000, 1000), 1'296);
  EXPECT_EQ(bound("claude-opus-4-7", 1928, 1928), 4'761);  // documented example
  EXPECT_EQ(bound("claude-opus-4-7", 8000, 8000), 4'784);
  EXPECT_EQ(unknown_size_bound("claude-opus-4-7"), 4'784);
}

TEST(ImageTokens, Gemini) {
  EXPECT_EQ(bound("gemini-2.0-flash", 384, 384), 258);
  EXPECT_EQ(bound("gemini-2.0-flash", 385, 300), 4 * 258);  // tile = 300/1.5 → clamped to 256: 2 × 2
  EXPECT_EQ(bound("gemini-2.5-pro", 1536, 1536), 4 * 258);
  EXPECT_EQ(bound("gemini-2.5-pro", 1000, 400), 4 * 2 * 258);  // tile 266 → 4 × 2 tiles
  EXPECT_EQ(image_token_bound(media_family_for("gemini-2.5-pro"), std::nullopt, ImageDetail::automatic), std::nullopt);
  EXPECT_EQ(bound("gemini-3-pro-preview", 16, 16), 2'240);
  EXPECT_EQ(unknown_size_bound("gemini-3-pro-preview"), 2'240);
}

TEST(ImageTokens, UnknownFamilyIsTheLargestMaximum) {
  EXPECT_EQ(largest_image_token_bound(), 73'800);
  EXPECT_EQ(bound("some-new-model", 1, 1), 73'800);
  EXPECT_EQ(unknown_size_bound("some-new-model"), 73'800);
}

TEST(PdfPageTokens, PerFamily) {
  EXPECT_EQ(pdf_page_token_bound(media_family_for("claude-sonnet-4")), 3'000 + 1'600);
  EXPECT_EQ(pdf_page_token_bound(media_family_for("claude-opus-4-7")), 3'000 + 4'784);
  EXPECT_EQ(pdf_page_token_bound(media_family_for("gpt-4o")), 3'000 + 1'445);
  EXPECT_EQ(pdf_page_token_bound(media_family_for("gemini-2.5-flash")), 3'000 + 258);
  EXPECT_EQ(pdf_page_token_bound(media_family_for("gemini-3-pro-preview")), 3'000 + 2'240);
  EXPECT_EQ(pdf_page_token_bound(media_family_for("mystery")), 3'000 + 73'800);
}

// ------------------------------------------------------------------ the bound is never below the docs

// The documented algorithms, evaluated the ways an implementation could round them.
enum class Round { none, floor, nearest, ceil };

double rounded(double x, Round r) {
  switch (r) {
    case Round::none: return x;
    case Round::floor: return std::floor(x);
    case Round::nearest: return std::round(x);
    case Round::ceil: return std::ceil(x - 1e-7);  // exact arithmetic: 1568.0000000002 is 1568
  }
  return x;
}

// ceil() of a ratio computed in floating point, as exact arithmetic would give it (56.0000000001 → 56).
double ceil_exact(double x) { return std::ceil(x - 1e-9); }

std::int64_t reference_tiles(double w, double h, Round r) {
  if (std::max(w, h) > 2048) {
    const double s = 2048 / std::max(w, h);
    w = rounded(w * s, r);
    h = rounded(h * s, r);
  }
  if (std::min(w, h) > 768) {
    const double s = 768 / std::min(w, h);
    w = rounded(w * s, r);
    h = rounded(h * s, r);
  }
  return static_cast<std::int64_t>(ceil_exact(w / 512) * ceil_exact(h / 512));
}

std::int64_t reference_patches(double w, double h, double budget, double max_dim, Round r) {
  if (max_dim > 0 && std::max(w, h) > max_dim) {
    const double s = max_dim / std::max(w, h);
    w = std::max(1.0, rounded(w * s, r));
    h = std::max(1.0, rounded(h * s, r));
  }
  const double raw = ceil_exact(w / 32) * ceil_exact(h / 32);
  if (raw <= budget) return static_cast<std::int64_t>(raw);
  const double shrink = std::sqrt(32.0 * 32.0 * budget / (w * h));
  const double adj = shrink * std::min(std::floor(w * shrink / 32) / (w * shrink / 32), std::floor(h * shrink / 32) / (h * shrink / 32));
  const double rw = std::max(1.0, rounded(w * adj, r == Round::none ? Round::floor : r));
  const double rh = std::max(1.0, rounded(h * adj, r == Round::none ? Round::floor : r));
  return std::min(static_cast<std::int64_t>(budget), static_cast<std::int64_t>(ceil_exact(rw / 32) * ceil_exact(rh / 32)));
}

// Claude: the largest aspect-preserving size with long edge ≤ L and patches ≤ T, then patches.
std::int64_t reference_claude(double w, double h, double long_edge, double cap, Round r) {
  auto patches_at = [&](double scale) {
    const double rw = std::max(1.0, rounded(w * scale, r));
    const double rh = std::max(1.0, rounded(h * scale, r));
    return ceil_exact(rw / 28) * ceil_exact(rh / 28);
  };
  double scale = std::min(1.0, long_edge / std::max(w, h));
  while (patches_at(scale) > cap) scale *= 0.999;
  return static_cast<std::int64_t>(patches_at(scale));
}

// Claude's earlier docs: tokens = w × h / 750 after the resize (long edge 1568, ~1,600 tokens).
std::int64_t reference_claude_area(double w, double h) {
  double scale = std::min(1.0, 1568 / std::max(w, h));
  while (w * scale * h * scale / 750 > 1600) scale *= 0.999;
  return static_cast<std::int64_t>(std::ceil(w * scale * h * scale / 750));
}

std::int64_t reference_gemini(double w, double h) {
  if (w <= 384 && h <= 384) return 258;
  const double api = std::ceil(w / 768) * std::ceil(h / 768) * 258;  // Gemini API docs
  const double tile = std::clamp(std::min(w, h) / 1.5, 256.0, 768.0);  // Vertex AI docs
  const double vertex = std::ceil(w / tile) * std::ceil(h / tile) * 258;
  return static_cast<std::int64_t>(std::max(api, vertex));
}

std::vector<std::int64_t> sweep_sizes() {
  return {1,    2,    27,   28,   29,   31,   32,   33,   100,  255,  256,  383,  384,  385,  511,  512,
          513,  767,  768,  769,  1000, 1023, 1024, 1025, 1092, 1200, 1535, 1536, 1537, 1567, 1568, 1569,
          1800, 2047, 2048, 2049, 2050, 2400, 2575, 2576, 2577, 3000, 3073, 4095, 4096, 4097, 6000, 8000};
}

TEST(ImageTokensProperty, NeverBelowTheDocumentedCount) {
  const auto sizes = sweep_sizes();
  int checked = 0;
  for (const std::int64_t w : sizes) {
    for (const std::int64_t h : sizes) {
      const double dw = static_cast<double>(w);
      const double dh = static_cast<double>(h);
      for (Round r : {Round::none, Round::floor, Round::nearest, Round::ceil}) {
        const std::int64_t tiles = reference_tiles(dw, dh, r);
        EXPECT_GE(bound("gpt-4o", w, h, ImageDetail::high), 85 + 170 * tiles) << w << "x" << h;
        EXPECT_GE(bound("gpt-4o-mini", w, h), 2'833 + 5'667 * tiles) << w << "x" << h;
        EXPECT_GE(bound("gpt-5", w, h), 70 + 140 * tiles) << w << "x" << h;
        EXPECT_GE(bound("o3", w, h), 75 + 150 * tiles) << w << "x" << h;
        EXPECT_GE(bound("computer-use-preview", w, h), 65 + 129 * tiles) << w << "x" << h;
        EXPECT_LE(bound("gpt-4o", w, h, ImageDetail::high), unknown_size_bound("gpt-4o"));

        const auto p1536 = static_cast<double>(reference_patches(dw, dh, 1536, 2048, r));
        EXPECT_GE(bound("gpt-4.1-mini", w, h), static_cast<std::int64_t>(ceil_exact(p1536 * 1.62))) << w << "x" << h;
        EXPECT_GE(bound("gpt-4.1-nano", w, h), static_cast<std::int64_t>(ceil_exact(p1536 * 2.46))) << w << "x" << h;
        EXPECT_GE(bound("o4-mini", w, h), static_cast<std::int64_t>(ceil_exact(p1536 * 1.72))) << w << "x" << h;
        const auto p2500 = static_cast<double>(reference_patches(dw, dh, 2500, 2048, r));
        const auto p10000 = static_cast<double>(reference_patches(dw, dh, 10000, 6000, r));
        EXPECT_GE(bound("gpt-5.4", w, h, ImageDetail::high), static_cast<std::int64_t>(ceil_exact(p2500 * 1.2)));
        EXPECT_GE(bound("gpt-5.5", w, h), static_cast<std::int64_t>(ceil_exact(p10000 * 1.2)));

        EXPECT_GE(bound("claude-sonnet-4", w, h), reference_claude(dw, dh, 1568, 1568, r)) << w << "x" << h;
        EXPECT_GE(bound("claude-opus-4-7", w, h), reference_claude(dw, dh, 2576, 4784, r)) << w << "x" << h;
        ++checked;
      }
      EXPECT_GE(bound("claude-3-5-sonnet", w, h), reference_claude_area(dw, dh)) << w << "x" << h;
      EXPECT_GE(bound("gemini-2.5-flash", w, h), reference_gemini(dw, dh)) << w << "x" << h;
      EXPECT_LE(bound("gpt-4o-mini", w, h), largest_image_token_bound());
    }
  }
  EXPECT_EQ(checked, static_cast<int>(sizes.size() * sizes.size() * 4));
}

}  // namespace
}  // namespace tollgate::budget
