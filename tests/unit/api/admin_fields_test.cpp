// Admin body validation helpers: types, money conversion, durations, budget windows, queries.
#include "api/admin_fields.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace tollgate::api::admin {
namespace {
namespace json = boost::json;

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

TEST(AdminFields, UnknownFieldsAreNamed) {
  auto e = check_fields(obj(R"({"key_alias":"a","max_budgett":1,"bogus":2,"aliases":{}})"), {"key_alias"}, {"aliases"});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "max_budgett");
  EXPECT_NE(e->message.find("bogus"), std::string::npos);
  EXPECT_FALSE(check_fields(obj(R"({"key_alias":"a","aliases":{}})"), {"key_alias"}, {"aliases"}).has_value());
}

TEST(AdminFields, MoneyFromNumbersAndStringsWithoutFloatArithmetic) {
  auto m = get_money(obj(R"({"max_budget":0.1})"), "max_budget");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(**m, 100'000'000);
  EXPECT_EQ(**get_money(obj(R"({"max_budget":"0.0005"})"), "max_budget"), 500'000);
  EXPECT_EQ(**get_money(obj(R"({"max_budget":100})"), "max_budget"), 100'000'000'000);
  EXPECT_EQ(**get_money(obj(R"({"max_budget":1e-3})"), "max_budget"), 1'000'000);
  EXPECT_EQ(**get_money(obj(R"({"max_budget":0.3})"), "max_budget"), 300'000'000);  // not 299999999
  EXPECT_FALSE(get_money(obj(R"({"max_budget":null})"), "max_budget")->has_value());
  EXPECT_FALSE(get_money(obj(R"({})"), "max_budget")->has_value());
  for (auto bad : {R"({"max_budget":-1})", R"({"max_budget":"-0.5"})", R"({"max_budget":"ten"})",
                   R"({"max_budget":true})", R"({"max_budget":[1]})"}) {
    auto r = get_money(obj(bad), "max_budget");
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().status, 400);
    EXPECT_EQ(r.error().param, "max_budget");
  }
}

TEST(AdminFields, TypedGetters) {
  auto b = obj(R"({"s":"x","n":5,"d":5.0,"f":1.5,"neg":-2,"b":true,"l":["a","b"],"bl":["a",1],"o":{"k":1}})");
  EXPECT_EQ(**get_string(b, "s"), "x");
  EXPECT_EQ(get_string(b, "n").error().param, "n");
  EXPECT_EQ(**get_count(b, "n"), 5);
  EXPECT_EQ(**get_count(b, "d"), 5);
  EXPECT_FALSE(get_count(b, "f").has_value());
  EXPECT_FALSE(get_count(b, "neg").has_value());
  EXPECT_FALSE(get_count(b, "s").has_value());
  EXPECT_TRUE(**get_bool(b, "b"));
  EXPECT_FALSE(get_bool(b, "s").has_value());
  EXPECT_EQ(**get_string_list(b, "l"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(get_string_list(b, "bl").error().param, "bl");
  EXPECT_EQ(**get_object_text(b, "o"), R"({"k":1})");
  EXPECT_FALSE(get_object_text(b, "l").has_value());
  EXPECT_FALSE(require_string(b, "missing").has_value());
}

TEST(AdminFields, Durations) {
  EXPECT_EQ(*parse_duration_ms("30s"), 30'000);
  EXPECT_EQ(*parse_duration_ms("10m"), 600'000);
  EXPECT_EQ(*parse_duration_ms("1h"), 3'600'000);
  EXPECT_EQ(*parse_duration_ms("1d"), 86'400'000);
  EXPECT_EQ(*parse_duration_ms("30d"), 30LL * 86'400'000);
  EXPECT_EQ(*parse_duration_ms("1mo"), 30LL * 86'400'000);
  for (auto bad : {"", "d", "1", "1y", "-1d", "0s", "1.5h"}) EXPECT_FALSE(parse_duration_ms(bad).has_value()) << bad;
  EXPECT_TRUE(get_budget_duration(obj(R"({"budget_duration":"1mo"})"), "budget_duration").has_value());
  auto bad = get_budget_duration(obj(R"({"budget_duration":"weekly"})"), "budget_duration");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().param, "budget_duration");
}

TEST(AdminFields, BudgetLimitsNormalised) {
  auto r = get_budget_limits(obj(R"({"budget_limits":[{"budget_duration":"1d","max_budget":"1.50"},{"budget_duration":"1h","max_budget":0.2}]})"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(**r, R"([{"budget_duration":"1d","max_budget":1.5E0},{"budget_duration":"1h","max_budget":2E-1}])");
  auto missing = get_budget_limits(obj(R"({"budget_limits":[{"budget_duration":"1d"}]})"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().param, "budget_limits[0].max_budget");
  auto neg = get_budget_limits(obj(R"({"budget_limits":[{"budget_duration":"1d","max_budget":1},{"budget_duration":"1h","max_budget":-1}]})"));
  ASSERT_FALSE(neg.has_value());
  EXPECT_EQ(neg.error().param, "budget_limits[1].max_budget");
  auto dup = get_budget_limits(obj(R"({"budget_limits":[{"budget_duration":"1d","max_budget":1},{"budget_duration":"1d","max_budget":2}]})"));
  ASSERT_FALSE(dup.has_value());
  auto extra = get_budget_limits(obj(R"({"budget_limits":[{"budget_duration":"1d","max_budget":1,"x":1}]})"));
  ASSERT_FALSE(extra.has_value());
  EXPECT_EQ(extra.error().param, "budget_limits[0].x");
  EXPECT_FALSE(get_budget_limits(obj(R"({"budget_limits":{}})")).has_value());
}

TEST(AdminFields, ModelMaxBudget) {
  auto r = get_model_max_budget(obj(R"({"model_max_budget":{"gpt-4o":{"max_budget":2,"budget_duration":"1d"},"claude":{"max_budget":"0.5"}}})"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto v = json::parse(**r).as_object();
  EXPECT_EQ(v.at("gpt-4o").at("budget_duration").as_string(), "1d");
  EXPECT_FALSE(v.at("claude").as_object().contains("budget_duration"));
  auto bad = get_model_max_budget(obj(R"({"model_max_budget":{"gpt-4o":{"budget_duration":"1d"}}})"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().param, "model_max_budget.gpt-4o.max_budget");
  EXPECT_FALSE(get_model_max_budget(obj(R"({"model_max_budget":{"gpt-4o":3}})")).has_value());
}

TEST(AdminFields, DollarsJsonIsExact) {
  EXPECT_EQ(json::serialize(dollars_json(std::int64_t{1'500'000'000})), "1.5E0");
  EXPECT_EQ(json::serialize(dollars_json(std::int64_t{0})), "0");
  // Exact to 15 significant digits; beyond, the nearest double (found by fuzz_admin_fields,
  // tests/fuzz/regressions/admin_fields/large-nano-amount).
  EXPECT_EQ(*money_of(dollars_json(std::int64_t{999'999'999'999'999}), "x"), 999'999'999'999'999);
  const std::int64_t large = 92'233'236'854'770'001;
  const auto back = *money_of(dollars_json(large), "x");
  EXPECT_LE(back > large ? back - large : large - back, large / 1'000'000'000'000'000 + 1);
  EXPECT_EQ(json::serialize(dollars_json(std::optional<std::int64_t>{})), "null");
  EXPECT_EQ(json::serialize(dollars_json(std::int64_t{100'000'000'000})), "100");
}

TEST(AdminFields, QueryParams) {
  EXPECT_EQ(*query_param("/key/info?key=sk-abc%2B1&x=2", "key"), "sk-abc+1");
  EXPECT_EQ(*query_param("/key/info?a=1&user_id=u%20x", "user_id"), "u x");
  EXPECT_FALSE(query_param("/key/info", "key").has_value());
  EXPECT_FALSE(query_param("/key/info?keys=1", "key").has_value());
  EXPECT_EQ(*query_param("/key/info?key=", "key"), "");
}

TEST(AdminFields, IsoTimes) {
  EXPECT_EQ(*parse_iso_time_ms("1970-01-01"), 0);
  EXPECT_EQ(*parse_iso_time_ms("2023-11-14T22:13:20.123Z"), 1'700'000'000'123);
  EXPECT_EQ(*parse_iso_time_ms("2023-11-14T23:13:20+01:00"), 1'700'000'000'000);
  EXPECT_EQ(*parse_iso_time_ms("2024-02-29 00:00:00"), 1'709'164'800'000);
  for (auto bad : {"", "2024", "2024-13-01", "2024-01-01X", "yesterday"})
    EXPECT_FALSE(parse_iso_time_ms(bad).has_value()) << bad;
}

TEST(AdminFields, NamesAreAtMost256Bytes) {
  json::object b;
  b["team_id"] = std::string(256, 't');
  b["team_alias"] = std::string(257, 'a');
  b["n"] = 5;
  auto ok = get_name(b, "team_id");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ((*ok)->size(), 256u);
  EXPECT_FALSE(get_name(b, "absent")->has_value());
  auto bad = get_name(b, "team_alias");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().status, 400);
  EXPECT_EQ(bad.error().type, "invalid_request_error");
  EXPECT_EQ(bad.error().param, "team_alias");
  EXPECT_EQ(bad.error().message, "team_alias is 257 bytes long; caller-supplied names are limited to 256 bytes");
  auto typed = get_name(b, "n");
  ASSERT_FALSE(typed.has_value());
  EXPECT_EQ(typed.error().param, "n");
  ASSERT_TRUE(require_name(b, "team_id").has_value());
  EXPECT_EQ(require_name(b, "team_alias").error().param, "team_alias");
  EXPECT_EQ(require_name(b, "absent").error().message, "missing required field: absent");
}

TEST(AdminFields, NameListsBoundEachEntryAndTheCount) {
  json::object b;
  b["tags"] = json::array{"a", std::string(300, 'x')};
  auto bad = get_name_list(b, "tags", 32);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().param, "tags[1]");
  EXPECT_EQ(bad.error().message, "tags[1] is 300 bytes long; caller-supplied names are limited to 256 bytes");
  json::array many;
  for (int i = 0; i < 33; ++i) many.emplace_back("t" + std::to_string(i));
  b["tags"] = many;
  auto over = get_name_list(b, "tags", 32);
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().param, "tags");
  EXPECT_EQ(over.error().message, "tags has 33 entries; the limit is 32");
  EXPECT_TRUE(get_name_list(b, "tags").has_value());  // no count limit by default
  many.pop_back();
  b["tags"] = many;
  auto ok = get_name_list(b, "tags", 32);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ((*ok)->size(), 32u);
}

}  // namespace
}  // namespace tollgate::api::admin
