// Fuzz target: the YAML config loader (config/loader.hpp: load_config_string), which reads the
// LiteLLM config file, tollgate_settings and fallback_policy, with an injected environment
// (never the process's; nothing is exported), and normalize_decimal, which reads every price.
//
// Input: the YAML text.
// Properties: a load either gives a Config and no errors, or errors and no Config, and every
// problem names where it is; loading is a function of its input (a second load of the same text
// gives the same verdict and the same problems); normalize_decimal is idempotent and its output
// is plain decimal text.
#include "config/loader.hpp"
#include "fuzz_support.hpp"

namespace {

std::optional<std::string> fake_env(std::string_view name) {
  if (name == "OPENAI_API_KEY" || name == "ANTHROPIC_API_KEY" || name == "FUZZ_SET") return std::string("sk-fuzz");
  return std::nullopt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tollgate::config;
  const std::string_view in = tollgate::fuzz::as_text(data, size);
  const auto r = load_config_string(in, "<fuzz>", EnvLookup(fake_env));
  TG_FUZZ_CHECK(r.ok() == r.errors.empty());
  TG_FUZZ_CHECK((r.config != nullptr) == r.errors.empty());
  if (size < 2048) {  // determinism, on the smaller inputs (a second load halves the speed)
    const auto again = load_config_string(in, "<fuzz>", EnvLookup(fake_env));
    TG_FUZZ_CHECK(again.ok() == r.ok());
    TG_FUZZ_CHECK(again.errors.size() == r.errors.size() && again.warnings.size() == r.warnings.size());
  }

  const auto line = in.substr(0, std::min(in.find('\n'), std::size_t{128}));
  if (auto d = normalize_decimal(line)) {
    TG_FUZZ_CHECK(!d->empty());
    TG_FUZZ_CHECK(d->find_first_not_of("0123456789.") == std::string::npos);
    const auto again = normalize_decimal(*d);
    TG_FUZZ_CHECK(again && *again == *d);
  }
  return 0;
}
