#include "store/store.hpp"

namespace tollgate::store {

const char* to_string(StoreErrorCode code) noexcept {
  switch (code) {
    case StoreErrorCode::not_found: return "not_found";
    case StoreErrorCode::conflict: return "conflict";
    case StoreErrorCode::unavailable: return "unavailable";
    case StoreErrorCode::invalid: return "invalid";
  }
  return "unknown";
}

}  // namespace tollgate::store
