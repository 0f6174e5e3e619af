#include "simulate/scripted_transport.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "simulate/catalogue.hpp"

namespace tollgate::simulate {

namespace net = boost::asio;
using http::TransportError;
using std::chrono::milliseconds;

namespace {

constexpr std::string_view kHostPrefix = "deployment-";
constexpr std::string_view kHostSuffix = ".tollgate-simulate.invalid";

std::optional<std::size_t> index_from_host(std::string_view host) {
  if (!host.starts_with(kHostPrefix) || !host.ends_with(kHostSuffix)) return std::nullopt;
  host.remove_prefix(kHostPrefix.size());
  host.remove_suffix(kHostSuffix.size());
  std::size_t i = 0;
  auto [p, ec] = std::from_chars(host.data(), host.data() + host.size(), i);
  if (ec != std::errc{} || p != host.data() + host.size()) return std::nullopt;
  return i;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

/// A scripted response: the head is known, the body is handed out whole.
class ScriptedExchange final : public http::UpstreamExchange {
 public:
  explicit ScriptedExchange(ScriptedResponse r) : r_(std::move(r)) {}

  int status() const override { return r_.status; }
  std::string_view header(std::string_view name) const override {
    for (const auto& [k, v] : r_.headers)
      if (iequals(k, name)) return v;
    return {};
  }
  net::awaitable<std::expected<std::string, TransportError>> read_all(std::size_t limit, http::SteadyTime) override {
    co_return read_all_now(limit);
  }
  net::awaitable<std::expected<std::size_t, TransportError>> read_some(std::string& out, http::SteadyTime) override {
    co_return read_some_now(out);
  }
  bool done() const override { return pos_ >= r_.body.size(); }
  void cancel() override { cancelled_ = true; }
  void finish() override {}

 private:
  std::expected<std::string, TransportError> read_all_now(std::size_t limit) {
    if (cancelled_) return std::unexpected(TransportError{TransportError::Kind::cancelled, true, "cancelled"});
    if (r_.body.size() > limit)
      return std::unexpected(TransportError{TransportError::Kind::body_too_large, true, "body larger than the limit"});
    pos_ = r_.body.size();
    return r_.body;
  }
  std::expected<std::size_t, TransportError> read_some_now(std::string& out) {
    if (cancelled_) return std::unexpected(TransportError{TransportError::Kind::cancelled, true, "cancelled"});
    const std::size_t n = r_.body.size() - pos_;
    out.append(r_.body, pos_, n);
    pos_ = r_.body.size();
    return n;
  }

  ScriptedResponse r_;
  std::size_t pos_ = 0;
  bool cancelled_ = false;
};

}  // namespace

ScriptedTransport::ScriptedTransport(const config::Config& cfg, const Scenario& scenario, core::ManualClock& clock)
    : cfg_(cfg), scenario_(scenario), clock_(clock), global_(queues_of(scenario.upstream)) {
  for (const auto& r : scenario.requests) per_entry_.push_back(queues_of(r.upstream));
}

std::string ScriptedTransport::host_for(std::size_t index) {
  return std::string(kHostPrefix) + std::to_string(index) + std::string(kHostSuffix);
}

void ScriptedTransport::begin_entry(std::size_t entry) { entry_ = entry; }

ScriptedTransport::Queues ScriptedTransport::queues_of(const Scripts& s) {
  Queues q;
  for (const auto& [key, list] : s) {
    auto it = std::find_if(q.begin(), q.end(), [&](const auto& e) { return e.first == key; });
    if (it == q.end()) it = q.insert(q.end(), {key, {}});
    it->second.insert(it->second.end(), list.begin(), list.end());
  }
  return q;
}

const Outcome* ScriptedTransport::pop(Queues& q, const std::string& key, Outcome& slot) {
  for (auto& [k, items] : q) {
    if (k != key || items.empty()) continue;
    slot = std::move(items.front());
    items.pop_front();
    return &slot;
  }
  return nullptr;
}

std::expected<std::unique_ptr<http::UpstreamExchange>, TransportError> ScriptedTransport::answer(
    const http::OutgoingRequest& req, http::SteadyTime deadline) {
  const auto idx = index_from_host(req.target.host);
  if (!idx || *idx >= cfg_.model_list.size())
    return std::unexpected(TransportError{TransportError::Kind::connect_failed, false,
                                          "the simulator has no deployment at " + req.target.host});
  const config::Deployment& d = cfg_.model_list[*idx];
  Outcome slot;
  const Outcome* o = nullptr;
  if (entry_ < per_entry_.size()) {
    o = pop(per_entry_[entry_], d.id, slot);
    if (!o) o = pop(per_entry_[entry_], d.model_name, slot);
  }
  if (!o) o = pop(global_, d.id, slot);
  if (!o) o = pop(global_, d.model_name, slot);
  if (!o && scenario_.default_outcome) {
    slot = *scenario_.default_outcome;
    o = &slot;
  }
  if (!o) {
    slot = Outcome{};
    slot.where = "success";
    o = &slot;
  }
  ScriptedCall call;
  call.deployment = *idx;
  call.deployment_id = d.id;
  call.script = o->where;

  const milliseconds latency{o->latency_ms.value_or(scenario_.latency_ms)};
  const auto now = clock_.now();
  if (o->fault == "timeout" || now + latency > deadline) {
    // No answer before the attempt's deadline: the real client gives up there, request sent.
    if (deadline > now) clock_.advance(deadline - now);
    call.fault = "timeout";
    calls_.push_back(std::move(call));
    const std::string why = o->fault == "timeout" ? "the upstream never answered (scripted hang)"
                                                  : "no response within the attempt's time (scripted latency " +
                                                        std::to_string(latency.count()) + " ms)";
    return std::unexpected(TransportError{TransportError::Kind::timeout, true, why});
  }
  clock_.advance(latency);
  if (o->fault == "reset") {
    call.fault = "reset";
    calls_.push_back(std::move(call));
    return std::unexpected(TransportError{TransportError::Kind::reset, true, "connection reset by peer (scripted fault)"});
  }
  if (o->fault == "connect_refused") {
    call.fault = "connect_refused";
    calls_.push_back(std::move(call));
    return std::unexpected(
        TransportError{TransportError::Kind::connect_failed, false, "connection refused (scripted fault)"});
  }
  ++seq_;
  std::string id = std::to_string(seq_);
  id.insert(0, id.size() < 6 ? 6 - id.size() : 0, '0');
  id = "sim" + id;
  const RequestFacts facts = read_request(req.body, d);
  ScriptedResponse resp;
  if (o->fault == "garbage") resp = garbage_response();
  else if (!o->error.empty() || (o->status && *o->status >= 400)) resp = error_response(d.provider, *o, facts, "req_" + id);
  else resp = success_response(d.provider, *o, facts, id);
  call.status = resp.status;
  calls_.push_back(std::move(call));
  return std::unique_ptr<http::UpstreamExchange>(std::make_unique<ScriptedExchange>(std::move(resp)));
}

net::awaitable<std::expected<std::unique_ptr<http::UpstreamExchange>, TransportError>> ScriptedTransport::start(
    const http::OutgoingRequest& req, http::SteadyTime deadline, http::CancelToken* token) {
  if (token && token->cancelled)
    co_return std::unexpected(TransportError{TransportError::Kind::cancelled, false, "cancelled"});
  co_return answer(req, deadline);
}

}  // namespace tollgate::simulate
