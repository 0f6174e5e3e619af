#pragma once
// Money units for the budget ledger and price table (DESIGN.md, "Money and units").
//
// Two integer units, no floating point on the money path:
//   * Nanos          — ledger money, int64 nano-dollars (1e-9 USD; range ±9.22e9 USD).
//   * PerTokenPrice  — a price per token, int64 pico-dollars (1e-12 USD) per token, so that
//                      list prices such as $0.0375 per million tokens (37,500 pico/token) are exact.
// Decimal dollar strings are accepted at the edges (config, price table, API) and converted once.
// Every conversion that cannot be exact rounds UP (towards charging more), so a budget can only be
// over-reserved, never under-reserved. Arithmetic saturates at kMaxNanos instead of wrapping.

#include <cstdint>
#include <expected>
#include <limits>
#include <string>
#include <string_view>

namespace tollgate::budget {

/// Ledger money in nano-dollars (1e-9 USD). Signed so that refunds/deltas can be expressed;
/// amounts produced by this module (parse_dollars, cost) are always >= 0.
using Nanos = std::int64_t;

/// Nano-dollars in one US dollar (1e9).
inline constexpr Nanos kNanosPerDollar = 1'000'000'000;

/// Pico-dollars in one US dollar (1e12).
inline constexpr std::int64_t kPicosPerDollar = 1'000'000'000'000;

/// Pico-dollars in one nano-dollar (1e3): a cost in picos converts to Nanos by ceil(picos / 1000).
inline constexpr std::int64_t kPicosPerNano = 1'000;

/// The saturation value of every Nanos computation here (INT64_MAX ≈ $9.22 billion).
/// A result equal to kMaxNanos means "at least this much" and will fail any budget check.
inline constexpr Nanos kMaxNanos = std::numeric_limits<Nanos>::max();

/// Price of one token in pico-dollars (1e-12 USD). Always >= 0 when produced by
/// parse_price_per_token. A value-initialised price is an explicit zero price: "unknown price"
/// is represented elsewhere (std::optional / PriceStatus in pricing.hpp), never by this type.
struct PerTokenPrice {
  /// Pico-dollars per token (1e-12 USD/token).
  std::int64_t picos = 0;

  friend bool operator==(const PerTokenPrice&, const PerTokenPrice&) = default;
};

/// Parses a non-negative decimal dollar amount into nano-dollars.
///
/// Accepted shapes: "100", "0.0005", ".5", "5.", "+1.25", "1e-3", "2.5E+2" (optional sign '+',
/// digits with optional '.', optional exponent e/E with optional sign). Surrounding ASCII
/// whitespace is ignored.
/// Rounding: digits finer than 1e-9 USD round UP to the next nano-dollar ("0.0000000001" → 1).
/// Errors (message in the unexpected value): empty/malformed input, a negative value ("-1",
/// also "-0"), a value above kMaxNanos (overflow; never saturates silently), or an absurd
/// exponent (|exp| > 400).
/// Examples: "0.0005" → 500'000; "100" → 100'000'000'000; "1e-3" → 1'000'000.
[[nodiscard]] std::expected<Nanos, std::string> parse_dollars(std::string_view decimal);

/// Parses a non-negative decimal price in dollars PER TOKEN into pico-dollars per token.
///
/// Same accepted shapes and errors as parse_dollars. Rounding: digits finer than 1e-12 USD per
/// token round UP to the next pico-dollar (so a price is never under-stated); no real provider
/// price is that fine. Examples: "0.0000025" ($2.50/M tokens) → 2'500'000 picos;
/// "3.75e-8" ($0.0375/M tokens) → 37'500 picos; "0" → 0 picos (an explicit zero price).
[[nodiscard]] std::expected<PerTokenPrice, std::string> parse_price_per_token(std::string_view decimal);

/// Formats nano-dollars as a plain decimal dollar string, without exponent, with trailing zeros
/// (and a trailing '.') trimmed: 1'234'567 → "0.001234567", 100'000'000'000 → "100",
/// 500'000 → "0.0005", 0 → "0", -1 → "-0.000000001". Exact for every int64 (including
/// INT64_MIN). The output is a valid JSON number and round-trips through parse_dollars for
/// values >= 0.
[[nodiscard]] std::string format_dollars(Nanos amount);

/// Formats a per-token price as a plain decimal dollar-per-token string, trailing zeros trimmed:
/// 2'500'000 picos → "0.0000025". Exact; round-trips through parse_price_per_token.
[[nodiscard]] std::string format_price_per_token(PerTokenPrice price);

/// Converts nano-dollars to floating-point dollars. FOR DISPLAY ONLY (logs, dashboards,
/// metrics gauges): never feed the result back into the ledger or a budget comparison.
[[nodiscard]] double to_dollars_for_display(Nanos amount) noexcept;

/// Cost of `tokens` tokens at `price`, in nano-dollars: ceil(tokens × picos / 1000), computed
/// with 128-bit intermediates. Rounds UP to the next nano-dollar; saturates at kMaxNanos on
/// overflow. Negative `tokens` or a negative price count as 0 (result 0).
/// Example: 1'000'000 tokens × 37'500 picos = 3.75e10 picos → 37'500'000 nanos ($0.0375).
[[nodiscard]] Nanos cost(std::int64_t tokens, PerTokenPrice price) noexcept;

/// a + b for non-negative amounts, saturating at kMaxNanos (negative inputs count as 0).
[[nodiscard]] Nanos saturating_add(Nanos a, Nanos b) noexcept;

}  // namespace tollgate::budget
