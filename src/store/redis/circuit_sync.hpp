#pragma once
/// Circuits shared by every instance (docs/scale_out.md): an instance that opens a circuit
/// (deployment, provider or feature) publishes it to one Redis hash, `<prefix>circuits`
/// (field "<scope>|<id>", value "<until ms>\t<instance>\t<reason>"); every other instance reads the
/// hash every `poll` and opens the same circuit locally until the same instant
/// (policy::Circuits::open_remote). A circuit that closes (its probe succeeded) is removed from the
/// hash, and the others close their copy within a poll. A half-open deployment is probed once per
/// cluster: the probe goes to the instance that wins `SET <prefix>probe:<scope>|<id> NX` (PX =
/// kProbeLease); if Redis cannot answer, the instance probes on its own (one probe per instance).

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "policy/circuit.hpp"
#include "store/redis/redis_client.hpp"

namespace tollgate::store::redis {

/// Publishes this instance's circuit openings and applies the others'. Thread-safe.
class CircuitSync {
 public:
  /// `instance_id` and `key_prefix` are the ledger's. The poll thread starts at attach().
  CircuitSync(std::shared_ptr<RedisClient> client, std::string key_prefix, std::string instance_id,
              std::chrono::milliseconds poll = std::chrono::milliseconds(200));
  ~CircuitSync();
  CircuitSync(const CircuitSync&) = delete;
  CircuitSync& operator=(const CircuitSync&) = delete;

  /// A local transition (policy::Circuits' observer): an opening is published, a closing removes
  /// the entry; transitions applied from another instance (`remote`) are not published again.
  /// Never blocks (the command is queued).
  void publish(const policy::CircuitTransition& t);
  /// Starts applying other instances' openings to `circuits` (which must outlive this object) and
  /// installs the cluster's probe gate on them.
  void attach(policy::Circuits* circuits);
  /// After a config reload: applies other instances' openings to the reloaded `circuits` from
  /// now on (kept alive here; they carry the probe gate over, policy::Circuits' reload
  /// constructor). Ignored before attach(). Thread-safe.
  void retarget(std::shared_ptr<policy::Circuits> circuits);
  /// Whether this instance may send the cluster's one probe of `scope`/`id` (one Redis round trip,
  /// blocking: at most once per half-open period per circuit). True when Redis cannot answer.
  bool claim_probe(const std::string& scope, const std::string& id);
  /// Stops applying (joins the poll thread); call before the Circuits attached are destroyed.
  void stop();
  /// One poll, synchronously (the thread runs it every `poll`; tests call it directly).
  void poll_once();

 private:
  std::shared_ptr<RedisClient> client_;
  std::string prefix_;
  std::string key_;
  std::string instance_;
  std::chrono::milliseconds every_;
  policy::Circuits* circuits_ = nullptr;
  std::shared_ptr<policy::Circuits> held_;  // retarget(): the reloaded circuits, alive while applied
  std::map<std::string, long long> applied_;  // field → the `until` last seen (poll thread only)
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tollgate::store::redis
