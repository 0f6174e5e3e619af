#pragma once
// The Redis server the store tests run against: TOLLGATE_TEST_REDIS_URL, started by
// scripts/services.sh. Without it a test is skipped, or fails when TOLLGATE_REQUIRE_SERVICES=1
// (CI, where a skipped test would hide that nothing ran).

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "config/redis_endpoint.hpp"
#include "store/redis/redis_client.hpp"

namespace tollgate::store::redis::testing {

/// The options for TOLLGATE_TEST_REDIS_URL; nullopt when it is unset or unparsable.
inline std::optional<RedisOptions> test_redis() {
  const char* url = std::getenv("TOLLGATE_TEST_REDIS_URL");
  if (url == nullptr || *url == '\0') return std::nullopt;
  auto e = config::parse_redis_url(url);
  if (!e) return std::nullopt;
  return redis_options_for(*e);
}

/// Whether a missing server must fail the test rather than skip it.
inline bool services_required() {
  const char* req = std::getenv("TOLLGATE_REQUIRE_SERVICES");
  return req != nullptr && std::string(req) == "1";
}

}  // namespace tollgate::store::redis::testing

/// In a fixture's SetUp: sets `out` to the test server's options, or skips / fails the test.
#define TG_REQUIRE_REDIS(out)                                                            \
  do {                                                                                   \
    auto tg_redis_ = ::tollgate::store::redis::testing::test_redis();                    \
    if (!tg_redis_) {                                                                    \
      if (::tollgate::store::redis::testing::services_required())                        \
        FAIL() << "TOLLGATE_TEST_REDIS_URL is not set";                                  \
      GTEST_SKIP() << "TOLLGATE_TEST_REDIS_URL is not set (scripts/services.sh start)";  \
    }                                                                                    \
    (out) = *tg_redis_;                                                                  \
  } while (0)
