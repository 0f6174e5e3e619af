#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app/cli.hpp"

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only the `listening on` line and command output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tollgate"));
  return tollgate::app::run_cli(argc, argv);
}
