#pragma once
/// Bedrock (and SageMaker runtime) errors into the classifier's terms. AWS REST-JSON errors are
/// an HTTP status, the exception name in the `x-amzn-ErrorType` header
/// ("ThrottlingException:http://internal.amazon.com/coral/...") and/or the body's `__type`
/// ("com.amazon.coral.service#ThrottlingException"), and `{"message": ...}` (or "Message").
/// Bedrock's documented errors (API_runtime_Converse.html "Errors"): AccessDeniedException 403,
/// InternalServerException 500, ModelErrorException 424, ModelNotReadyException 429,
/// ModelTimeoutException 408, ResourceNotFoundException 404, ServiceQuotaExceededException 400,
/// ServiceUnavailableException 503, ThrottlingException 429, ValidationException 400; the AWS
/// common errors UnrecognizedClientException / InvalidSignatureException /
/// ExpiredTokenException 403. ConverseStream reports the stream's own as exception events
/// (throttlingException, modelStreamErrorException, validationException,
/// internalServerException, serviceUnavailableException).

#include <string>
#include <string_view>

#include "policy/failure.hpp"

namespace tollgate::providers::aws {

/// The bare exception name of an `x-amzn-ErrorType` value or a `__type` ("...#Name" or
/// "Name:uri"), with its first letter upper-cased (stream events spell it throttlingException).
std::string exception_name(std::string_view raw);

/// An AWS error response: `error_type` = `error_code` = the exception name (header first, else
/// the body's `__type`/`code`), `message` from the body; `error_body` when an exception is named
/// and the body is a JSON object with a message (AWS itself answered with an error: unbilled;
/// a proxy's bare `{"message"}` is not evidence). The class table
/// (policy/failure.cpp) knows the exception names; context overflow is a ValidationException
/// whose message says "Input is too long" / "too many input tokens".
policy::Outcome outcome_from_aws_error(int status, std::string_view body, std::string_view error_type_header);

/// The HTTP status Bedrock documents for an exception name (stream exceptions carry none):
/// 429 throttling / model not ready, 400 validation / quota, 424 model stream error, 408 model
/// timeout, 503 unavailable, 403 access, 404 not found, else 500.
int status_for_exception(std::string_view name);

}  // namespace tollgate::providers::aws
