#include "providers/bedrock/errors.hpp"
#include "core/json_parse.hpp"

#include <cctype>

#include <boost/json.hpp>

namespace tollgate::providers::aws {
namespace json = boost::json;

std::string exception_name(std::string_view raw) {
  if (const auto hash = raw.rfind('#'); hash != std::string_view::npos) raw.remove_prefix(hash + 1);
  if (const auto colon = raw.find(':'); colon != std::string_view::npos) raw = raw.substr(0, colon);
  while (!raw.empty() && std::isspace(static_cast<unsigned char>(raw.front()))) raw.remove_prefix(1);
  while (!raw.empty() && std::isspace(static_cast<unsigned char>(raw.back()))) raw.remove_suffix(1);
  std::string out(raw);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

int status_for_exception(std::string_view n) {
  if (n == "ThrottlingException" || n == "ModelNotReadyException") return 429;
  if (n == "ValidationException" || n == "ServiceQuotaExceededException") return 400;
  if (n == "ModelStreamErrorException" || n == "ModelErrorException") return 424;
  if (n == "ModelTimeoutException") return 408;
  if (n == "ServiceUnavailableException") return 503;
  if (n == "AccessDeniedException" || n == "UnrecognizedClientException" || n == "ExpiredTokenException" ||
      n == "InvalidSignatureException")
    return 403;
  if (n == "ResourceNotFoundException") return 404;
  return 500;
}

policy::Outcome outcome_from_aws_error(int status, std::string_view body, std::string_view error_type_header) {
  policy::Outcome o;
  o.status = status;
  std::string name = exception_name(error_type_header);
  boost::system::error_code ec;
  const auto v = core::parse_json(body, ec);
  if (!ec && v.is_object()) {
    const auto& b = v.get_object();
    for (const std::string_view key : {"message", "Message"})
      if (const auto* m = b.if_contains(key); m && m->is_string()) {
        o.message = std::string(m->get_string());
        break;
      }
    if (name.empty())
      for (const std::string_view key : {"__type", "code"})
        if (const auto* t = b.if_contains(key); t && t->is_string()) {
          name = exception_name(t->get_string());
          break;
        }
  }
  // Evidence that the AWS service itself answered (not a proxy's page): a named exception
  // with its message. Its documented errors are unbilled.
  o.error_body = !name.empty() && !o.message.empty();
  if (o.message.empty()) o.message = "upstream answered " + std::to_string(status) + (name.empty() ? "" : " " + name);
  o.error_type = name;
  o.error_code = name;
  return o;
}

}  // namespace tollgate::providers::aws
