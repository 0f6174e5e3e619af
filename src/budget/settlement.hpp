#pragma once
/// The charge follows the evidence (DESIGN.md "Budget admission", `settle`): what an attempt is
/// charged depends only on what was sent and what came back, never on its failure class (which
/// decides what happens next, not what it costs). Pure; thread-safe.

#include <string_view>

#include "budget/ledger.hpp"
#include "budget/money.hpp"

namespace tollgate::budget {

/// What is known of an upstream attempt once it ended.
enum class Evidence {
  not_sent,        ///< the request never left (connect failure, misconfiguration, refused before the write)
  error_response,  ///< sent, and answered with an HTTP error in the API's own JSON error shape (documented as unbilled; not 408/504)
  answered,        ///< sent, and answered 2xx with usage that was read in full
  unreadable,      ///< sent and answered, but the usage cannot be read (oversized or garbage body, a cut
                   ///< stream, a usage object missing or malformed, an error status with a non-JSON body)
  no_answer,       ///< sent, and no answer (timeout or reset after the send, abandoned by the client)
};

/// "not_sent", "error_response", "answered", "unreadable", "no_answer" (stable: decision trace).
[[nodiscard]] constexpr std::string_view to_string(Evidence e) noexcept {
  switch (e) {
    case Evidence::not_sent: return "not_sent";
    case Evidence::error_response: return "error_response";
    case Evidence::answered: return "answered";
    case Evidence::unreadable: return "unreadable";
    case Evidence::no_answer: return "no_answer";
  }
  return "no_answer";
}

/// How an attempt's reservation settles, from its evidence: not sent or a documented error → 0
/// (SettleKind::no_usage); answered with readable usage → `priced_usage` (SettleKind::actual);
/// unreadable or no answer → the whole reservation (SettleKind::unknown: it may have been billed
/// in full, and the reservation is the most an upstream that honours the output bound it was
/// sent can have billed), or the price of a stream's partial usage when more (settle_charge).
[[nodiscard]] constexpr SettleKind settle_kind_for(Evidence e) noexcept {
  switch (e) {
    case Evidence::not_sent:
    case Evidence::error_response: return SettleKind::no_usage;
    case Evidence::answered: return SettleKind::actual;
    case Evidence::unreadable:
    case Evidence::no_answer: return SettleKind::unknown;
  }
  return SettleKind::unknown;
}

}  // namespace tollgate::budget
