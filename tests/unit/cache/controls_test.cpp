#include "cache/controls.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace tollgate::cache {
namespace {
namespace json = boost::json;

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

TEST(CacheControls, ReadsLiteLLMsFieldsAndRemovesThem) {
  auto body = obj(R"({"model":"m","cache":{"no-cache":true,"no-store":true,"ttl":30,"s-maxage":5,"namespace":"ns"}})");
  auto c = take_controls(body);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->no_cache);
  EXPECT_TRUE(c->no_store);
  EXPECT_EQ(c->ttl, 30);
  EXPECT_EQ(c->s_maxage, 5);
  EXPECT_EQ(c->cache_namespace, "ns");
  EXPECT_FALSE(body.contains("cache"));
}

TEST(CacheControls, AbsentMeansDefaults) {
  auto body = obj(R"({"model":"m"})");
  auto c = take_controls(body);
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->no_cache);
  EXPECT_FALSE(c->no_store);
  EXPECT_FALSE(c->ttl);
  EXPECT_FALSE(c->cache_namespace);
}

TEST(CacheControls, MetadataAndExtraBodyAsLiteLLMReadsThem) {
  auto body = obj(R"({"metadata":{"cache":{"ttl":10,"no-store":true},"tags":["t"]},"extra_body":{"cache":{"ttl":20,"namespace":"x"}},
                     "cache":{"ttl":1.2}})");
  auto c = take_controls(body);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->ttl, 2);  // the top-level object wins; a fraction rounds up
  EXPECT_TRUE(c->no_store);
  EXPECT_EQ(c->cache_namespace, "x");
  EXPECT_FALSE(body.at("metadata").as_object().contains("cache"));
  EXPECT_TRUE(body.at("metadata").as_object().contains("tags"));
  EXPECT_FALSE(body.at("extra_body").as_object().contains("cache"));
}

TEST(CacheControls, BadInputNamesTheField) {
  struct Case {
    const char* body;
    const char* param;
  };
  for (const Case& k : {Case{R"({"cache":true})", "cache"}, Case{R"({"cache":{"no-cache":"yes"}})", "cache.no-cache"},
                        Case{R"({"cache":{"ttl":0}})", "cache.ttl"}, Case{R"({"cache":{"ttl":"60"}})", "cache.ttl"},
                        Case{R"({"cache":{"s-maxage":-1}})", "cache.s-maxage"},
                        Case{R"({"cache":{"namespace":""}})", "cache.namespace"},
                        Case{R"({"metadata":{"cache":[1]}})", "metadata.cache"}}) {
    auto body = obj(k.body);
    auto c = take_controls(body);
    ASSERT_FALSE(c.has_value()) << k.body;
    EXPECT_EQ(c.error().param, k.param) << k.body;
    EXPECT_NE(c.error().message.find(k.param), std::string::npos) << c.error().message;
  }
}

}  // namespace
}  // namespace tollgate::cache
