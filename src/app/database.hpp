#pragma once
/// Which database a config names, for every command that opens it (`serve`, `explain`).

#include <string>

#include "config/config.hpp"

namespace tollgate::app {

/// general_settings.database_url, else `sqlite://<tollgate_settings.data_dir>/tollgate.db`
/// (docs/storage.md).
std::string database_url(const config::Config& cfg);

}  // namespace tollgate::app
