#include "store/redis/circuit_sync.hpp"

#include <set>
#include <spdlog/spdlog.h>

namespace tollgate::store::redis {
namespace {

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CircuitSync::CircuitSync(std::shared_ptr<RedisClient> client, std::string key_prefix, std::string instance_id,
                         std::chrono::milliseconds poll)
    : client_(std::move(client)),
      prefix_(key_prefix),
      key_(key_prefix + "circuits"),
      instance_(std::move(instance_id)),
      every_(poll) {}

CircuitSync::~CircuitSync() { stop(); }

void CircuitSync::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CircuitSync::publish(const policy::CircuitTransition& t) {
  if (t.remote) return;
  const std::string field = t.scope + "|" + t.id;
  if (t.to == policy::CircuitState::open) {
    const std::string value = std::to_string(now_ms() + t.open_for.count()) + "\t" + instance_ + "\t" + t.reason;
    client_->submit_in_order({"HSET", key_, field, value}, [](ReplyResult) {});
  } else if (t.to == policy::CircuitState::closed) {
    client_->submit_in_order({"HDEL", key_, field}, [](ReplyResult) {});
  }
}

void CircuitSync::attach(policy::Circuits* circuits) {
  std::lock_guard lock(mutex_);
  if (circuits_ != nullptr || circuits == nullptr) return;
  circuits_ = circuits;
  circuits->set_probe_gate([this](const std::string& scope, const std::string& id) { return claim_probe(scope, id); });
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      poll_once();
      lock.lock();
      wake_.wait_for(lock, every_, [this] { return stop_; });
    }
  });
}

bool CircuitSync::claim_probe(const std::string& scope, const std::string& id) {
  auto r = client_->call({"SET", prefix_ + "probe:" + scope + "|" + id, instance_, "NX", "PX",
                          std::to_string(policy::kProbeLease.count())});
  if (!r) return true;  // Redis unreachable: probe locally rather than never
  return r->type == Reply::Type::status;  // OK = won; nil = another instance carries it
}

void CircuitSync::retarget(std::shared_ptr<policy::Circuits> circuits) {
  std::lock_guard lock(mutex_);
  if (circuits_ == nullptr || circuits == nullptr) return;
  circuits_ = circuits.get();
  held_ = std::move(circuits);
}

void CircuitSync::poll_once() {
  policy::Circuits* circuits = nullptr;
  std::shared_ptr<policy::Circuits> hold;  // a reload during this poll does not free them
  {
    std::lock_guard lock(mutex_);
    if (circuits_ == nullptr || stop_) return;
    circuits = circuits_;
    hold = held_;
  }
  auto r = client_->call({"HGETALL", key_});
  if (!r || r->type != Reply::Type::array) return;
  const long long now = now_ms();
  std::set<std::string> present;
  for (std::size_t i = 0; i + 1 < r->elements.size(); i += 2) present.insert(r->elements[i].str);
  // An opening we saw (ours included) whose entry is gone: a probe succeeded somewhere (the
  // instance that closed it removed it); a copy still open or half-open here closes too.
  for (auto it = applied_.begin(); it != applied_.end();) {
    if (present.count(it->first) != 0) {
      ++it;
      continue;
    }
    const auto bar = it->first.find('|');
    if (bar != std::string::npos) circuits->close_remote(it->first.substr(0, bar), it->first.substr(bar + 1));
    it = applied_.erase(it);
  }
  for (std::size_t i = 0; i + 1 < r->elements.size(); i += 2) {
    const std::string& field = r->elements[i].str;
    const std::string& value = r->elements[i + 1].str;
    const auto bar = field.find('|');
    const auto t1 = value.find('\t');
    const auto t2 = t1 == std::string::npos ? std::string::npos : value.find('\t', t1 + 1);
    if (bar == std::string::npos || t2 == std::string::npos) continue;
    long long until = 0;
    try {
      until = std::stoll(value.substr(0, t1));
    } catch (...) {
      continue;
    }
    if (until <= now) {
      if (until + 60000 < now) client_->submit({"HDEL", key_, field}, [](ReplyResult) {});  // long over
      continue;
    }
    auto& seen = applied_[field];
    if (seen == until) continue;
    seen = until;
    if (value.compare(t1 + 1, t2 - t1 - 1, instance_) == 0) continue;  // our own opening: tracked, not applied
    circuits->open_remote(field.substr(0, bar), field.substr(bar + 1), value.substr(t2 + 1),
                           std::chrono::milliseconds(until - now));
  }
  if (applied_.size() > 10000) applied_.clear();  // bounded (the hash holds what is open now)
}

}  // namespace tollgate::store::redis
