#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app/cli.hpp"
#include "core/thread_log.hpp"

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only the `listening on` line and command output. A thread
  // may mute its own lines (core/thread_log.hpp: the admin thread while it simulates).
  auto logger = std::make_shared<spdlog::logger>(
      "tollgate", tollgate::core::muteable_sink(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  spdlog::initialize_logger(logger);
  spdlog::set_default_logger(logger);
  return tollgate::app::run_cli(argc, argv);
}
