#pragma once
/// What a run keeps of the answer for its span (OpenTelemetry GenAI conventions): the response
/// `id`, the choices' finish reasons (`gen_ai.response.id`, `gen_ai.response.finish_reasons`)
/// and, only with `tollgate_settings.otel.capture_content: true`, the prompt and answer as
/// `gen_ai.input.messages` / `gen_ai.output.messages` JSON (the conventions' message shape:
/// role, parts of type text / tool_call / tool_call_response, finish_reason), each bounded to
/// kCapturedBytes of text. Read from the OpenAI-shaped completion or stream chunks the client
/// receives, whichever provider answered. Internal to pipeline/.

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "pipeline/run_state.hpp"

namespace tollgate::pipeline {

/// Text kept per captured attribute (bytes of message content; the JSON stays valid).
inline constexpr std::size_t kCapturedBytes = 64 * 1024;

/// Forgets what an earlier attempt's answer said (call when an attempt starts).
void reset_response_facts(RunState& st);
/// Notes a non-streaming answer (an OpenAI chat.completion object).
void note_completion(RunState& st, const boost::json::object& completion);
/// Notes one chunk relayed to the client (an OpenAI chat.completion.chunk payload). Parses only
/// the first chunk and those with a finish reason, unless content is captured.
void note_stream_chunk(RunState& st, std::string_view chunk);
/// `gen_ai.output.messages` of the answer noted (capture_content only; "" when none was).
std::string output_messages_json(const RunState& st);
/// `gen_ai.input.messages` of the request's `messages` (OpenAI chat shape).
std::string input_messages_json(const boost::json::object& request_body);

}  // namespace tollgate::pipeline
