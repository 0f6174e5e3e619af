// litellm_settings.cache / cache_params (issue 11 §4): LiteLLM's keys read into CacheSettings; a
// cache type Tollgate does not have is an error naming it; the cache's Redis is found as LiteLLM
// finds it.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "load_helpers.hpp"

namespace tollgate::config {
namespace {

using namespace testing_helpers;
using ::testing::HasSubstr;

constexpr std::string_view kModels = "model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/gpt-4o\n";

LoadResult load_cache(const std::string& litellm_settings, std::map<std::string, std::string> env = {}) {
  return load(std::string(kModels) + "litellm_settings:\n" + litellm_settings, std::move(env));
}

TEST(CacheSettings, OffUnlessCacheIsTrue) {
  auto r = load(kModels);
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_FALSE(r.config->litellm_settings.cache.enabled);
  EXPECT_FALSE(r.config->litellm_settings.cache.caches("acompletion"));
  auto params_only = load_cache("  cache_params: {type: local}\n");
  ASSERT_TRUE(params_only.ok());
  EXPECT_FALSE(params_only.config->litellm_settings.cache.enabled);
}

TEST(CacheSettings, LocalWithLiteLLMsKeys) {
  auto r = load_cache("  cache: True\n  cache_params:\n    type: local\n    ttl: 2.5\n    namespace: prod\n"
                      "    max_size_in_memory: 50\n    supported_call_types: [acompletion]\n");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_TRUE(r.warnings.empty()) << all(r.warnings);
  const auto& c = r.config->litellm_settings.cache;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.type, CacheSettings::Type::local);
  EXPECT_EQ(c.effective_ttl_seconds(), 3);  // a fraction of a second rounds up
  EXPECT_EQ(c.cache_namespace, "prod");
  EXPECT_EQ(c.max_size_in_memory, 50);
  EXPECT_TRUE(c.caches("acompletion"));
  EXPECT_FALSE(c.caches("anthropic_messages"));
}

TEST(CacheSettings, DefaultsAndTypeTtls) {
  auto r = load_cache("  cache: true\n");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  const auto& c = r.config->litellm_settings.cache;
  EXPECT_EQ(c.type, CacheSettings::Type::local);
  EXPECT_EQ(c.effective_ttl_seconds(), 600);
  EXPECT_EQ(c.max_size_in_memory, 200);
  EXPECT_TRUE(c.caches("acompletion"));
  EXPECT_TRUE(c.caches("anthropic_messages"));
  auto mem = load_cache("  cache: true\n  cache_params: {default_in_memory_ttl: 30, default_in_redis_ttl: 90}\n");
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ(mem.config->litellm_settings.cache.effective_ttl_seconds(), 30);
  auto none = load_cache("  cache: true\n  cache_params: {supported_call_types: []}\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.config->litellm_settings.cache.caches("acompletion"));
}

TEST(CacheSettings, ACacheTypeTollgateLacksIsAnErrorNamingIt) {
  for (const char* type : {"s3", "redis-semantic", "qdrant-semantic", "disk", "gcs"}) {
    auto r = load_cache(std::string("  cache: true\n  cache_params:\n    type: ") + type + "\n");
    ASSERT_FALSE(r.ok()) << type;
    const auto p = only(r.errors, "litellm_settings.cache_params.type");
    EXPECT_EQ(p.line, 8);
    EXPECT_THAT(p.message, HasSubstr(std::string("'") + type + "'"));
  }
}

TEST(CacheSettings, BadValuesAreErrorsAtTheirPath) {
  EXPECT_FALSE(load_cache("  cache: maybe\n").ok());
  for (const char* bad : {"ttl: 0", "ttl: -3", "max_size_in_memory: 0", "port: 70000", "url: http://x", "namespace: [a]"}) {
    auto r = load_cache(std::string("  cache: true\n  cache_params:\n    type: redis\n    host: h\n    ") + bad + "\n");
    EXPECT_FALSE(r.ok()) << bad;
    const std::string key(std::string_view(bad).substr(0, std::string_view(bad).find(':')));
    only(r.errors, "litellm_settings.cache_params." + key);
  }
}

TEST(CacheSettings, OtherLiteLLMKeysAreWarningsNamingThem) {
  auto r = load_cache("  cache: true\n  cache_params:\n    type: local\n    similarity_threshold: 0.8\n    s3_bucket_name: b\n");
  ASSERT_TRUE(r.ok()) << all(r.errors);
  EXPECT_THAT(only(r.warnings, "litellm_settings.cache_params.similarity_threshold").message, HasSubstr("ignored"));
  only(r.warnings, "litellm_settings.cache_params.s3_bucket_name");
}

TEST(CacheSettings, TheCachesRedisAsLiteLLMFindsIt) {
  auto url = load_cache("  cache: true\n  cache_params:\n    type: redis\n    url: redis://:pw@cachehost:6390/3\n    host: ignored\n");
  ASSERT_TRUE(url.ok()) << all(url.errors);
  EXPECT_EQ(url.config->litellm_settings.cache.redis.host, "cachehost");
  EXPECT_EQ(url.config->litellm_settings.cache.redis.port, 6390);
  EXPECT_EQ(url.config->litellm_settings.cache.redis.password, "pw");
  EXPECT_EQ(url.config->litellm_settings.cache.redis.db, 3);

  auto keys = load_cache("  cache: true\n  cache_params: {type: redis, host: h1, port: 6391, password: os.environ/PW}\n",
                         {{"PW", "secret"}});
  ASSERT_TRUE(keys.ok()) << all(keys.errors);
  EXPECT_EQ(keys.config->litellm_settings.cache.redis.host, "h1");
  EXPECT_EQ(keys.config->litellm_settings.cache.redis.port, 6391);
  EXPECT_EQ(keys.config->litellm_settings.cache.redis.password, "secret");

  auto env = load_cache("  cache: true\n  cache_params: {type: redis}\n",
                        {{"REDIS_HOST", "envhost"}, {"REDIS_PORT", "6392"}, {"REDIS_PASSWORD", "p2"}});
  ASSERT_TRUE(env.ok()) << all(env.errors);
  EXPECT_TRUE(env.config->litellm_settings.cache.enabled);
  EXPECT_EQ(env.config->litellm_settings.cache.redis.host, "envhost");
  EXPECT_EQ(env.config->litellm_settings.cache.redis.port, 6392);
  EXPECT_EQ(env.config->litellm_settings.cache.redis.password, "p2");

  auto router = load(std::string(kModels) + "litellm_settings:\n  cache: true\n  cache_params: {type: redis}\n"
                     "router_settings:\n  redis_host: rhost\n  redis_port: 6393\n");
  ASSERT_TRUE(router.ok()) << all(router.errors);
  EXPECT_EQ(router.config->litellm_settings.cache.redis.host, "rhost");
  EXPECT_EQ(router.config->litellm_settings.cache.redis.port, 6393);

  auto nowhere = load_cache("  cache: true\n  cache_params: {type: redis}\n");
  ASSERT_TRUE(nowhere.ok()) << all(nowhere.errors);
  EXPECT_FALSE(nowhere.config->litellm_settings.cache.enabled);
  EXPECT_THAT(only(nowhere.warnings, "litellm_settings.cache_params.type").message, HasSubstr("caching is off"));
}

}  // namespace
}  // namespace tollgate::config
