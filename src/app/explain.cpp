#include "app/explain.hpp"

#include <ctime>
#include <filesystem>
#include <iostream>

#include <boost/json.hpp>

#include "app/database.hpp"
#include "budget/money.hpp"
#include "config/loader.hpp"
#include "pipeline/trace.hpp"
#include "simulate/report.hpp"
#include "core/database_url.hpp"

namespace tollgate::app {

namespace json = boost::json;

namespace {

std::string utc_time(std::int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  const std::string frac = std::to_string(1000 + ms % 1000).substr(1);
  return std::string(buf) + "." + frac + "Z";
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

void print_row(const store::SpendLogRow& row) {
  std::cout << "request      " << row.request_id << "\n";
  std::cout << "time         " << utc_time(row.start_ms) << " (" << row.request_duration_ms << " ms)\n";
  std::string key = row.key_alias.empty() ? std::string() : row.key_alias;
  if (!row.api_key.empty()) key += (key.empty() ? "" : " ") + std::string("(key hash ") + row.api_key.substr(0, 12) + "...)";
  std::cout << "key          " << (key.empty() ? std::string("- (master key or no auth)") : key) << "\n";
  std::cout << "model        requested " << or_dash(row.requested_model);
  if (!row.model_id.empty())
    std::cout << "; served by " << row.model_group << " (deployment " << row.model_id << ", " << row.custom_llm_provider
              << "/" << row.model << ")";
  std::cout << "\n";
  std::cout << "status       " << row.status;
  if (!row.error_status.empty()) std::cout << " (HTTP " << row.error_status << ")";
  std::cout << "\n";
  std::cout << "spend        $" << budget::format_dollars(row.spend_nanos);
  if (!row.priced) std::cout << " (unpriced model: not metered)";
  if (row.unknown_outcome) std::cout << " (an outcome was unknown: its reservation was charged)";
  std::cout << "; tokens " << row.prompt_tokens << " prompt + " << row.completion_tokens << " completion\n";
  std::cout << "degradation  " << (row.degradation.empty() ? std::string("none") : row.degradation) << "\n";
}

}  // namespace

int explain_command(const ExplainOptions& opt) {
  auto loaded = config::load_config_file(opt.config_path, config::process_environment());
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors)
      std::cerr << "tollgate explain: config error: " << opt.config_path << ": " << e.to_string() << "\n";
    return 2;
  }
  const std::string url = core::redact_database_url(database_url(*loaded.config));  // for messages
  // Do not create an empty database where none is: that would only hide a wrong config.
  if (auto db = core::parse_database_url(url); db && db->kind == core::DatabaseUrl::Kind::sqlite &&
                                               db->target != ":memory:" && !std::filesystem::exists(db->target)) {
    std::cerr << "tollgate explain: the database " << url << " does not exist (general_settings.database_url / "
              << "tollgate_settings.data_dir of " << opt.config_path << ")\n";
    return 1;
  }
  auto opened = open_database(*loaded.config, {});
  if (!opened) {
    std::cerr << "tollgate explain: cannot open the database " << url << ": " << opened.error().message << "\n";
    return 1;
  }
  auto row = (*opened)->get_spend_log(opt.request_id);
  if (!row) {
    if (row.error().code == store::StoreErrorCode::not_found || row.error().code == store::StoreErrorCode::invalid) {
      std::cerr << "tollgate explain: no spend log row for request id " << opt.request_id << "\n";
      return 1;
    }
    std::cerr << "tollgate explain: cannot read the spend log: " << row.error().message << "\n";
    return 1;
  }
  boost::system::error_code ec;
  json::value decision = row->decision.empty() ? json::value() : json::parse(row->decision, ec);
  if (ec) decision = json::value();
  if (opt.json) {
    if (!decision.is_object()) {
      std::cerr << "tollgate explain: the spend log row of " << opt.request_id << " has no decision trace\n";
      return 1;
    }
    std::cout << simulate::pretty_json(decision);
    return 0;
  }
  print_row(*row);
  std::cout << "\ndecision\n";
  if (!decision.is_object()) {
    std::cout << "  (no decision trace recorded for this request)\n";
    return 0;
  }
  const std::string text = pipeline::explain_text(decision.as_object());
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::cout << "  " << text.substr(pos, nl - pos) << "\n";
    pos = nl + 1;
  }
  return 0;
}

}  // namespace tollgate::app
