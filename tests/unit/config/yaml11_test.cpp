// YAML 1.1 as PyYAML (LiteLLM's loader) reads it: numbers yaml-cpp's YAML 1.2 does not know,
// and quoted strings left open at the end of the file.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <limits>

#include "config/loader.hpp"
#include "config/yaml11.hpp"

namespace tollgate::config {
namespace {

TEST(Yaml11, IntegersAsPyYamlReadsThem) {
  EXPECT_EQ(yaml11_int("20_000"), 20000);
  EXPECT_EQ(yaml11_int("1_000_000"), 1000000);
  EXPECT_EQ(yaml11_int("+5"), 5);
  EXPECT_EQ(yaml11_int("-12"), -12);
  EXPECT_EQ(yaml11_int("0"), 0);
  EXPECT_EQ(yaml11_int("0x1F"), 31);
  EXPECT_EQ(yaml11_int("0b101"), 5);
  EXPECT_EQ(yaml11_int("010"), 8) << "a leading 0 is octal in YAML 1.1";
  EXPECT_EQ(yaml11_int("1:30"), 90) << "base 60";
  EXPECT_EQ(yaml11_int("1:00:00"), 3600);
  EXPECT_EQ(yaml11_int("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(yaml11_int("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  for (const char* no : {"", "_1", "1.5", "1e3", "08", "0x", "0b2", "1:60", "1:5_0", "0:30", "abc", "9223372036854775808", "12 ", "--1", "-307445734561825860:59", "307445734561825860:59"})
    EXPECT_FALSE(yaml11_int(no).has_value()) << no;
}

TEST(Yaml11, NumberTextLosesOnlyTheSeparators) {
  EXPECT_EQ(yaml11_number_text("1_000.5"), "1000.5");
  EXPECT_EQ(yaml11_number_text("20_000"), "20000");
  EXPECT_EQ(yaml11_number_text("0.000_001"), "0.000001");
  EXPECT_EQ(yaml11_number_text("1e-6"), "1e-6");
  EXPECT_EQ(yaml11_number_text("a_b"), "a_b") << "not a number: unchanged";
  EXPECT_EQ(yaml11_number_text("0_1"), "0_1") << "octal-looking: not a price";
}

TEST(Yaml11, AQuotedStringLeftOpenAtTheEndIsFound) {
  const std::string bad = "model_list:\n  - model_name: \"gpt\n    litellm_params:\n      model: openai/gpt-4o\n";
  auto p = unterminated_quote(YAML::Load(bad), bad);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->line, 2);
  EXPECT_EQ(p->column, 17);
  for (const std::string& good : {std::string("a: \"x \\\" y\"\nb: 'it''s'\nc: |\n  \"text\n"), std::string("a: \"multi\n  line\"\n")})
    EXPECT_FALSE(unterminated_quote(YAML::Load(good), good).has_value()) << good;
}

TEST(Yaml11, TheLoaderReadsPyYamlNumbersAndRefusesAnOpenQuoteWithLineAndColumn) {
  LoadOptions o;
  o.getenv = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  auto r = load_config_string(
      "model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/m\n      tpm: 20_000\n      rpm: 1_000\n", "t.yaml", o);
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().message;
  EXPECT_EQ(r.config->model_list.at(0).tpm, 20000);
  EXPECT_EQ(r.config->model_list.at(0).rpm, 1000);
  auto bad = load_config_string("general_settings:\n  master_key: \"sk-1234\n", "t.yaml", o);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].line, 2);
  EXPECT_NE(bad.errors[0].message.find("(column 15): a quoted string is never closed"), std::string::npos) << bad.errors[0].message;
  auto bom = load_config_string("\xEF\xBB\xBFgeneral_settings:\n  master_key: \"sk-1234\n", "t.yaml", o);
  ASSERT_EQ(bom.errors.size(), 1u) << "a byte-order mark does not hide an open quote";
  EXPECT_EQ(bom.errors[0].line, 2);
  auto tab = load_config_string("model_list:\n  - model_name: m\n    litellm_params:\n\t  model: openai/m\n", "t.yaml", o);
  ASSERT_EQ(tab.errors.size(), 1u);
  EXPECT_NE(tab.errors[0].message.find("tab"), std::string::npos) << tab.errors[0].message;
  EXPECT_FALSE(bad.config);
}

}  // namespace
}  // namespace tollgate::config
