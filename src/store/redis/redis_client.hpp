#pragma once
/// A Redis connection on its own thread, for the shared ledger (store/redis/redis_ledger.hpp),
/// plus one per worker thread that attach()es (store/redis/io_connection.hpp).
///
/// Commands are queued by any thread and sent by the client's thread in pipelined batches: all
/// commands waiting when the thread wakes go out in one write, and their replies are read in
/// order, so N concurrent callers cost one round trip, not N. Each command's callback runs on the
/// client's thread. A worker thread with an attached connection sends its commands itself and
/// gets their callbacks on itself, from its own event loop. Protocol: RESP over TCP (https://redis.io/docs/reference/protocol-spec/),
/// through hiredis's synchronous API; AUTH and SELECT on connect.
///
/// Failure model: a command that could not be written or whose reply did not arrive within
/// `timeout` fails with ReplyError::kind = transport — it may or may not have run on the server
/// (the caller must make it idempotent). The connection is then dropped and reopened on the next
/// command; while the server is unreachable, commands fail at once for `retry_interval` after a
/// failed connect (no caller waits a connect timeout per request).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "config/redis_endpoint.hpp"
#include "store/store.hpp"

struct redisContext;

namespace boost::asio {
class io_context;
}

namespace tollgate::store::redis {

/// Where and how to reach Redis (LiteLLM's router_settings.redis_host / redis_port /
/// redis_password, or redis_url).
struct RedisOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string username;  ///< ACL user (Redis 6+); empty = the default user
  std::string password;  ///< empty = no AUTH
  int db = 0;            ///< SELECT index
  /// Connect, write and read timeout of one batch, milliseconds.
  std::chrono::milliseconds timeout{1000};
  /// After a failed connect, commands fail at once for this long before the next attempt.
  std::chrono::milliseconds retry_interval{200};
};

/// The connection options for a configured endpoint (config/redis_endpoint.hpp).
RedisOptions redis_options_for(const config::RedisEndpoint& endpoint);

/// One reply, copied out of hiredis.
struct Reply {
  enum class Type { nil, integer, string, status, error, array };
  Type type = Type::nil;
  long long integer = 0;
  std::string str;  ///< string, status and error replies
  std::vector<Reply> elements;
  /// The integer, or a string reply holding one; nullopt otherwise.
  [[nodiscard]] std::optional<long long> as_integer() const;
};

/// Why a command has no reply.
struct ReplyError {
  std::string message;
};

using ReplyResult = std::expected<Reply, ReplyError>;
/// Receives one command's outcome on the client's thread; must be quick and must not throw.
using ReplyDone = std::function<void(ReplyResult)>;

/// A Lua script run with EVALSHA; the client falls back to EVAL (which also loads it) when the
/// server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
struct Script {
  explicit Script(std::string text);
  std::string text;
  std::string sha1;  ///< lower-case hex
};

namespace detail {
/// A hiredis `redisReply*` copied into a Reply (store/redis/ internal).
Reply copy_reply(const void* hiredis_reply);
}  // namespace detail

class IoConnection;

/// Counters of what the client sent (cheap copy).
struct ClientStats {
  std::uint64_t commands = 0;   ///< commands answered (replies, including error replies)
  std::uint64_t batches = 0;    ///< pipelined writes: round trips
  std::uint64_t failures = 0;   ///< commands failed by transport (connect, write, read, timeout)
  std::uint64_t connects = 0;   ///< successful connections
};

/// The client. Thread-safe; destroying it fails every queued command and joins its thread.
class RedisClient {
 public:
  explicit RedisClient(RedisOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  /// Queues one command (argv, binary-safe); `done` is called exactly once. On a thread that
  /// attach()ed a connection, the command goes out on it at once and `done` runs on that thread.
  void submit(std::vector<std::string> argv, ReplyDone done);
  /// submit() on the client's own connection, even on an attached thread: commands submitted
  /// from several threads then reach Redis in the order they were submitted (circuit openings
  /// and closings). `done` runs on the client's thread.
  void submit_in_order(std::vector<std::string> argv, ReplyDone done);
  /// Queues EVALSHA script keys args (EVAL on NOSCRIPT). `script` must outlive the call. As
  /// submit() on an attached thread.
  void eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args, ReplyDone done);
  /// Gives the calling worker thread a connection of its own, driven by `ioc`, the io_context
  /// this thread runs (store/redis/io_connection.hpp): its submit() and eval() calls then cost
  /// the round trip alone, with no hand-over to the client's thread and back. call() and
  /// call_eval() keep using the client's thread (they block). The thread owns the connection;
  /// it must destroy it on this thread when `ioc` no longer runs (thread exit), before the client.
  [[nodiscard]] std::unique_ptr<IoConnection> attach(boost::asio::io_context& ioc);
  /// submit() on the client's thread (never on an attached connection) and wait for the outcome
  /// (blocks the caller: start-up, background tasks, tests).
  ReplyResult call(std::vector<std::string> argv);
  /// eval() and wait.
  ReplyResult call_eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args);

  /// Whether the last batch or connect succeeded.
  [[nodiscard]] bool reachable() const noexcept;
  [[nodiscard]] ClientStats stats() const;
  /// Grows by one with every new connection: state read on an earlier connection may be stale
  /// (the server may have restarted empty in between).
  [[nodiscard]] std::uint64_t connection_epoch() const noexcept { return epoch_.load(); }
  [[nodiscard]] const RedisOptions& options() const noexcept { return options_; }

 private:
  friend class IoConnection;
  /// The connection attached on the calling thread, if it is this client's.
  IoConnection* local() const noexcept;
  void detach(const IoConnection* c) noexcept;
  struct Command {
    std::vector<std::string> argv;
    const Script* script = nullptr;  // EVALSHA: argv[1] is the sha; fallback rewrites it
    ReplyDone done;
  };
  void enqueue(Command c);
  static std::vector<std::string> eval_argv(const Script& script, std::vector<std::string> keys,
                                            std::vector<std::string> args);
  void run();
  bool connect();
  void drop();
  void fail(std::vector<Command>& batch, std::size_t from, const std::string& why);

  RedisOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Command> queue_;
  bool stop_ = false;
  ClientStats stats_;
  std::atomic<bool> reachable_{false};
  std::atomic<std::uint64_t> epoch_{0};
  redisContext* ctx_ = nullptr;  // client thread only
  std::unordered_set<const Script*> loaded_;  // scripts run on this connection (client thread only)
  std::chrono::steady_clock::time_point next_connect_{};
  std::thread thread_;
};

}  // namespace tollgate::store::redis
