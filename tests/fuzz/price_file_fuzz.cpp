// Fuzz target: the price-file importer (budget/price_file.hpp: parse_price_file, which detects
// and reads our YAML format or LiteLLM's model_prices_and_context_window.json).
//
// Input: the file's text.
// Properties: every price of an accepted table is >= 0, and pricing a usage at any entry gives a
// non-negative charge (a price file cannot make a charge go below zero; UBSan catches a silent
// overflow); a text detected as LiteLLM JSON and accepted is accepted by the LiteLLM parser
// itself (the detection and the parser agree).
#include "budget/cost.hpp"
#include "budget/price_file.hpp"
#include "budget/pricing.hpp"
#include "fuzz_support.hpp"

namespace {

namespace budget = tollgate::budget;

void check_price(const std::optional<budget::PerTokenPrice>& p) {
  if (p) TG_FUZZ_CHECK(p->picos >= 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = tollgate::fuzz::as_text(data, size);
  std::size_t skipped = 0;
  auto table = budget::parse_price_file(in, {}, &skipped);
  if (!table) {
    TG_FUZZ_CHECK(!table.error().empty());
    return 0;
  }
  budget::Usage usage;
  usage.reported = true;
  usage.prompt_tokens = 1'000'000;
  usage.completion_tokens = 200'000;
  usage.cached_tokens = 300'000;
  usage.cache_write_tokens = 100'000;
  usage.reasoning_tokens = 50'000;
  usage.web_search_calls = 2;
  for (const auto& [name, price] : table->entries()) {
    check_price(price.input);
    check_price(price.output);
    check_price(price.cached_input);
    check_price(price.cache_write);
    check_price(price.cache_write_1h);
    check_price(price.reasoning);
    check_price(price.web_search_call);
    if (price.max_output_tokens) TG_FUZZ_CHECK(*price.max_output_tokens >= 0);
    const auto charge = budget::price_usage(price, usage);
    TG_FUZZ_CHECK(charge.total >= 0);
  }
  if (budget::detect_price_file_format(in) == budget::PriceFileFormat::litellm_json)
    TG_FUZZ_CHECK(budget::PriceTable::parse_litellm_json(in).has_value());
  return 0;
}
