#include "telemetry/trace_context.hpp"

#include "core/ids.hpp"

namespace tollgate::telemetry {
namespace {

bool lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool all_zero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

std::string random_hex(int digits) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<std::size_t>(digits));
  do {
    out.clear();
    while (static_cast<int>(out.size()) < digits) {
      auto v = core::thread_rng()();
      for (int i = 0; i < 16 && static_cast<int>(out.size()) < digits; ++i, v >>= 4) out.push_back(hex[v & 0xf]);
    }
  } while (all_zero(out));
  return out;
}

}  // namespace

std::optional<TraceContext> parse_traceparent(std::string_view v) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.size() < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  const auto version = v.substr(0, 2), trace = v.substr(3, 32), span = v.substr(36, 16), flags = v.substr(53, 2);
  if (!lower_hex(version) || version == "ff" || !lower_hex(trace) || !lower_hex(span) || !lower_hex(flags))
    return std::nullopt;
  if (version == "00" && v.size() != 55) return std::nullopt;
  if (version != "00" && v.size() > 55 && v[55] != '-') return std::nullopt;
  if (all_zero(trace) || all_zero(span)) return std::nullopt;
  TraceContext c;
  c.trace_id = std::string(trace);
  c.span_id = std::string(span);
  const int f = std::stoi(std::string(flags), nullptr, 16);
  c.sampled = (f & 1) != 0;
  return c;
}

bool valid_tracestate(std::string_view v) {
  if (v.empty() || v.size() > 512) return false;
  int members = 1;
  for (char c : v) {
    if (c < 0x20 || c > 0x7e) return false;
    if (c == ',') ++members;
  }
  if (members > 32) return false;
  // Each non-empty member has a key and a value.
  for (std::size_t start = 0; start <= v.size();) {
    const auto comma = v.find(',', start);
    auto m = v.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!m.empty() && (m.front() == ' ' || m.front() == '\t')) m.remove_prefix(1);
    while (!m.empty() && (m.back() == ' ' || m.back() == '\t')) m.remove_suffix(1);
    if (!m.empty()) {
      const auto eq = m.find('=');
      if (eq == 0 || eq == std::string_view::npos || eq + 1 == m.size()) return false;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return true;
}

std::string format_traceparent(const std::string& trace_id, const std::string& span_id, bool sampled) {
  return "00-" + trace_id + "-" + span_id + (sampled ? "-01" : "-00");
}

std::string new_trace_id() { return random_hex(32); }

std::string new_span_id() { return random_hex(16); }

}  // namespace tollgate::telemetry
