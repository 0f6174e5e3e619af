#pragma once
/// Replaying a stored answer: a complete OpenAI `chat.completion` turned into the
/// `chat.completion.chunk` events a streaming client expects (OpenAI Chat Completions streaming
/// format: a role+content delta per choice, a finish_reason chunk, and a usage chunk when
/// `stream_options.include_usage` was asked). Used by the stale_cache degradation mode.

#include <string>
#include <vector>

#include <boost/json/object.hpp>

namespace tollgate::pipeline {

/// The chunk payloads (JSON text, no SSE framing), in order.
std::vector<std::string> completion_to_chunks(const boost::json::object& completion, bool include_usage);

}  // namespace tollgate::pipeline
