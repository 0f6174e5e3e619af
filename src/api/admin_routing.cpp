// GET /tollgate/routing (docs/admin_api.md) and the view behind it (api/routing_view.hpp).
#include "api/routing_view.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include <boost/json.hpp>

#include "api/admin_ui.hpp"
#include "pipeline/attempt_loop.hpp"
#include "routing/router.hpp"

namespace tollgate::api {
namespace json = boost::json;

namespace {

/// Whether a failure whose action is `a` walks a fallback list (docs/failure_policy.md §2).
bool walks_fallbacks(config::PolicyAction a) {
  using A = config::PolicyAction;
  return a == A::retry_then_fallback || a == A::retry_with_circuit || a == A::fallback || a == A::next_deployment;
}

json::value price_json(budget::PerTokenPrice p) {
  std::error_code ec;
  auto v = json::parse(budget::format_price_per_token(p), ec);
  return ec ? json::value(nullptr) : v;
}

int kind_rank(std::string_view k) {
  return k == "fallbacks"                  ? 0
         : k == "default_fallbacks"        ? 1
         : k == "context_window_fallbacks" ? 2
         : k == "content_policy_fallbacks" ? 3
                                           : 4;
}

/// Whether a failure of `cls` whose action is `a` may end in the group's degradation mode
/// (pipeline/attempt_loop.cpp: the walk's `may_degrade`).
bool may_degrade(config::FailureClass cls, config::PolicyAction a) {
  using A = config::PolicyAction;
  if (a == A::fail_fast || a == A::stop_and_alert) return false;
  if (a == A::degrade) return true;
  return cls != config::FailureClass::context_overflow && cls != config::FailureClass::content_policy;
}

}  // namespace

std::string redact_api_base(std::string_view url) {
  std::string_view rest = url;
  std::string out;
  if (const auto scheme = url.find("://"); scheme != std::string_view::npos) {
    out = std::string(url.substr(0, scheme + 3));
    rest = url.substr(scheme + 3);
  }
  if (const auto cut = rest.find_first_of("?#"); cut != std::string_view::npos) rest = rest.substr(0, cut);
  const auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
  out += authority;
  if (slash != std::string_view::npos) out += rest.substr(slash);
  return out;
}

std::vector<FallbackEdge> fallback_edges(const config::Config& cfg, const policy::PolicySet& policies) {
  std::vector<FallbackEdge> out;
  const auto groups = cfg.model_groups();
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& g = groups[gi];
    const auto& table = policies.for_group(g).classes;
    std::vector<FallbackEdge> mine;
    for (int c = 0; c < config::kFailureClassCount; ++c) {
      const auto cls = static_cast<config::FailureClass>(c);
      if (!walks_fallbacks(table.action(cls))) continue;
      const auto targets = routing::fallback_groups(cfg, g, cls);
      const auto* own = routing::fallback_rule_for(cfg.litellm_settings.fallbacks, g);
      for (std::size_t i = 0; i < targets.size(); ++i) {
        const auto& to = targets[i];
        std::string kind = cls == config::FailureClass::context_overflow ? "context_window_fallbacks"
                           : cls == config::FailureClass::content_policy ? "content_policy_fallbacks"
                           : own && std::find(own->begin(), own->end(), to) != own->end() ? "fallbacks"
                                                                                          : "default_fallbacks";
        auto it = std::find_if(mine.begin(), mine.end(),
                               [&](const FallbackEdge& e) { return e.to == to && e.kind == kind; });
        if (it == mine.end()) {
          mine.push_back(FallbackEdge{g, to, kind, {}, static_cast<int>(i), {}});
          it = mine.end() - 1;
        }
        it->classes.emplace_back(config::to_string(cls));
      }
    }
    const auto& degradation = policies.for_group(g).degradation;
    using Mode = config::DegradationMode;
    if ((degradation.mode == Mode::equivalent || degradation.mode == Mode::reduced) && !degradation.model.empty()) {
      FallbackEdge e{g, degradation.model, "degradation", {}, 0, std::string(config::to_string(degradation.mode))};
      for (int c = 0; c < config::kFailureClassCount; ++c) {
        const auto cls = static_cast<config::FailureClass>(c);
        if (may_degrade(cls, table.action(cls))) e.classes.emplace_back(config::to_string(cls));
      }
      if (!e.classes.empty()) mine.push_back(std::move(e));
    }
    std::stable_sort(mine.begin(), mine.end(), [](const FallbackEdge& a, const FallbackEdge& b) {
      return std::tuple(kind_rank(a.kind), a.order) < std::tuple(kind_rank(b.kind), b.order);
    });
    for (auto& e : mine) out.push_back(std::move(e));
  }
  return out;
}

json::object routing_json(const config::Config& cfg, const std::vector<budget::ResolvedPrice>& prices,
                          const policy::PolicySet& policies, const std::vector<policy::CircuitView>& circuits) {
  std::map<std::string, const policy::CircuitView*> by_id;
  for (const auto& c : circuits)
    if (c.scope == "deployment") by_id[c.id] = &c;
  json::array groups;
  for (const auto& g : cfg.model_groups()) {
    json::array deps;
    for (std::size_t i = 0; i < cfg.model_list.size(); ++i) {
      const auto& d = cfg.model_list[i];
      if (d.model_name != g) continue;
      const budget::ResolvedPrice none;
      const auto& price = i < prices.size() ? prices[i] : none;
      const bool priced = price.status != budget::PriceStatus::unpriced;
      json::object o;
      o["id"] = d.id;
      o["provider"] = d.provider_prefix;
      o["model"] = d.upstream_model;
      o["api_base"] = d.api_base.empty() ? json::value(nullptr) : json::value(redact_api_base(d.api_base));
      o["input_cost_per_token"] = priced ? price_json(price.price.input) : json::value(nullptr);
      o["output_cost_per_token"] = priced ? price_json(price.price.output) : json::value(nullptr);
      o["priced"] = priced;
      o["free"] = price.status == budget::PriceStatus::priced_zero;
      json::object circuit;
      const auto it = by_id.find(d.id);
      const policy::CircuitView closed;
      const auto& cv = it == by_id.end() ? closed : *it->second;
      circuit["state"] = policy::to_string(cv.state);
      circuit["retry_in_ms"] = cv.retry_in_ms;
      circuit["reason"] = cv.reason;
      o["circuit"] = std::move(circuit);
      deps.push_back(std::move(o));
    }
    groups.push_back(json::object{{"model_name", g}, {"deployments", std::move(deps)}});
  }
  json::array edges;
  for (const auto& e : fallback_edges(cfg, policies)) {
    json::array classes;
    for (const auto& c : e.classes) classes.emplace_back(c);
    edges.push_back(json::object{{"from", e.from},
                                 {"to", e.to},
                                 {"kind", e.kind},
                                 {"classes", std::move(classes)},
                                 {"order", e.order},
                                 {"mode", e.mode.empty() ? json::value(nullptr) : json::value(e.mode)}});
  }
  return json::object{{"model_groups", std::move(groups)}, {"fallbacks", std::move(edges)}};
}

namespace admin {

Reply routing(const Context& c, const Call&) {
  auto s = live_services(c);
  if (!s) return std::unexpected(s.error());
  const auto& services = **s;
  return json::value(routing_json(*services.config, services.prices, *services.policies, services.circuits->snapshot()));
}

}  // namespace admin
}  // namespace tollgate::api
