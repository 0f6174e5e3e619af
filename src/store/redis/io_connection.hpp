#pragma once
/// A worker thread's own Redis connection (store/redis/redis_client.hpp), driven by that thread's
/// io_context: a command submitted on the thread is written to the socket at once and its reply
/// is read by the same thread's event loop, so a reservation costs the network round trip and
/// nothing else (no wake-up of the client's thread, no hop back). Commands written while earlier
/// ones are in flight are pipelined; replies come back in order (RESP,
/// https://redis.io/docs/reference/protocol-spec/; framing and parsing by hiredis's
/// redisFormatCommandArgv and redisReader).
///
/// Failure model, as the client's: a command that could not be written, or whose reply did not
/// arrive within RedisOptions::timeout, fails with a ReplyError (it may or may not have run); the
/// connection is then closed, and reopened on the next command. After a failed connect, commands
/// fail at once for RedisOptions::retry_interval.
///
/// Not thread-safe: used only on the thread that runs its io_context. Destroy it on that thread
/// once the io_context no longer runs (thread exit): every command still in flight then fails.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "store/redis/redis_client.hpp"

struct redisReader;

namespace tollgate::store::redis {

class IoConnection {
 public:
  /// `client` supplies the options and keeps the counters (stats, reachable, connection_epoch);
  /// it must outlive the connection.
  IoConnection(boost::asio::io_context& ioc, RedisClient& client);
  ~IoConnection();
  IoConnection(const IoConnection&) = delete;
  IoConnection& operator=(const IoConnection&) = delete;

  /// Sends argv (EVALSHA … when `script` is set: sent as EVAL the first time on this connection,
  /// and again as EVAL after a NOSCRIPT reply). `done` is called exactly once, on this thread
  /// (or from the destructor).
  void send(std::vector<std::string> argv, const Script* script, ReplyDone done);

 private:
  struct Pending {
    std::vector<std::string> argv;  // kept for scripts only (a NOSCRIPT reply sends it again)
    const Script* script = nullptr;
    ReplyDone done;
    std::chrono::steady_clock::time_point deadline;
    bool internal = false;  // AUTH / SELECT on connect: an error reply fails the connection
  };
  enum class State { closed, connecting, setting_up, open };  // setting_up: AUTH / SELECT in flight

  void connect();
  void on_connected();
  void release_waiting();  // set-up done: the commands that waited go out
  bool write_command(Pending p);  // false: it could not be formatted (its done was called)
  void flush();
  void read();
  void on_reply(void* raw);
  void arm_timer();
  void fail_all(const std::string& why);

  RedisClient& client_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  State state_ = State::closed;
  int setup_left_ = 0;  // AUTH / SELECT replies still to come
  bool closing_ = false;  // in the destructor: a callback's new command fails at once
  std::chrono::steady_clock::time_point next_connect_{};
  std::deque<Pending> waiting_;   // submitted while connecting
  std::deque<Pending> inflight_;  // written, replies not yet read, in order
  std::string out_;               // formatted, not yet handed to the socket
  std::string writing_;           // handed to async_write
  bool write_busy_ = false;
  std::array<char, 16384> in_{};
  redisReader* reader_ = nullptr;
  std::unordered_set<const Script*> loaded_;  // scripts run on this connection
  std::uint64_t generation_ = 0;  // grows on every close: handlers of an older socket do nothing
};

}  // namespace tollgate::store::redis
