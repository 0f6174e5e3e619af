#pragma once
/// Budget windows: LiteLLM `budget_duration` strings ("30s", "1h", "1d", "7d", "30d", "1mo"),
/// the reset timezone, and the pure functions that place an instant in its window
/// (docs/budgets.md, "Windows and resets"). No I/O, no hidden clock: every function takes the
/// instant it works on.

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace tollgate::budget {

/// Wall-clock instants used by budget windows (std::chrono::system_clock, Unix epoch, UTC).
using SystemTime = std::chrono::system_clock::time_point;

/// Source of wall-clock time for budgets; injectable so tests use a manual clock (no sleeps).
/// Thread safety: now() may be called from any thread concurrently.
class WallClock {
 public:
  virtual ~WallClock() = default;
  /// The current instant.
  [[nodiscard]] virtual SystemTime now() const = 0;
};

/// std::chrono::system_clock. Thread-safe.
class SystemWallClock final : public WallClock {
 public:
  [[nodiscard]] SystemTime now() const override { return std::chrono::system_clock::now(); }
  /// A process-wide instance.
  static const SystemWallClock& instance() {
    static const SystemWallClock clock;
    return clock;
  }
};

/// A wall clock that moves only when told to (tests). Not thread-safe against concurrent
/// set()/advance(); now() is safe to call while nothing moves it.
class ManualWallClock final : public WallClock {
 public:
  /// Starts at `start`.
  explicit ManualWallClock(SystemTime start) : now_(start) {}
  [[nodiscard]] SystemTime now() const override { return now_; }
  /// Moves the clock forward (or backward with a negative duration).
  void advance(std::chrono::nanoseconds d) { now_ += std::chrono::duration_cast<SystemTime::duration>(d); }
  /// Jumps to `t`.
  void set(SystemTime t) { now_ = t; }

 private:
  SystemTime now_;
};

/// The unit of a budget period.
enum class PeriodUnit {
  seconds,  ///< fixed length; "s", "m" (minutes) and "h" parse to this unit, count in seconds
  days,     ///< N local days ("d", "w" = 7 days); aligned to local midnight (see window_start)
  months,   ///< N calendar months ("mo"; also "30d" for LiteLLM compatibility)
};

/// A parsed `budget_duration`: a unit and a positive count. Value type; comparable.
struct BudgetPeriod {
  PeriodUnit unit = PeriodUnit::days;
  /// Seconds for PeriodUnit::seconds, days for PeriodUnit::days, months for PeriodUnit::months.
  /// Always >= 1.
  std::int64_t count = 1;

  friend bool operator==(const BudgetPeriod&, const BudgetPeriod&) = default;
};

/// Parses a LiteLLM budget_duration string.
///
/// Grammar: `<digits><unit>` with unit one of `s` (seconds), `m` (minutes), `h` (hours),
/// `d` (days), `w` (weeks = 7 days), `mo` (calendar months); surrounding ASCII whitespace is
/// ignored, units are case-sensitive (LiteLLM's are lower case).
/// LiteLLM compatibility: "30d" means "monthly, on the 1st" in LiteLLM's reset logic, so it parses
/// to {months, 1}, identical to "1mo". Any other day count stays a day period.
/// Errors (message in the unexpected value): empty text, missing or zero count, unknown unit,
/// count too large (more than 100 years' worth).
/// Examples: "30s" → {seconds, 30}; "10m" → {seconds, 600}; "1h" → {seconds, 3600};
/// "7d" → {days, 7}; "1mo" → {months, 1}.
[[nodiscard]] std::expected<BudgetPeriod, std::string> parse_budget_duration(std::string_view text);

/// The canonical text of a period: seconds periods print in the largest exact unit among
/// h/m/s ("1h", "10m", "45s"), days as "Nd", months as "Nmo". parse_budget_duration(to_string(p))
/// == p for every period except {days, 30}, which cannot be produced by the parser.
[[nodiscard]] std::string to_string(const BudgetPeriod& period);

/// The timezone in which day and month windows reset: a fixed offset east of UTC.
///
/// Why a fixed offset: g++ 12's libstdc++ has no std::chrono tzdb (`locate_zone` arrived in
/// GCC 13/14), so IANA zone names with daylight-saving rules are not supported yet; a name other
/// than UTC is an error from parse_reset_timezone and the config layer falls back to UTC with a
/// warning (reset_timezone_or_utc). Value type; comparable.
struct ResetTimezone {
  /// Offset east of UTC, within ±18 h. Local time = UTC + utc_offset.
  std::chrono::seconds utc_offset{0};

  /// Canonical text: "UTC" for a zero offset, else "+05:30" / "-08:00".
  [[nodiscard]] std::string to_string() const;

  friend bool operator==(const ResetTimezone&, const ResetTimezone&) = default;
};

/// Parses a reset timezone.
///
/// Accepted: "UTC", "Z", "GMT", "Etc/UTC", "Etc/GMT" (zero offset); a fixed offset "+05:30",
/// "-08:00", "+0530", "+05", optionally prefixed by "UTC" or "GMT" ("UTC+05:30"). The offset
/// must be within ±18:00 and minutes below 60.
/// Errors: anything else, including IANA names such as "Asia/Kolkata" (the message says that
/// IANA names need tzdb support, which g++ 12 lacks, and suggests the fixed offset).
[[nodiscard]] std::expected<ResetTimezone, std::string> parse_reset_timezone(std::string_view text);

/// parse_reset_timezone, falling back to UTC on error; the error text, if any, is stored in
/// `*warning` (when non-null) so the caller can log it. An empty `text` is UTC without warning.
[[nodiscard]] ResetTimezone reset_timezone_or_utc(std::string_view text, std::string* warning);

/// The half-open window [start, end) of a period that contains `now`.
struct Window {
  SystemTime start;  ///< first instant of the window (inclusive)
  SystemTime end;    ///< first instant of the next window (exclusive); the next reset
};

/// The window of `period` containing `now`, in `tz`. Pure and thread-safe.
///
/// Semantics (docs/budgets.md):
/// - seconds periods ("30s", "10m", "1h"): fixed-length windows aligned to the Unix epoch in UTC;
///   `tz` is ignored (a "1h" window with a +05:30 offset starts at :00 UTC, i.e. :30 local).
/// - day periods ("Nd"): windows of N local days starting at local midnight in `tz`; windows are
///   aligned to Monday 1970-01-05 (local), so "1d" resets every local midnight and "7d" every
///   Monday at local midnight (as LiteLLM does).
/// - month periods ("Nmo", "30d"): start at local midnight on the 1st of a month in `tz`; for
///   N > 1 months are grouped from January 1970 (so "3mo" starts Jan/Apr/Jul/Oct 1st).
/// Sub-second parts of `now` are kept for containment; window bounds are whole seconds.
[[nodiscard]] Window window_of(const BudgetPeriod& period, SystemTime now, const ResetTimezone& tz);

/// window_of(period, now, tz).start: the instant the window containing `now` began.
[[nodiscard]] SystemTime window_start(const BudgetPeriod& period, SystemTime now, const ResetTimezone& tz);

/// window_of(period, now, tz).end: the next reset after `now` (strictly greater than `now`).
[[nodiscard]] SystemTime next_reset(const BudgetPeriod& period, SystemTime now, const ResetTimezone& tz);

}  // namespace tollgate::budget
