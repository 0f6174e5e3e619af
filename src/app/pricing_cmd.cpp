#include "app/pricing_cmd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include "budget/money.hpp"
#include "budget/price_file.hpp"
#include "budget/pricing.hpp"
#include "config/loader.hpp"

namespace tollgate::app {

namespace {

std::string dollars(budget::PerTokenPrice p) { return "$" + budget::format_price_per_token(p); }

/// One line describing every price of a resolved deployment ("input $0.0000025/token, ...").
std::string describe(const budget::ModelPrice& p) {
  std::string out = "input " + dollars(p.input) + "/token, output " + dollars(p.output) + "/token";
  const auto opt = [&](const char* what, const std::optional<budget::PerTokenPrice>& v, const char* unit = "/token") {
    if (v) out += std::string(", ") + what + " " + dollars(*v) + unit;
  };
  opt("cached input", p.cached_input);
  opt("cache write", p.cache_write);
  opt("cache write 1h", p.cache_write_1h);
  opt("reasoning", p.reasoning);
  opt("audio input", p.audio_input);
  opt("audio output", p.audio_output);
  opt("image output", p.image_output);
  opt("web search", p.web_search_call, "/call");
  if (const auto& t = p.long_prompt_tier) {
    out += ", above " + std::to_string(t->above_input_tokens) + " prompt tokens: input " + dollars(t->input) +
           "/token, output " + dollars(t->output) + "/token";
  }
  if (const auto& s = p.priority) out += ", priority: input " + dollars(s->input) + ", output " + dollars(s->output);
  if (const auto& s = p.flex) out += ", flex: input " + dollars(s->input) + ", output " + dollars(s->output);
  return out;
}

std::string today_utc() {
  const std::chrono::year_month_day day{std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now())};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", static_cast<int>(day.year()), static_cast<unsigned>(day.month()),
                static_cast<unsigned>(day.day()));
  return buf;
}

bool is_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9')) return false;
  }
  return true;
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

/// Writes `text` to `path` atomically: a temporary file beside it, fsync, then rename over it, so
/// a reader sees the old file or the whole new one, never a part. The temporary is removed on
/// failure. Returns an error message, empty on success.
std::string write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + tmp + ": " + errno_text(errno);
  std::string error;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = "cannot write " + tmp + ": " + errno_text(errno);
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (error.empty() && ::fsync(fd) != 0) error = "cannot write " + tmp + ": " + errno_text(errno);
  if (::close(fd) != 0 && error.empty()) error = "cannot write " + tmp + ": " + errno_text(errno);
  if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot replace " + path + ": " + errno_text(errno);
  }
  if (!error.empty()) std::remove(tmp.c_str());
  return error;
}

}  // namespace

int pricing_check_command(const std::string& path) {
  auto r = config::load_config_file(path);
  if (!r.ok()) {
    for (const auto& e : r.errors) std::cerr << "tollgate: config error: " << e.to_string() << "\n";
    return 2;
  }
  auto table = budget::load_effective_price_table(*r.config);
  if (!table) {
    std::cerr << "tollgate: config error: " << table.error() << "\n";
    return 2;
  }
  int unpriced = 0;
  for (const auto& d : r.config->model_list) {
    const auto p = budget::resolve_deployment_price(d, **table);
    std::cout << d.model_name << "\t" << d.id << "\t" << d.provider_prefix << "/" << d.upstream_model << "\t";
    if (p.status == budget::PriceStatus::unpriced) {
      ++unpriced;
      std::cout << "unpriced";
    } else {
      std::cout << describe(p.price);
      if (p.status == budget::PriceStatus::priced_zero) std::cout << " (priced at zero)";
    }
    std::cout << "\t(" << p.how << ")\n";
  }
  std::cout << r.config->model_list.size() << " deployment(s), " << unpriced << " unpriced\n";
  return 0;
}

int pricing_import_command(const PricingImportOptions& opt) {
  if (!opt.as_of.empty() && !is_date(opt.as_of)) {
    std::cerr << "tollgate: --as-of: expected a date YYYY-MM-DD, got '" << opt.as_of << "'\n";
    return 2;
  }
  std::ifstream in(opt.file, std::ios::binary);
  if (!in) {
    std::cerr << "tollgate: cannot read " << opt.file << ": " << errno_text(errno) << "\n";
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  budget::LitellmJsonOptions options;
  options.as_of = opt.as_of.empty() ? today_utc() : opt.as_of;
  std::size_t skipped = 0;
  auto table = budget::PriceTable::parse_litellm_json(ss.str(), options, &skipped);
  if (!table) {
    std::cerr << "tollgate: " << opt.file << ": " << table.error() << "\n";
    return 2;
  }
  const std::string yaml = table->to_yaml(
      "Imported by `tollgate pricing import` from " + std::filesystem::path(opt.file).filename().string() +
      " (LiteLLM's model_prices_and_context_window.json format) on " + options.as_of +
      ".\nUse it as tollgate_settings.price_file (docs/pricing.md); prices are dollars per token.");
  if (opt.out.empty()) {
    std::cout << yaml;
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "tollgate: cannot write the table to stdout\n";
      return 1;
    }
  } else if (const std::string error = write_atomically(opt.out, yaml); !error.empty()) {
    std::cerr << "tollgate: " << error << "\n";
    return 1;
  }
  std::cerr << "imported " << table->size() << " models, skipped " << skipped << " (no token price)\n";
  return 0;
}

}  // namespace tollgate::app
