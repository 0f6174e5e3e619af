#pragma once
/// Embeddings on Amazon Bedrock through InvokeModel (`POST /model/{modelId}/invoke`, SigV4,
/// service "bedrock"; https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html).
/// The model id decides the body (as LiteLLM's `bedrock/amazon.titan-embed-*`, `bedrock/cohere.embed-*`):
///   - Amazon Titan Text Embeddings v2 (`amazon.titan-embed-text-v2:0`,
///     https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html):
///     `{"inputText", "dimensions"? (256 | 512 | 1024), "normalize": true}` →
///     `{"embedding": [..], "inputTextTokenCount"}`; v1 (`amazon.titan-embed-text-v1`,
///     `amazon.titan-embed-g1-text-02`): `{"inputText"}` only, 1536 dimensions.
///     ONE text per call. An array of several inputs is refused with a 400 naming the limit
///     (LiteLLM instead makes one upstream call per item; here every upstream call is one
///     attempt of the one attempt loop — admitted, reserved, settled — so a fan-out inside an
///     attempt would bill N calls against one reservation and retry them as one).
///   - Cohere Embed v3 on Bedrock (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`,
///     https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html):
///     `{"texts": [..] (1..96), "input_type": "search_document"}` → `{"embeddings": [[..]], "id",
///     "texts"}` (or `{"embeddings": {"float": [[..]]}}` when embedding types were asked).
///     The body reports no usage: the attempt is charged its reservation (the input bound),
///     marked unknown, like any 2xx whose usage is missing.
/// Token-id inputs cannot be sent to either (they take text): refused with a 400. Answers are
/// returned in OpenAI's embeddings shape (providers/embeddings_list.hpp); errors are read as
/// Bedrock's (errors.hpp).

#include <optional>
#include <string_view>

#include <boost/json/object.hpp>

#include "providers/provider.hpp"

namespace tollgate::providers::bedrock {

/// The body family of a Bedrock embedding model.
enum class EmbedFamily { titan_v2, titan_v1, cohere };

/// The family of a Bedrock model id (inference-profile prefixes such as `us.` and ARNs
/// included), nullopt when it is not a known embedding model.
std::optional<EmbedFamily> embed_family(std::string_view model_id);

/// Most texts in one Cohere Embed call on Bedrock.
inline constexpr std::size_t kCohereMaxTexts = 96;

/// Why `request` (an OpenAI embeddings body, already validated by api/operation_decode) cannot
/// be sent to a model of `family`: several inputs to Titan, more than 96 to Cohere, token-id
/// inputs, `dimensions` the model does not offer (Titan v2: 256/512/1024; Titan v1: 1536;
/// Cohere v3: 1024). nullopt when it can.
std::optional<Provider::Refusal> embeddings_refusal(EmbedFamily family, const boost::json::object& request);

/// The InvokeModel body for `request` (assumed accepted by embeddings_refusal).
boost::json::object embeddings_invoke_body(EmbedFamily family, const boost::json::object& request);

/// An InvokeModel answer of `family` as an OpenAI embeddings list for `model`, with its usage
/// (Titan: inputTextTokenCount; Cohere: not reported). An error string when the body is not
/// such an answer.
std::expected<Provider::Parsed, std::string> embeddings_from_invoke(EmbedFamily family, std::string_view body,
                                                                    std::string_view model);

/// The adapter serving embeddings for a Bedrock deployment whose model is an embedding model
/// (nullptr otherwise): BedrockProvider::for_api returns it.
const Provider* embeddings_adapter(const config::Deployment& d);

}  // namespace tollgate::providers::bedrock
