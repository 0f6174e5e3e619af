#include "app/reloader.hpp"

#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

namespace tollgate::app {

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Reloader::Reloader(Options options, std::string file_text)
    : options_(std::move(options)), file_text_(std::move(file_text)) {}

Reloader::~Reloader() { stop(); }

std::vector<store::ProxyModelRecord> Reloader::store_models(std::vector<config::Problem>& errors) const {
  if (!options_.store) return {};
  auto models = options_.store->list_proxy_models();
  if (!models) {
    errors.push_back(
        config::Problem{"proxy_models", 0, "cannot read the models in the database: " + models.error().message});
    return {};
  }
  return std::move(*models);
}

config::LoadResult Reloader::load(const std::string& text, const std::vector<store::ProxyModelRecord>& models,
                                  const std::string& subject, bool export_env) const {
  config::LoadOptions o;
  o.export_environment_variables = export_env;
  for (const auto& m : models) o.extra_models.push_back({m.model_id == subject ? "" : "model " + m.model_id, m.entry});
  return config::load_config_string(text, options_.config_path, o);
}

config::LoadResult Reloader::load_initial(bool with_store_models) {
  std::lock_guard lk(mu_);
  std::vector<config::Problem> errors;
  auto models = with_store_models ? store_models(errors) : std::vector<store::ProxyModelRecord>{};
  if (!errors.empty()) {
    config::LoadResult r;
    r.errors = std::move(errors);
    return r;
  }
  if (options_.store && with_store_models)
    if (auto g = options_.store->proxy_model_generation()) seen_generation_ = *g;
  return load(file_text_, models, "", true);
}

void Reloader::set_live(std::shared_ptr<pipeline::LiveServices> live,
                        std::function<void(const std::shared_ptr<pipeline::Services>&)> on_install) {
  std::lock_guard lk(mu_);
  options_.live = std::move(live);
  options_.on_install = std::move(on_install);
}

config::LoadResult Reloader::check_models(const std::vector<store::ProxyModelRecord>& models,
                                          const std::string& subject) const {
  std::lock_guard lk(mu_);
  return load(file_text_, models, subject, false);
}

config::ReloadReport Reloader::install_locked(config::LoadResult loaded) {
  config::ReloadReport report;
  const auto running = options_.live->current();
  report.model_groups = running->config->model_groups().size();
  report.deployments = running->config->model_list.size();
  report.warnings = std::move(loaded.warnings);
  auto plan = config::plan_reload(*running->config, *loaded.config);
  auto next = pipeline::Services::next(*running, plan.config);
  if (!next) {
    report.errors.push_back(config::Problem{"tollgate_settings.price_file", 0, next.error()});
    return report;
  }
  if (options_.on_install) options_.on_install(*next);
  options_.live->install(*next);
  report.applied = true;
  report.restart_required = std::move(plan.restart_required);
  report.model_groups = plan.config->model_groups().size();
  report.deployments = plan.config->model_list.size();
  return report;
}

namespace {

void log_report(const char* what, const config::ReloadReport& r) {
  if (!r.applied) {
    spdlog::error("{} refused, the running config is kept ({} problem(s)):", what, r.errors.size());
    for (const auto& e : r.errors) spdlog::error("  {}", e.to_string());
    return;
  }
  for (const auto& w : r.warnings) spdlog::warn("{}: {}", what, w.to_string());
  for (const auto& s : r.restart_required) spdlog::warn("{}: {}", what, s);
  spdlog::info("{} applied: {} model group(s), {} deployment(s)", what, r.model_groups, r.deployments);
}

}  // namespace

config::ReloadReport Reloader::reload_file() {
  std::lock_guard lk(mu_);
  config::ReloadReport report;
  const auto running = options_.live->current();
  report.model_groups = running->config->model_groups().size();
  report.deployments = running->config->model_list.size();
  auto text = read_file(options_.config_path);
  if (!text) {
    report.errors.push_back(config::Problem{"", 0, "cannot read config file " + options_.config_path});
    log_report("config reload", report);
    return report;
  }
  std::vector<config::Problem> errors;
  const bool with_models = running->config->general_settings.store_model_in_db;
  auto models = with_models ? store_models(errors) : std::vector<store::ProxyModelRecord>{};
  if (errors.empty()) {
    auto loaded = load(*text, models, "", false);
    if (loaded.ok()) {
      report = install_locked(std::move(loaded));
      if (report.applied) file_text_ = std::move(*text);
    } else {
      report.errors = std::move(loaded.errors);
    }
  } else {
    report.errors = std::move(errors);
  }
  log_report("config reload", report);
  return report;
}

config::ReloadReport Reloader::refresh_models() {
  std::lock_guard lk(mu_);
  config::ReloadReport report;
  const auto running = options_.live->current();
  report.model_groups = running->config->model_groups().size();
  report.deployments = running->config->model_list.size();
  std::vector<config::Problem> errors;
  if (options_.store)
    if (auto g = options_.store->proxy_model_generation()) seen_generation_ = *g;
  auto models = store_models(errors);
  if (errors.empty()) {
    auto loaded = load(file_text_, models, "", false);
    if (loaded.ok()) {
      loaded.warnings.clear();  // the file's own were logged when it was loaded
      report = install_locked(std::move(loaded));
    } else {
      report.errors = std::move(loaded.errors);
    }
  } else {
    report.errors = std::move(errors);
  }
  log_report("models from the database", report);
  return report;
}

void Reloader::start_polling(std::chrono::milliseconds every) {
  if (!options_.store || poller_.joinable()) return;
  poller_ = std::thread([this, every] {
    std::unique_lock lk(poll_mu_);
    while (!stopping_) {
      if (poll_cv_.wait_for(lk, every, [this] { return stopping_; })) break;
      lk.unlock();
      auto g = options_.store->proxy_model_generation();
      std::int64_t seen = 0;
      {
        std::lock_guard rl(mu_);
        seen = seen_generation_;
      }
      if (g && *g != seen) (void)refresh_models();
      lk.lock();
    }
  });
}

void Reloader::stop() {
  {
    std::lock_guard lk(poll_mu_);
    stopping_ = true;
  }
  poll_cv_.notify_all();
  if (poller_.joinable()) poller_.join();
}

}  // namespace tollgate::app
