#include "store/redis/redis_client.hpp"

#include "store/redis/io_connection.hpp"

#include <hiredis/hiredis.h>
#include <openssl/sha.h>

#include <charconv>
#include <future>
#include <utility>

namespace tollgate::store::redis {
namespace {

Reply copy(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER: out.type = Reply::Type::integer; out.integer = r->integer; break;
    case REDIS_REPLY_STRING: out.type = Reply::Type::string; out.str.assign(r->str, r->len); break;
    case REDIS_REPLY_STATUS: out.type = Reply::Type::status; out.str.assign(r->str, r->len); break;
    case REDIS_REPLY_ERROR: out.type = Reply::Type::error; out.str.assign(r->str, r->len); break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::array;
      out.elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy(r->element[i]));
      break;
    default: out.type = Reply::Type::nil; break;
  }
  return out;
}

// The connection attached on this thread (RedisClient::attach) and the client it belongs to.
thread_local IoConnection* tl_connection = nullptr;
thread_local const RedisClient* tl_owner = nullptr;

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// Sends one command and reads its reply on `ctx`; nullopt on a transport failure.
std::optional<Reply> roundtrip(redisContext* ctx, const std::vector<std::string>& argv) {
  std::vector<const char*> a;
  std::vector<std::size_t> l;
  for (const auto& s : argv) {
    a.push_back(s.data());
    l.push_back(s.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(ctx, static_cast<int>(a.size()), a.data(), l.data()));
  if (r == nullptr) return std::nullopt;
  Reply out = copy(r);
  freeReplyObject(r);
  return out;
}

}  // namespace

Reply detail::copy_reply(const void* hiredis_reply) { return copy(static_cast<const redisReply*>(hiredis_reply)); }

std::unique_ptr<IoConnection> RedisClient::attach(boost::asio::io_context& ioc) {
  auto c = std::make_unique<IoConnection>(ioc, *this);
  tl_connection = c.get();
  tl_owner = this;
  return c;
}

IoConnection* RedisClient::local() const noexcept { return tl_owner == this ? tl_connection : nullptr; }

void RedisClient::detach(const IoConnection* c) noexcept {
  if (tl_connection == c) {
    tl_connection = nullptr;
    tl_owner = nullptr;
  }
}

std::optional<long long> Reply::as_integer() const {
  if (type == Type::integer) return integer;
  if (type != Type::string) return std::nullopt;
  long long v = 0;
  auto [p, ec] = std::from_chars(str.data(), str.data() + str.size(), v);
  if (ec != std::errc() || p != str.data() + str.size()) return std::nullopt;
  return v;
}

RedisOptions redis_options_for(const config::RedisEndpoint& endpoint) {
  RedisOptions o;
  o.host = endpoint.host;
  o.port = endpoint.port;
  o.username = endpoint.username;
  o.password = endpoint.password;
  o.db = endpoint.db;
  return o;
}

Script::Script(std::string t) : text(std::move(t)) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : digest) {
    sha1.push_back(hex[c >> 4]);
    sha1.push_back(hex[c & 15]);
  }
}

RedisClient::RedisClient(RedisOptions options) : options_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

RedisClient::~RedisClient() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  drop();
}

void RedisClient::submit(std::vector<std::string> argv, ReplyDone done) {
  if (IoConnection* c = local()) {
    c->send(std::move(argv), nullptr, std::move(done));
    return;
  }
  enqueue(Command{std::move(argv), nullptr, std::move(done)});
}

void RedisClient::submit_in_order(std::vector<std::string> argv, ReplyDone done) {
  enqueue(Command{std::move(argv), nullptr, std::move(done)});
}

void RedisClient::eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                       ReplyDone done) {
  auto argv = eval_argv(script, std::move(keys), std::move(args));
  if (IoConnection* c = local()) {
    c->send(std::move(argv), &script, std::move(done));
    return;
  }
  enqueue(Command{std::move(argv), &script, std::move(done)});
}

std::vector<std::string> RedisClient::eval_argv(const Script& script, std::vector<std::string> keys,
                                                std::vector<std::string> args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.emplace_back("EVALSHA");
  argv.push_back(script.sha1);
  argv.push_back(std::to_string(keys.size()));
  for (auto& k : keys) argv.push_back(std::move(k));
  for (auto& a : args) argv.push_back(std::move(a));
  return argv;
}

void RedisClient::enqueue(Command c) {
  {
    std::lock_guard lock(mutex_);
    if (!stop_) {
      queue_.push_back(std::move(c));
      wake_.notify_one();
      return;
    }
  }
  c.done(std::unexpected(ReplyError{"the Redis client is shutting down"}));
}

// Always on the client's thread, never on an attached connection: the caller blocks, and on a
// worker thread its own event loop would be the one to read the reply.
ReplyResult RedisClient::call(std::vector<std::string> argv) {
  auto p = std::make_shared<std::promise<ReplyResult>>();
  auto f = p->get_future();
  enqueue(Command{std::move(argv), nullptr, [p](ReplyResult r) { p->set_value(std::move(r)); }});
  return f.get();
}

ReplyResult RedisClient::call_eval(const Script& script, std::vector<std::string> keys, std::vector<std::string> args) {
  auto p = std::make_shared<std::promise<ReplyResult>>();
  auto f = p->get_future();
  enqueue(Command{eval_argv(script, std::move(keys), std::move(args)), &script,
                  [p](ReplyResult r) { p->set_value(std::move(r)); }});
  return f.get();
}

bool RedisClient::reachable() const noexcept { return reachable_.load(std::memory_order_relaxed); }

ClientStats RedisClient::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void RedisClient::drop() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
  loaded_.clear();
}

bool RedisClient::connect() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_connect_) return false;
  ctx_ = redisConnectWithTimeout(options_.host.c_str(), options_.port, to_timeval(options_.timeout));
  bool ok = ctx_ != nullptr && ctx_->err == 0 && redisSetTimeout(ctx_, to_timeval(options_.timeout)) == REDIS_OK;
  if (ok) redisEnableKeepAlive(ctx_);
  if (ok && !options_.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!options_.username.empty()) auth.push_back(options_.username);
    auth.push_back(options_.password);
    auto r = roundtrip(ctx_, auth);
    ok = r && r->type != Reply::Type::error;
  }
  if (ok && options_.db != 0) {
    auto r = roundtrip(ctx_, {"SELECT", std::to_string(options_.db)});
    ok = r && r->type != Reply::Type::error;
  }
  if (!ok) {
    drop();
    next_connect_ = std::chrono::steady_clock::now() + options_.retry_interval;
    reachable_ = false;
    return false;
  }
  ++epoch_;
  std::lock_guard lock(mutex_);
  ++stats_.connects;
  return true;
}

void RedisClient::fail(std::vector<Command>& batch, std::size_t from, const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    stats_.failures += batch.size() - from;
  }
  for (std::size_t i = from; i < batch.size(); ++i) batch[i].done(std::unexpected(ReplyError{why}));
}

void RedisClient::run() {
  std::vector<Command> batch;
  for (;;) {
    batch.clear();
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping with nothing left
      while (!queue_.empty()) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (ctx_ == nullptr && !connect()) {
      fail(batch, 0, "Redis " + options_.host + ":" + std::to_string(options_.port) + " is unreachable");
      continue;
    }
    // One write for the whole batch, then the replies in order. A script this connection has not
    // run yet goes as EVAL (which also loads it), so a first EVALSHA never comes back NOSCRIPT and
    // has to be sent again behind commands queued after it.
    for (auto& c : batch) {
      if (c.script != nullptr && loaded_.insert(c.script).second) {
        c.argv[0] = "EVAL";
        c.argv[1] = c.script->text;
      }
      std::vector<const char*> a;
      std::vector<std::size_t> l;
      for (const auto& s : c.argv) {
        a.push_back(s.data());
        l.push_back(s.size());
      }
      redisAppendCommandArgv(ctx_, static_cast<int>(a.size()), a.data(), l.data());
    }
    {
      std::lock_guard lock(mutex_);
      ++stats_.batches;
    }
    for (std::size_t i = 0; i < batch.size(); ++i) {
      void* raw = nullptr;
      if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
        const std::string why = std::string("Redis connection failed: ") + (ctx_->err ? ctx_->errstr : "no reply");
        drop();
        reachable_ = false;
        fail(batch, i, why);
        break;
      }
      auto* r = static_cast<redisReply*>(raw);
      Reply reply = copy(r);
      freeReplyObject(r);
      Command& c = batch[i];
      if (c.script != nullptr && reply.type == Reply::Type::error && reply.str.starts_with("NOSCRIPT")) {
        // The rest of the batch is already on the wire: read its replies, and send this one again
        // as EVAL (which loads the script) first thing in the next batch.
        loaded_.erase(c.script);
        c.argv[0] = "EVAL";
        c.argv[1] = c.script->text;
        std::lock_guard lock(mutex_);
        queue_.push_front(Command{std::move(c.argv), nullptr, std::move(c.done)});
        continue;
      }
      reachable_ = true;
      {
        std::lock_guard lock(mutex_);
        ++stats_.commands;
      }
      c.done(std::move(reply));
    }
  }
}

}  // namespace tollgate::store::redis
