#include "budget/window.hpp"

#include <charconv>
#include <cstdio>

namespace tollgate::budget {
namespace {

using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_days;
using std::chrono::sys_seconds;

constexpr std::int64_t kMaxSeconds = 100LL * 366 * 86400;  // 100 years
constexpr std::int64_t kMaxDays = 100LL * 366;
constexpr std::int64_t kMaxMonths = 100LL * 12;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Day number (days since 1970-01-01) of Monday 1970-01-05: day windows are aligned to it so
// that "7d" starts on Mondays, like LiteLLM's weekly reset.
constexpr std::int64_t kMondayAnchorDay = 4;

}  // namespace

std::expected<BudgetPeriod, std::string> parse_budget_duration(std::string_view text) {
  const std::string_view s = trim(text);
  if (s.empty()) return std::unexpected(std::string("empty budget_duration"));
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  const std::string quoted = "'" + std::string(s) + "'";
  if (i == 0) return std::unexpected("budget_duration " + quoted + " must start with a count, e.g. \"30d\"");
  std::int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + i, n);
  if (ec != std::errc() || ptr != s.data() + i) {
    return std::unexpected("budget_duration " + quoted + " has a count that is too large");
  }
  if (n <= 0) return std::unexpected("budget_duration " + quoted + " must have a positive count");
  const std::string_view unit = s.substr(i);
  auto too_large = [&] { return std::unexpected("budget_duration " + quoted + " is longer than 100 years"); };
  auto secs = [&](std::int64_t mul) -> std::expected<BudgetPeriod, std::string> {
    if (n > kMaxSeconds / mul) return too_large();
    return BudgetPeriod{PeriodUnit::seconds, n * mul};
  };
  if (unit == "s") return secs(1);
  if (unit == "m") return secs(60);
  if (unit == "h") return secs(3600);
  if (unit == "d" || unit == "w") {
    const std::int64_t mul = unit == "w" ? 7 : 1;
    if (n > kMaxDays / mul) return too_large();
    if (n * mul == 30) return BudgetPeriod{PeriodUnit::months, 1};  // LiteLLM: 30d = monthly on the 1st
    return BudgetPeriod{PeriodUnit::days, n * mul};
  }
  if (unit == "mo") {
    if (n > kMaxMonths) return too_large();
    return BudgetPeriod{PeriodUnit::months, n};
  }
  return std::unexpected("budget_duration " + quoted + " has an unknown unit (use s, m, h, d, w or mo)");
}

std::string to_string(const BudgetPeriod& period) {
  switch (period.unit) {
    case PeriodUnit::seconds:
      if (period.count % 3600 == 0) return std::to_string(period.count / 3600) + "h";
      if (period.count % 60 == 0) return std::to_string(period.count / 60) + "m";
      return std::to_string(period.count) + "s";
    case PeriodUnit::days:
      return std::to_string(period.count) + "d";
    case PeriodUnit::months:
      return std::to_string(period.count) + "mo";
  }
  return "?";
}

std::string ResetTimezone::to_string() const {
  const auto total = utc_offset.count();
  if (total == 0) return "UTC";
  const auto a = total < 0 ? -total : total;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%c%02lld:%02lld", total < 0 ? '-' : '+', static_cast<long long>(a / 3600),
                static_cast<long long>((a % 3600) / 60));
  return buf;
}

std::expected<ResetTimezone, std::string> parse_reset_timezone(std::string_view text) {
  std::string_view s = trim(text);
  const std::string quoted = "'" + std::string(s) + "'";
  if (s == "UTC" || s == "Z" || s == "GMT" || s == "Etc/UTC" || s == "Etc/GMT" || s == "utc") {
    return ResetTimezone{};
  }
  if (s.starts_with("UTC") || s.starts_with("GMT")) s.remove_prefix(3);
  auto bad = [&] {
    return std::unexpected("reset timezone " + quoted +
                           " is not supported: use UTC or a fixed offset such as \"+05:30\" (IANA zone names "
                           "need tzdb support, which this build's C++ library (g++ 12) lacks)");
  };
  if (s.size() < 2 || (s[0] != '+' && s[0] != '-')) return bad();
  const int sign = s[0] == '-' ? -1 : 1;
  s.remove_prefix(1);
  auto two_digits = [](std::string_view d, int& out) {
    if (d.size() != 2 || d[0] < '0' || d[0] > '9' || d[1] < '0' || d[1] > '9') return false;
    out = (d[0] - '0') * 10 + (d[1] - '0');
    return true;
  };
  int hours = 0;
  int minutes = 0;
  if (s.size() == 2) {
    if (!two_digits(s, hours)) return bad();
  } else if (s.size() == 4) {
    if (!two_digits(s.substr(0, 2), hours) || !two_digits(s.substr(2, 2), minutes)) return bad();
  } else if (s.size() == 5 && s[2] == ':') {
    if (!two_digits(s.substr(0, 2), hours) || !two_digits(s.substr(3, 2), minutes)) return bad();
  } else {
    return bad();
  }
  if (minutes >= 60 || hours * 60 + minutes > 18 * 60) return bad();
  return ResetTimezone{seconds(sign * (hours * 3600 + minutes * 60))};
}

ResetTimezone reset_timezone_or_utc(std::string_view text, std::string* warning) {
  if (trim(text).empty()) return ResetTimezone{};
  auto tz = parse_reset_timezone(text);
  if (tz) return *tz;
  if (warning != nullptr) *warning = tz.error() + "; falling back to UTC";
  return ResetTimezone{};
}

Window window_of(const BudgetPeriod& period, SystemTime now, const ResetTimezone& tz) {
  const sys_seconds now_s = std::chrono::floor<seconds>(now);
  const std::int64_t t = now_s.time_since_epoch().count();
  const std::int64_t off = tz.utc_offset.count();
  const std::int64_t count = period.count < 1 ? 1 : period.count;
  auto at = [](std::int64_t unix_seconds) { return SystemTime(seconds(unix_seconds)); };
  switch (period.unit) {
    case PeriodUnit::seconds: {
      const std::int64_t start = floor_div(t, count) * count;
      return {at(start), at(start + count)};
    }
    case PeriodUnit::days: {
      const std::int64_t local_day = floor_div(t + off, 86400);
      const std::int64_t first_day = floor_div(local_day - kMondayAnchorDay, count) * count + kMondayAnchorDay;
      return {at(first_day * 86400 - off), at((first_day + count) * 86400 - off)};
    }
    case PeriodUnit::months: {
      const sys_days local_day{days(floor_div(t + off, 86400))};
      const std::chrono::year_month_day ymd{local_day};
      const std::int64_t month_index =
          (static_cast<std::int64_t>(static_cast<int>(ymd.year())) - 1970) * 12 +
          (static_cast<unsigned>(ymd.month()) - 1);
      const std::int64_t first = floor_div(month_index, count) * count;
      auto month_start = [&](std::int64_t index) {
        const std::int64_t y = 1970 + floor_div(index, 12);
        const unsigned m = static_cast<unsigned>(index - floor_div(index, 12) * 12) + 1;
        const sys_days d{std::chrono::year(static_cast<int>(y)) / std::chrono::month(m) / 1};
        return d.time_since_epoch().count() * 86400 - off;
      };
      return {at(month_start(first)), at(month_start(first + count))};
    }
  }
  return {now, now};
}

SystemTime window_start(const BudgetPeriod& period, SystemTime now, const ResetTimezone& tz) {
  return window_of(period, now, tz).start;
}

SystemTime next_reset(const BudgetPeriod& period, SystemTime now, const ResetTimezone& tz) {
  return window_of(period, now, tz).end;
}

}  // namespace tollgate::budget
