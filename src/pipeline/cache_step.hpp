#pragma once
/// The response cache in a run (issue 11 §4; LiteLLM's litellm_settings.cache): before any
/// target is planned, an identical earlier answer (cache/request_key.hpp) is served from the
/// cache (cache/response_cache.hpp) — no admission against budgets, no upstream call, $0 — and
/// after a full answer it is stored. Rate limits are admitted before the lookup, so a hit counts
/// against them like any request. Internal to pipeline/.

#include <string>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// Who the cache keys an answer to: "key:<token hash>", "master" or "anonymous".
std::string cache_caller(const RunState& st);

/// Looks the request up when caching applies to it (cache on, its call type supported, no
/// `no-cache`) and, on a hit no older than its `s-maxage`, answers with it (JSON, or an event
/// stream in the caller's format) and finishes the run. Returns whether it answered. Sets the
/// run's cache key and whether its answer is to be stored either way.
net::awaitable<bool> answer_from_cache(RunState& st);

/// Keeps a served answer (an OpenAI chat.completion JSON text) to store when the run ends.
void keep_for_cache(RunState& st, std::string completion_json);

/// Stores the run's kept answer (keep_for_cache), at `cost` (what it was charged, nano-dollars):
/// only a full answer (not degraded, not a cut or unknown stream, not from the cache itself),
/// unless the request said `no-store`. A non-streamed answer is stored just before it is sent;
/// finish_run stores a stream's. Once stored, the kept answer is gone (a second call is a no-op).
void store_in_cache(RunState& st, bool ok, budget::Nanos cost);

/// Answers with a stored chat.completion: as JSON, or replayed as an event stream (the sink
/// renders the caller's format). Used by cache hits and the stale_cache degradation mode.
net::awaitable<void> send_stored_answer(RunState& st, const json::object& completion, std::string raw,
                                        Headers headers);

}  // namespace tollgate::pipeline
