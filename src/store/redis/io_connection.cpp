#include "store/redis/io_connection.hpp"

#include <hiredis/hiredis.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

#include <utility>

namespace tollgate::store::redis {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

IoConnection::IoConnection(net::io_context& ioc, RedisClient& client)
    : client_(client), resolver_(ioc), socket_(ioc), timer_(ioc) {}

IoConnection::~IoConnection() {
  closing_ = true;
  client_.detach(this);
  // Everything still here fails now, on this thread, as on any lost connection: a reserve's
  // failure releases what it may have taken, and a failed settle is retried by the ledger. (Sent
  // on after the thread stopped, a reserve's grant would reach a request that no longer exists.)
  fail_all("the Redis connection is closing");
  if (reader_ != nullptr) redisReaderFree(reader_);
  reader_ = nullptr;
}

void IoConnection::send(std::vector<std::string> argv, const Script* script, ReplyDone done) {
  const auto now = Clock::now();
  if (closing_) {
    done(std::unexpected(ReplyError{"the Redis connection is closing"}));
    return;
  }
  Pending p{std::move(argv), script, std::move(done), now + client_.options().timeout, false};
  if (state_ == State::open) {
    write_command(std::move(p));
    return;
  }
  if (state_ == State::closed) {
    if (now < next_connect_) {
      {
        std::lock_guard lock(client_.mutex_);
        ++client_.stats_.failures;
      }
      p.done(std::unexpected(ReplyError{"Redis " + client_.options().host + ":" +
                                        std::to_string(client_.options().port) + " is unreachable"}));
      return;
    }
    waiting_.push_back(std::move(p));
    connect();
    return;
  }
  waiting_.push_back(std::move(p));
}

void IoConnection::connect() {
  state_ = State::connecting;
  const auto gen = generation_;
  timer_.expires_at(Clock::now() + client_.options().timeout);
  timer_.async_wait([this, gen](boost::system::error_code ec) {
    if (ec || gen != generation_ || state_ != State::connecting) return;
    next_connect_ = Clock::now() + client_.options().retry_interval;
    fail_all("Redis " + client_.options().host + ":" + std::to_string(client_.options().port) +
             " did not accept a connection in time");
  });
  const auto& o = client_.options();
  resolver_.async_resolve(o.host, std::to_string(o.port), [this, gen](boost::system::error_code ec, tcp::resolver::results_type results) {
    if (gen != generation_) return;
    if (ec) {
      next_connect_ = Clock::now() + client_.options().retry_interval;
      fail_all("Redis " + client_.options().host + " cannot be resolved: " + ec.message());
      return;
    }
    net::async_connect(socket_, results, [this, gen](boost::system::error_code ec2, const tcp::endpoint&) {
      if (gen != generation_) return;
      if (ec2) {
        next_connect_ = Clock::now() + client_.options().retry_interval;
        fail_all("Redis " + client_.options().host + ":" + std::to_string(client_.options().port) +
                 " is unreachable: " + ec2.message());
        return;
      }
      on_connected();
    });
  });
}

void IoConnection::on_connected() {
  boost::system::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
  socket_.set_option(net::socket_base::keep_alive(true), ec);
  timer_.cancel();
  if (reader_ != nullptr) redisReaderFree(reader_);
  reader_ = redisReaderCreate();
  if (reader_ == nullptr) {
    fail_all("out of memory");
    return;
  }
  state_ = State::open;
  loaded_.clear();
  {
    std::lock_guard lock(client_.mutex_);
    ++client_.stats_.connects;
  }
  // No connection_epoch() bump here: that one follows the client's own connection, whose ledger
  // re-checks the counters on every tick; a reserve on a Redis that came back empty is refused by
  // the scripts themselves (no `ready` key), and a per-thread reconnect must not make readiness
  // flap. AUTH and SELECT go first, and nothing else until both answered OK.
  const auto& o = client_.options();
  const auto deadline = Clock::now() + o.timeout;
  if (!o.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!o.username.empty()) auth.push_back(o.username);
    auth.push_back(o.password);
    if (write_command(Pending{std::move(auth), nullptr, nullptr, deadline, true})) ++setup_left_;
  }
  if (o.db != 0 && write_command(Pending{{"SELECT", std::to_string(o.db)}, nullptr, nullptr, deadline, true}))
    ++setup_left_;
  if (setup_left_ > 0) state_ = State::setting_up;
  else release_waiting();
  read();
}

void IoConnection::release_waiting() {
  state_ = State::open;
  auto waiting = std::move(waiting_);
  waiting_.clear();
  // Their time starts now: the connect and the set-up are not theirs to wait for.
  const auto deadline = Clock::now() + client_.options().timeout;
  for (auto& p : waiting) {
    p.deadline = deadline;
    write_command(std::move(p));
  }
}

bool IoConnection::write_command(Pending p) {
  if (p.script != nullptr && loaded_.insert(p.script).second) {
    // First use on this connection: EVAL loads the script, so no EVALSHA comes back NOSCRIPT.
    p.argv[0] = "EVAL";
    p.argv[1] = p.script->text;
  }
  std::vector<const char*> a;
  std::vector<std::size_t> l;
  a.reserve(p.argv.size());
  l.reserve(p.argv.size());
  for (const auto& s : p.argv) {
    a.push_back(s.data());
    l.push_back(s.size());
  }
  char* cmd = nullptr;
  const long long n = redisFormatCommandArgv(&cmd, static_cast<int>(a.size()), a.data(), l.data());
  if (n < 0 || cmd == nullptr) {
    if (p.done) p.done(std::unexpected(ReplyError{"cannot format the Redis command"}));
    return false;
  }
  out_.append(cmd, static_cast<std::size_t>(n));
  redisFreeCommand(cmd);
  if (p.script == nullptr) p.argv.clear();
  const bool first = inflight_.empty();
  inflight_.push_back(std::move(p));
  if (first) arm_timer();
  flush();
  return true;
}

void IoConnection::flush() {
  if (write_busy_ || out_.empty() || (state_ != State::open && state_ != State::setting_up)) return;
  writing_.swap(out_);
  write_busy_ = true;
  const auto gen = generation_;
  net::async_write(socket_, net::buffer(writing_), [this, gen](boost::system::error_code ec, std::size_t) {
    if (gen != generation_) return;
    write_busy_ = false;
    writing_.clear();
    if (ec) {
      fail_all("Redis connection failed: " + ec.message());
      return;
    }
    {
      std::lock_guard lock(client_.mutex_);
      ++client_.stats_.batches;
    }
    flush();
  });
}

void IoConnection::read() {
  const auto gen = generation_;
  socket_.async_read_some(net::buffer(in_), [this, gen](boost::system::error_code ec, std::size_t n) {
    if (gen != generation_) return;
    if (ec) {
      fail_all(ec == net::error::eof ? std::string("Redis closed the connection")
                                     : "Redis connection failed: " + ec.message());
      return;
    }
    if (redisReaderFeed(reader_, in_.data(), n) != REDIS_OK) {
      fail_all("Redis reply could not be read");
      return;
    }
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
        fail_all("Redis sent a malformed reply");
        return;
      }
      if (raw == nullptr) break;
      on_reply(raw);
      if (gen != generation_) return;  // that reply closed the connection
    }
    read();
  });
}

void IoConnection::on_reply(void* raw) {
  Reply reply = detail::copy_reply(raw);
  freeReplyObject(raw);
  if (inflight_.empty()) {
    fail_all("Redis sent a reply nothing asked for");
    return;
  }
  Pending p = std::move(inflight_.front());
  inflight_.pop_front();
  if (p.internal) {
    if (reply.type == Reply::Type::error) {
      next_connect_ = Clock::now() + client_.options().retry_interval;
      fail_all("Redis refused the connection's set-up: " + reply.str);
      return;
    }
    if (--setup_left_ == 0) release_waiting();
    return;
  }
  if (p.script != nullptr && reply.type == Reply::Type::error && reply.str.starts_with("NOSCRIPT")) {
    // Flushed scripts (SCRIPT FLUSH, or a restart behind a proxy): send it again as EVAL, behind
    // what is already on the wire.
    loaded_.erase(p.script);
    p.argv[0] = "EVALSHA";
    p.argv[1] = p.script->sha1;
    write_command(std::move(p));
    return;
  }
  client_.reachable_ = true;
  {
    std::lock_guard lock(client_.mutex_);
    ++client_.stats_.commands;
  }
  p.done(std::move(reply));
}

void IoConnection::arm_timer() {
  if (inflight_.empty()) return;
  const auto gen = generation_;
  timer_.expires_at(inflight_.front().deadline);
  timer_.async_wait([this, gen](boost::system::error_code ec) {
    if (ec || gen != generation_ || (state_ != State::open && state_ != State::setting_up)) return;
    if (inflight_.empty()) return;  // armed again by the next command written
    if (Clock::now() >= inflight_.front().deadline) {
      fail_all("Redis did not answer within " + std::to_string(client_.options().timeout.count()) + " ms");
      return;
    }
    arm_timer();
  });
}

void IoConnection::fail_all(const std::string& why) {
  ++generation_;
  state_ = State::closed;
  setup_left_ = 0;
  boost::system::error_code ec;
  socket_.close(ec);
  timer_.cancel();
  resolver_.cancel();
  out_.clear();
  writing_.clear();
  write_busy_ = false;
  loaded_.clear();
  std::deque<Pending> failed = std::move(inflight_);
  inflight_.clear();
  for (auto& p : waiting_) failed.push_back(std::move(p));
  waiting_.clear();
  if (!failed.empty()) client_.reachable_ = false;
  std::size_t n = 0;
  for (const auto& p : failed) n += p.internal ? 0 : 1;
  {
    std::lock_guard lock(client_.mutex_);
    client_.stats_.failures += n;
  }
  for (auto& p : failed)
    if (!p.internal && p.done) p.done(std::unexpected(ReplyError{why}));
}

}  // namespace tollgate::store::redis
