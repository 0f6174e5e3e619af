#pragma once
/// `tollgate alerts test --config FILE`: sends one alert of each kind Tollgate raises to the
/// config's alert channels (tollgate_settings.alerts.webhooks, general_settings.alerting) and
/// reports each delivery.

#include "config/config.hpp"

namespace tollgate::app {

/// Exit 0 when every channel accepted every test alert, 1 when a delivery failed, 2 when no
/// channel is configured.
int alerts_test_command(const config::Config& cfg);

}  // namespace tollgate::app
