#include "providers/unsupported.hpp"

namespace tollgate::providers {
namespace {

class UnsupportedProvider final : public Provider {
 public:
  std::expected<http::OutgoingRequest, std::string> build_request(const config::Deployment& d, boost::json::object&,
                                                                  bool) const override {
    return std::unexpected(unsupported_message(d));
  }
  void set_output_limit(const config::Deployment&, boost::json::object&, std::int64_t, OutputField) const override {}
  std::expected<Parsed, std::string> parse_response(const config::Deployment& d, std::string_view) const override {
    return std::unexpected(unsupported_message(d));
  }
  policy::Outcome parse_error(int status, std::string_view) const override {
    policy::Outcome o;
    o.status = status;
    return o;
  }
  std::unique_ptr<StreamDecoder> stream_decoder(const config::Deployment&, bool) const override { return nullptr; }
  // Every API: the attempt fails as for chat (400 unsupported_provider / 500 misconfigured).
  const Provider* for_api(const config::Deployment&, CallApi) const override { return this; }
};

}  // namespace

const Provider& unsupported_provider() {
  static const UnsupportedProvider p;
  return p;
}

std::string unsupported_message(const config::Deployment& d) {
  const std::string which = "deployment '" + (d.id.empty() ? d.model_name : d.id) + "' of model group '" + d.model_name + "'";
  if (!d.unusable.empty()) return which + " is misconfigured: " + d.unusable;
  return which + " uses provider '" + d.provider_prefix + "', which tollgate does not implement";
}

}  // namespace tollgate::providers
