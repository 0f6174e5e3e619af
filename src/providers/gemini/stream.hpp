#pragma once
/// Decoding of Gemini's `streamGenerateContent?alt=sse` stream into OpenAI chunks.
///
/// Each SSE `data:` is one partial GenerateContentResponse (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent):
/// candidates[].content.parts with the new text or whole functionCall parts, the candidate's
/// finishReason on its last chunk, and `usageMetadata` (cumulative: the last one is the bill)
/// on chunks. There is no terminal marker: the stream is complete once every candidate has a
/// finish reason. An `{"error":{...}}` event is an error inside the stream.

#include <memory>
#include <string>

#include "providers/provider.hpp"

namespace tollgate::providers::gemini {

/// A decoder for one stream; `model`: the name put in the chunks when the upstream gives no
/// modelVersion; `include_usage`: the client asked for the usage chunk (sent once the stream is
/// finished, with empty `choices`).
std::unique_ptr<StreamDecoder> make_stream_decoder(std::string model, bool include_usage);

}  // namespace tollgate::providers::gemini
