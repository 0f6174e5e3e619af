#pragma once
/// `tollgate explain REQUEST_ID --config FILE [--json]`: what the gateway decided for one
/// request and why, read from the spend log of the database the config names (docs/simulate.md).
/// Exit codes: 0 printed, 1 no such row / the database cannot be read, 2 a bad config.

#include <string>

namespace tollgate::app {

struct ExplainOptions {
  std::string request_id;   ///< x-litellm-call-id of the request
  std::string config_path;
  bool json = false;        ///< print the row's decision JSON only
};

int explain_command(const ExplainOptions& options);

}  // namespace tollgate::app
