#include "app/alerts_cmd.hpp"

#include <iostream>

#include "telemetry/alert_webhooks.hpp"

namespace tollgate::app {

int alerts_test_command(const config::Config& cfg) {
  const auto& a = cfg.tollgate_settings.alerts;
  if (a.webhooks.empty()) {
    std::cerr << "tollgate: no alert channel is configured (tollgate_settings.alerts.webhooks, or "
                 "general_settings.alerting: [slack] with SLACK_WEBHOOK_URL)\n";
    return 2;
  }
  telemetry::WebhookOptions o;
  o.urls = a.webhooks;
  o.timeout = a.timeout;
  o.client.ca_file = cfg.tollgate_settings.ca_file;
  o.client.verify = cfg.tollgate_settings.tls_verify;
  telemetry::WebhookNotifier n(o);
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  // One of each kind the gateway raises (docs/observability.md), marked as a test.
  const std::vector<std::pair<std::string, std::string>> kinds{
      {"budget_threshold", "key <test> 80%"},     {"soft_budget_crossed", "key <test>"},
      {"commercial_limit", "provider <test>"},    {"provider_circuit_open", "<test>"},
      {"provider_circuit_closed", "<test>"},      {"deployment_misconfigured", "<test>"},
      {"ledger_unavailable", "ledger"}};
  for (const auto& [kind, subject] : kinds)
    n.notify(telemetry::Alert{kind, subject, "test alert from `tollgate alerts test`: no action needed", now, 0});
  const bool done = n.drain(std::chrono::milliseconds(a.timeout.count() * 4 * static_cast<long long>(kinds.size()) + 5000));
  const auto s = n.stats();
  const auto expected = kinds.size() * a.webhooks.size();
  std::cout << "sent " << kinds.size() << " test alert(s) to " << a.webhooks.size() << " channel(s): " << s.delivered
            << " delivered, " << s.dropped << " failed\n";
  return done && s.delivered == expected ? 0 : 1;
}

}  // namespace tollgate::app
