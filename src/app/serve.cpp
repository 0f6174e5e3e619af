#include "app/serve.hpp"

#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include "api/gateway.hpp"
#include "http/client.hpp"
#include "http/server.hpp"
#include "pipeline/attempt_loop.hpp"

namespace tollgate::app {

int serve(std::shared_ptr<const config::Config> cfg, const ServeOptions& options) {
  const auto& ts = cfg->tollgate_settings;
  auto services = pipeline::Services::make(cfg, core::SystemClock::instance());
  auto gateway = std::make_shared<api::Gateway>(services);

  http::ServerLimits limits;
  limits.max_body_bytes = ts.max_request_body_bytes;
  limits.header_timeout = ts.header_read_timeout;
  limits.body_timeout = ts.body_read_timeout;
  limits.idle_timeout = ts.idle_timeout;
  int threads = ts.worker_threads > 0 ? ts.worker_threads : static_cast<int>(std::thread::hardware_concurrency());
  if (threads < 1) threads = 1;

  http::Server server(
      limits, [gateway](http::Request& req, http::ResponseWriter& w) { return gateway->handle(req, w); },
      &api::Gateway::protocol_error_body, threads);
  unsigned short port = 0;
  try {
    port = server.listen(options.host, options.port);
  } catch (const std::exception& e) {
    std::cerr << "tollgate: cannot listen on " << options.host << ":" << options.port << ": " << e.what() << "\n";
    return 1;
  }

  http::ClientOptions copts;
  copts.connect_timeout = ts.connect_timeout;
  copts.ca_file = ts.ca_file;
  copts.verify = ts.tls_verify;
  copts.max_idle_per_upstream = static_cast<std::size_t>(std::max(1, ts.max_idle_connections_per_upstream));

  // Signals: a dedicated context so workers never handle them.
  boost::asio::io_context signal_ioc;
  boost::asio::signal_set signals(signal_ioc, SIGINT, SIGTERM);
  signals.async_wait([&server](const boost::system::error_code&, int sig) {
    spdlog::info("signal {} received, stopping", sig);
    server.stop();
  });
  std::thread signal_thread([&signal_ioc] { signal_ioc.run(); });
  std::signal(SIGPIPE, SIG_IGN);

  const std::string shown_host = options.host == "0.0.0.0" ? "127.0.0.1" : options.host;
  std::printf("listening on http://%s:%u\n", shown_host.c_str(), static_cast<unsigned>(port));
  std::fflush(stdout);
  spdlog::info("tollgate serving {} model group(s) on {}:{} with {} worker thread(s)", cfg->model_groups().size(),
               options.host, port, threads);

  server.run([copts](boost::asio::io_context& ioc) {
    // One upstream pool per worker thread, alive for the thread's lifetime.
    thread_local std::unique_ptr<http::UpstreamPool> pool;
    try {
      pool = std::make_unique<http::UpstreamPool>(ioc, copts);
    } catch (const std::exception& e) {
      spdlog::critical("cannot set up the upstream client (TLS CA store): {}", e.what());
      std::exit(1);
    }
    http::UpstreamPool::install(pool.get());
  });
  signal_ioc.stop();
  signal_thread.join();
  return 0;
}

}  // namespace tollgate::app
