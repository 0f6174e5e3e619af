#pragma once
/// Amazon SageMaker real-time endpoints as a Provider (InvokeEndpoint,
/// https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html):
/// `POST https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{EndpointName}/invocations`,
/// SigV4-signed with service "sagemaker" (the signer Bedrock uses). LiteLLM's two prefixes:
/// `sagemaker/` sends a Hugging Face TGI body and reads `[{"generated_text"}]`;
/// `sagemaker_chat/` sends the OpenAI chat body and reads an OpenAI chat.completion.

#include "providers/provider.hpp"

namespace tollgate::providers::sagemaker {

/// The process-wide SageMaker adapter (both prefixes; `Deployment::provider_prefix` tells them apart).
const Provider& adapter();

}  // namespace tollgate::providers::sagemaker
