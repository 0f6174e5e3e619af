#pragma once
/// Amazon Bedrock as a Provider: OpenAI chat requests sent to the Converse API
/// (`POST /model/{modelId}/converse`) and ConverseStream (`.../converse-stream`, AWS
/// event-stream framing), signed with SigV4 (service "bedrock"), answers translated back
/// (converse.hpp, converse_stream.hpp), errors read by errors.hpp.
/// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html

#include "providers/provider.hpp"
#include "providers/bedrock/sigv4.hpp"

namespace tollgate::providers::bedrock {

/// The process-wide Bedrock adapter.
const Provider& adapter();

/// The deployment's AWS credentials and region (Deployment::cloud, which the loader fills from
/// litellm_params `aws_*` or the AWS_* environment variables).
aws::Credentials credentials_of(const config::Deployment& d);

/// Why `d` cannot be signed for (no access key id, no secret, no region), nullopt when it can.
std::optional<std::string> aws_credentials_error(const config::Deployment& d);

/// Adds the SigV4 headers for `service` to `req` (its target, body and headers as they will
/// be sent), signing at the current time.
void sign_request(http::OutgoingRequest& req, const config::Deployment& d, std::string_view service);

/// `s` as one URL path segment (RFC 3986 unreserved kept, everything else %XX: a model id's ':'
/// is sent as %3A, an ARN's '/' as %2F).
std::string path_segment(std::string_view s);

}  // namespace tollgate::providers::bedrock
