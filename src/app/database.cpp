#include "app/database.hpp"

namespace tollgate::app {

std::string database_url(const config::Config& cfg) {
  if (!cfg.general_settings.database_url.empty()) return cfg.general_settings.database_url;
  return "sqlite://" + cfg.tollgate_settings.data_dir + "/tollgate.db";  // sqlite:///abs or sqlite://relative
}

}  // namespace tollgate::app
