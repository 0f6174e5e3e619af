#pragma once
/// The spans of a run, rendered from its state (an observer of the decision trace): one span for
/// the logical operation, covering every retry and fallback (OpenTelemetry GenAI semantic
/// conventions: name `chat {gen_ai.request.model}`, kind CLIENT, gen_ai.* attributes, and
/// Tollgate's policy vocabulary under tollgate.*), and one child span per upstream attempt, whose
/// id the attempt sent upstream in `traceparent`. Internal to pipeline/.

#include <optional>
#include <vector>

#include "pipeline/run_state.hpp"
#include "telemetry/span.hpp"

namespace tollgate::pipeline {

/// The run's spans into `out` (resized to 1 + attempts; its spans' buffers are reused, so a
/// thread that renders into the same vector allocates nothing once it has grown), operation
/// first; call from finish_run (after the trace's totals are set).
void run_spans(const RunState& st, bool ok, std::optional<int> status, std::vector<telemetry::Span>& out);

/// gen_ai.provider.name of a LiteLLM provider prefix (openai, azure.ai.openai, anthropic,
/// aws.bedrock, gcp.gemini, gcp.vertex_ai, ...; the prefix itself when the conventions name none).
std::string genai_provider_name(const std::string& provider_prefix);

}  // namespace tollgate::pipeline
