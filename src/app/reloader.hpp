#pragma once
/// Config hot reload and the store's models (issue 11 §5, §6): builds the config a running
/// `serve` runs on — the config file's text plus, with general_settings.store_model_in_db, the
/// deployments kept in the store (config::ExtraModel: the loader's one code path) — and installs
/// it as the next services snapshot (pipeline::Services::next, pipeline::LiveServices).
///
/// - reload_file(): SIGHUP and `POST /config/reload`. Re-reads the file; a file that does not
///   load is refused (each reason logged and returned), the running config is kept.
///   Restart-required settings keep their running value (config/reload.hpp).
/// - refresh_models(): after a `/model/*` write on this instance, and from the poll thread when
///   the store's proxy_model_generation moved (a write on any instance).
/// - check_models(): what the config would be with `models` as the store's models (the
///   `/model/new` validation), without installing anything.
/// Reloads are serialised (one mutex); every member is thread-safe.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/loader.hpp"
#include "config/reload.hpp"
#include "pipeline/live_services.hpp"
#include "store/store.hpp"

namespace tollgate::app {

class Reloader {
 public:
  struct Options {
    std::string config_path;              ///< the file `serve` was started with
    std::shared_ptr<store::Store> store;  ///< where the models are (may be null: none)
    std::shared_ptr<pipeline::LiveServices> live;
    /// Told of every installed snapshot (re-targets the Redis circuit sync); may be empty.
    std::function<void(const std::shared_ptr<pipeline::Services>&)> on_install;
  };

  /// `file_text`: the text the running config was loaded from (the poll and check_models use it
  /// until a reload_file() succeeds).
  Reloader(Options options, std::string file_text);
  ~Reloader();
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  /// Loads `file_text` with the store's models when `with_store_models` (startup); environment
  /// variables are exported as at the first load. Errors as the loader's.
  config::LoadResult load_initial(bool with_store_models);
  /// Where reloads install their snapshot (set once, after the first services are built, before
  /// any reload).
  void set_live(std::shared_ptr<pipeline::LiveServices> live,
                std::function<void(const std::shared_ptr<pipeline::Services>&)> on_install = {});

  config::ReloadReport reload_file();
  config::ReloadReport refresh_models();
  /// The load of the running file text with `models` as the store's models, in order. A
  /// model's problems are under the label "model <model_id>", or relative to the entry (label "")
  /// for the model whose id is `subject`.
  config::LoadResult check_models(const std::vector<store::ProxyModelRecord>& models, const std::string& subject) const;

  /// Polls the store's proxy_model_generation every `every` and calls refresh_models() when it
  /// moved. No-op without a store.
  void start_polling(std::chrono::milliseconds every);
  /// Ends the poll thread (idempotent).
  void stop();

 private:
  config::LoadResult load(const std::string& text, const std::vector<store::ProxyModelRecord>& models,
                          const std::string& subject, bool export_env) const;
  /// Installs `loaded` (ok) over the running snapshot; the lock is held.
  config::ReloadReport install_locked(config::LoadResult loaded);
  std::vector<store::ProxyModelRecord> store_models(std::vector<config::Problem>& errors) const;

  Options options_;
  mutable std::mutex mu_;  // serialises reloads; guards file_text_
  std::string file_text_;
  std::int64_t seen_generation_ = -1;
  std::mutex poll_mu_;
  std::condition_variable poll_cv_;
  bool stopping_ = false;
  std::thread poller_;
};

}  // namespace tollgate::app
