#include "telemetry/http_post.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

namespace tollgate::telemetry {
namespace {

namespace net = boost::asio;

std::chrono::milliseconds parse_retry_after(std::string_view v) {
  std::int64_t seconds = 0;
  if (v.empty()) return std::chrono::milliseconds(0);
  for (char c : v) {
    if (c < '0' || c > '9') return std::chrono::milliseconds(0);  // an HTTP-date: the caller's backoff
    seconds = seconds * 10 + (c - '0');
    if (seconds > 86400) break;
  }
  return std::chrono::milliseconds(seconds * 1000);
}

}  // namespace

PostClient::PostClient(const http::ClientOptions& client) : pool_(ioc_, client) {}

PostClient::~PostClient() = default;

PostResult PostClient::post(const http::Target& target, const std::vector<std::pair<std::string, std::string>>& headers,
                            const std::string& body, std::chrono::milliseconds timeout) {
  http::UpstreamPool* previous = http::UpstreamPool::current();
  http::UpstreamPool::install(&pool_);
  struct Restore {
    http::UpstreamPool* p;
    ~Restore() { http::UpstreamPool::install(p); }
  } restore{previous};
  http::OutgoingRequest req;
  req.target = target;
  req.headers = headers;
  req.body = body;
  PostResult out;
  net::co_spawn(
      ioc_,
      [&]() -> net::awaitable<void> {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        http::PooledTransport transport;
        auto ex = co_await transport.start(req, deadline, nullptr);
        if (!ex) {
          out.error = ex.error().message;
          co_return;
        }
        auto got = co_await (*ex)->read_all(64 * 1024, deadline);
        out.status = (*ex)->status();
        out.retry_after = parse_retry_after((*ex)->header("retry-after"));
        if (got) (*ex)->finish();  // the connection goes back to the pool, kept alive
      },
      net::detached);
  ioc_.restart();
  ioc_.run();
  return out;
}

PostResult PostClient::post_retrying(const http::Target& target,
                                     const std::vector<std::pair<std::string, std::string>>& headers,
                                     const std::string& body, std::chrono::milliseconds timeout,
                                     const RetryPolicy& policy,
                                     const std::function<bool(std::chrono::milliseconds)>& wait,
                                     const std::function<void()>& before_each) {
  auto backoff = policy.first_backoff;
  PostResult r;
  for (int n = 0; n < std::max(1, policy.max_attempts); ++n) {
    if (before_each) before_each();
    r = post(target, headers, body, timeout);
    if (r.ok() || !r.retryable() || n + 1 >= policy.max_attempts) return r;
    const auto d = std::min(r.retry_after.count() > 0 ? r.retry_after : backoff, policy.max_wait);
    backoff *= 2;
    if (!wait(d)) return r;
  }
  return r;
}

}  // namespace tollgate::telemetry
