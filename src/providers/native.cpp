#include "providers/native.hpp"

namespace tollgate::providers {

const Provider* native_adapter_for(const config::Deployment& d, CallApi api) noexcept {
  if (api == CallApi::chat) return nullptr;
  const Provider* a = adapter_for(d, api);
  // The provider's chat adapter answering for every API (the unsupported one) is no native one.
  return a == &provider_for(d.provider) ? nullptr : a;
}

}  // namespace tollgate::providers
