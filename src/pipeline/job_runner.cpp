#include "pipeline/job_runner.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "core/ids.hpp"

namespace tollgate::pipeline {
namespace net = boost::asio;
namespace json = boost::json;

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string error_body(const core::Error& e) {
  json::object inner;
  inner["message"] = e.message;
  inner["type"] = e.type;
  inner["code"] = e.code.empty() ? json::value(nullptr) : json::value(e.code);
  inner["status"] = e.status;
  json::object o;
  o["error"] = std::move(inner);
  return json::serialize(o);
}

/// Keeps what the attempt loop answers for a job (never streamed: jobs run non-streaming).
class CaptureSink final : public ResponseSink {
 public:
  net::awaitable<bool> send_completion(const json::object& completion, std::string raw, const Headers&) override {
    result = raw.empty() ? json::serialize(completion) : std::move(raw);
    co_return true;
  }
  net::awaitable<bool> send_json(int status, std::string body, const Headers&) override {
    this->status = status;
    error = std::move(body);
    co_return true;
  }
  net::awaitable<bool> send_error(const core::Error& e, const Headers&) override {
    status = e.status;
    error = error_body(e);
    co_return true;
  }
  net::awaitable<bool> begin_stream(const Headers&) override { co_return true; }
  net::awaitable<bool> stream_chunks(const std::vector<std::string>&, const providers::Usage&) override { co_return true; }
  net::awaitable<bool> end_stream(const std::optional<core::Error>&) override { co_return true; }
  void on_client_gone(std::function<void()>) override {}
  bool client_gone() const override { return false; }

  std::string result;
  std::string error;
  int status = 0;
};

}  // namespace

JobRunner::JobRunner(std::shared_ptr<Services> services, Resolve resolve, http::ClientOptions client, Options options)
    : s_(std::move(services)), resolve_(std::move(resolve)), client_(std::move(client)), options_(options) {}

JobRunner::~JobRunner() { stop(); }

void JobRunner::start() {
  if (!s_->store || thread_.joinable()) return;
  // Jobs an earlier process was running when it stopped are run again.
  if (auto running = s_->store->list_jobs(std::string("running"), 1000)) {
    for (auto job : *running) {
      job.status = "queued";
      job.updated_ms = now_ms();
      (void)s_->store->update_job(job);
    }
  }
  thread_ = std::thread([this] {
    http::UpstreamPool pool(ioc_, client_);
    http::UpstreamPool::install(&pool);
    net::co_spawn(ioc_, loop(), net::detached);
    ioc_.run();
    http::UpstreamPool::install(nullptr);
  });
}

void JobRunner::stop() {
  stopping_ = true;
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
}

net::awaitable<std::expected<store::JobRecord, std::string>> JobRunner::defer(store::JobRecord job) {
  if (!s_->store) co_return std::unexpected(std::string("no store is configured"));
  job.id = "job-" + core::new_uuid();
  job.status = "queued";
  job.created_ms = job.updated_ms = now_ms();
  auto store = s_->store;
  auto create = [store, job]() -> net::awaitable<std::expected<store::JobRecord, std::string>> {
    auto r = store->create_job(job);
    if (!r) co_return std::unexpected(r.error().message);
    co_return *r;
  };
  // Runs on the runner's thread (a blocking store write), resumes on the caller's.
  auto op = net::co_spawn(ioc_, create, net::use_awaitable);
  co_return co_await std::move(op);
}

bool JobRunner::group_open_for_traffic(const std::string& group) const {
  if (s_->circuits->feature_state(group) == policy::CircuitState::open) return false;
  const auto* members = s_->groups->find(group);
  if (!members) return false;
  for (auto i : *members)
    if (s_->circuits->available(i)) return true;
  return false;
}

net::awaitable<void> JobRunner::loop() {
  auto exec = co_await net::this_coro::executor;
  net::steady_timer timer(exec);
  while (!stopping_) {
    auto queued = s_->store->list_jobs(std::string("queued"), 50);
    if (queued) {
      for (auto& job : *queued) {
        if (stopping_) break;
        if (job.attempts > 0) {
          const auto shift = std::min<std::int64_t>(job.attempts - 1, 6);
          const auto wait = std::min<std::int64_t>(options_.first_backoff.count() << shift, 60000);
          if (now_ms() < job.updated_ms + wait) continue;
        }
        if (!group_open_for_traffic(job.model_group)) continue;
        co_await run_one(std::move(job));
      }
    }
    timer.expires_after(options_.poll);
    auto [ec] = co_await timer.async_wait(net::as_tuple(net::use_awaitable));
    (void)ec;
  }
}

net::awaitable<void> JobRunner::run_one(store::JobRecord job) {
  job.status = "running";
  ++job.attempts;
  job.updated_ms = now_ms();
  (void)s_->store->update_job(job);

  boost::system::error_code ec;
  auto parsed = json::parse(job.request_body, ec);
  ChatCall call;
  call.model = job.model_group;
  call.call_id = core::new_uuid();
  call.start = s_->clock->now();
  call.call_type = job.call_type.empty() ? "acompletion" : job.call_type;
  call.allow_degradation = false;
  if (!ec && parsed.is_object()) call.body = std::move(parsed.as_object());
  auto principal = ec ? std::expected<std::shared_ptr<const auth::Principal>, core::Error>(std::unexpected(
                            core::Error::gateway(500, "api_error", "the stored request body is not JSON")))
                      : resolve_(job, call.body);
  if (!principal) {
    job.status = "failed";
    job.error = error_body(principal.error());
    job.updated_ms = now_ms();
    (void)s_->store->update_job(job);
    spdlog::warn("deferred job {} failed: {}", job.id, principal.error().message);
    co_return;
  }
  call.principal = std::move(*principal);
  CaptureSink sink;
  const RunOutcome out = co_await run_chat(s_, call, sink);
  job.request_id = call.call_id;
  job.updated_ms = now_ms();
  if (out.served) {
    job.status = "succeeded";
    job.result = std::move(sink.result);
    job.error.clear();
    spdlog::info("deferred job {} completed (request {})", job.id, job.request_id);
  } else if (out.retryable && job.attempts < options_.max_runs) {
    job.status = "queued";
    job.error = std::move(sink.error);
  } else {
    job.status = "failed";
    job.error = std::move(sink.error);
    spdlog::warn("deferred job {} failed after {} run(s)", job.id, job.attempts);
  }
  (void)s_->store->update_job(job);
}

}  // namespace tollgate::pipeline
