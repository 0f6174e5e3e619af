#pragma once
/// Starting the gateway: load config, wire components, run the HTTP workers until a signal.

#include <memory>
#include <string>

#include "config/config.hpp"

namespace tollgate::app {

struct ServeOptions {
  std::string host = "0.0.0.0";
  unsigned short port = 4000;  ///< LiteLLM's default; 0 = any free port
};

/// Runs until SIGINT/SIGTERM. Prints `listening on http://HOST:PORT` on stdout once accepting.
/// Returns the exit code (1 when the port cannot be bound).
int serve(std::shared_ptr<const config::Config> cfg, const ServeOptions& options);

}  // namespace tollgate::app
