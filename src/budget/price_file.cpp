#include "budget/price_file.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "budget/json_text.hpp"

namespace tollgate::budget {
namespace {

std::string_view content_start(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' || text.front() == '\r')) {
    text.remove_prefix(1);
  }
  return text;
}

/// The file's modification date in UTC, or "unknown".
std::string modification_date(const std::string& path) {
  std::error_code ec;
  const auto when = std::filesystem::last_write_time(path, ec);
  if (ec) return "unknown";
  const auto sys = std::chrono::file_clock::to_sys(when);
  const std::chrono::year_month_day day{std::chrono::floor<std::chrono::days>(sys)};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(day.year()), static_cast<unsigned>(day.month()),
                static_cast<unsigned>(day.day()));
  return buf;
}

}  // namespace

PriceFileFormat detect_price_file_format(std::string_view text) {
  const std::string_view body = content_start(text);
  if (!body.starts_with('{')) return PriceFileFormat::tollgate_yaml;
  auto doc = detail::parse_json_text(body);
  if (doc && doc->kind == detail::JsonText::Kind::object && doc->find("models") != nullptr) {
    return PriceFileFormat::tollgate_yaml;
  }
  return PriceFileFormat::litellm_json;
}

std::expected<PriceTable, std::string> parse_price_file(std::string_view text, const LitellmJsonOptions& options,
                                                        std::size_t* skipped) {
  if (skipped) *skipped = 0;
  if (detect_price_file_format(text) == PriceFileFormat::litellm_json) {
    return PriceTable::parse_litellm_json(content_start(text), options, skipped);
  }
  return PriceTable::parse(text);
}

std::expected<PriceTable, std::string> load_price_file(const std::string& path, std::size_t* skipped) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected("cannot read " + path + ": " + std::error_code(errno, std::generic_category()).message());
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::unexpected("cannot read " + path);
  LitellmJsonOptions options;
  options.as_of = modification_date(path);
  return parse_price_file(ss.str(), options, skipped);
}

std::expected<std::shared_ptr<const PriceTable>, std::string> load_effective_price_table(const config::Config& cfg) {
  const auto& ts = cfg.tollgate_settings;
  if (ts.price_file.empty()) {
    // The bundled table lives for the whole process: share it without owning it.
    return std::shared_ptr<const PriceTable>(std::shared_ptr<const PriceTable>{}, &PriceTable::bundled());
  }
  auto file = load_price_file(ts.price_file);
  if (!file) {
    std::string where = "tollgate_settings.price_file";
    if (ts.price_file_line > 0) where += " (line " + std::to_string(ts.price_file_line) + ")";
    return std::unexpected(where + ": " + ts.price_file + ": " + file.error());
  }
  return std::make_shared<const PriceTable>(PriceTable::merged(PriceTable::bundled(), *file));
}

std::vector<ResolvedPrice> resolve_deployment_prices(const config::Config& cfg) {
  auto table = load_effective_price_table(cfg);
  if (!table) throw std::runtime_error(table.error());
  std::vector<ResolvedPrice> out;
  out.reserve(cfg.model_list.size());
  for (const auto& d : cfg.model_list) out.push_back(resolve_deployment_price(d, **table));
  return out;
}

}  // namespace tollgate::budget
