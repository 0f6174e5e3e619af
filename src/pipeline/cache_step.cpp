#include "pipeline/cache_step.hpp"
#include "core/json_parse.hpp"

#include <algorithm>

#include "cache/request_key.hpp"
#include "core/await_answer.hpp"
#include "pipeline/replay.hpp"
#include "pipeline/request_body.hpp"
#include "pipeline/response_facts.hpp"
#include "pipeline/response_headers.hpp"
#include "pipeline/run_finish.hpp"

namespace tollgate::pipeline {

std::string cache_caller(const RunState& st) {
  const auto& p = st.principal();
  return p.key ? "key:" + p.key->token_hash : p.is_master ? "master" : "anonymous";
}

net::awaitable<bool> answer_from_cache(RunState& st) {
  const auto& cs = st.cfg.litellm_settings.cache;
  // Only chat answers are cached: the cache replays a stream as chat chunks (cache/stream_answer).
  if (!st.svc->response_cache || st.call.api != providers::CallApi::chat || !cs.caches(st.call.call_type)) co_return false;
  // A stored conversation, a stored prompt, MCP servers or a built-in tool: the answer depends on
  // what the body does not show (two conversations would share a key), and only the native body
  // carries them (a cached call is sent the chat translation: Attempter::native_adapter).
  if (!st.call.native_only_feature.empty() || !st.call.hidden_input.empty()) co_return false;
  const auto& ctl = st.call.cache_controls;
  st.cache_key = cache::request_key(ctl.cache_namespace.value_or(cs.cache_namespace), cache_caller(st), st.call.model,
                                    caller_body(st));
  st.cache_store = !ctl.no_store;
  if (ctl.no_cache) co_return false;
  st.cache_looked_up = true;
  auto* rc = st.svc->response_cache.get();
  std::function<void(std::function<void(std::optional<cache::CachedAnswer>)>)> start =
      [rc, key = st.cache_key](std::function<void(std::optional<cache::CachedAnswer>)> done) { rc->get(key, std::move(done)); };
  std::function<void(std::optional<cache::CachedAnswer>)> late = [](std::optional<cache::CachedAnswer>) {};
  // The lookup may take at most the Redis timeout, and never the request's deadline.
  const auto until = std::min(st.deadline, st.svc->clock->now() + st.cfg.tollgate_settings.redis_timeout);
  auto got = co_await core::await_answer<std::optional<cache::CachedAnswer>>(std::move(start), until, std::move(late));
  if (!got || !*got) co_return false;
  cache::CachedAnswer& hit = **got;
  const std::int64_t age_ms = std::max<std::int64_t>(0, wall_ms() - hit.stored_unix_ms);
  if (ctl.s_maxage && age_ms > *ctl.s_maxage * 1000) co_return false;
  boost::system::error_code ec;
  auto parsed = core::parse_json(hit.completion, ec);
  if (ec || !parsed.is_object()) co_return false;
  st.cache_hit = true;
  st.cache_saved = hit.cost_nanos;
  st.cache_age = milliseconds(age_ms);
  st.usage = providers::usage_from_openai_response(parsed.as_object());
  note_completion(st, parsed.as_object());
  st.step_stop("response cache hit (" + std::string(rc->type()) + ", age " + std::to_string(age_ms / 1000) +
               " s): no upstream call, $0");
  auto headers = response_headers(st, std::nullopt);
  co_await send_stored_answer(st, parsed.as_object(), std::move(hit.completion), headers);
  finish_run(st, true, std::nullopt);
  co_return true;
}

void keep_for_cache(RunState& st, std::string completion_json) {
  if (!st.cache_store || st.cache_hit) return;
  st.cache_answer = std::move(completion_json);
}

void store_in_cache(RunState& st, bool ok, budget::Nanos cost) {
  if (!ok || !st.cache_store || st.cache_hit || st.cache_answer.empty() || !st.svc->response_cache) return;
  if (!st.trace.degradation.empty() || !st.degradation.empty() || !st.stream_status.empty() || st.unknown) return;
  const auto& cs = st.cfg.litellm_settings.cache;
  const std::int64_t ttl = st.call.cache_controls.ttl.value_or(cs.effective_ttl_seconds());
  cache::CachedAnswer a{std::move(st.cache_answer), cost, wall_ms()};
  st.cache_answer.clear();
  st.svc->response_cache->put(st.cache_key, a, std::chrono::seconds(ttl));
}

net::awaitable<void> send_stored_answer(RunState& st, const json::object& completion, std::string raw,
                                        Headers headers) {
  if (!st.call.stream) {
    if (!co_await st.sink.send_completion(completion, std::move(raw), headers)) st.gone = true;
    co_return;
  }
  if (!co_await st.sink.begin_stream(headers)) {
    st.gone = true;
    co_return;
  }
  st.first_byte_ms = wall_ms();
  const auto chunks = completion_to_chunks(completion, st.call.include_usage);
  providers::Usage u;
  if (auto* uv = completion.if_contains("usage")) u = providers::usage_from_openai(*uv);
  if (!co_await st.sink.stream_chunks(chunks, u)) {
    st.gone = true;
    co_return;
  }
  const std::optional<core::Error> no_error;
  co_await st.sink.end_stream(no_error);
}

}  // namespace tollgate::pipeline
