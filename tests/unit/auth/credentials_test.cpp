#include "auth/credentials.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace tollgate::auth;

namespace {
std::string_view presented(const std::map<std::string, std::string>& headers) {
  static std::string last;
  last = std::string(presented_key([&](std::string_view name) -> std::string_view {
    auto it = headers.find(std::string(name));
    return it == headers.end() ? std::string_view{} : std::string_view(it->second);
  }));
  return last;
}
}  // namespace

TEST(PresentedKey, BearerSchemeIsCaseInsensitiveAndTrimmed) {
  EXPECT_EQ(presented({{"authorization", "Bearer sk-1"}}), "sk-1");
  EXPECT_EQ(presented({{"authorization", "  bearer   sk-1 "}}), "sk-1");
  EXPECT_EQ(presented({{"x-api-key", "sk-2"}}), "sk-2");
}

TEST(PresentedKey, AnEmptyBearerDoesNotHideAKeyInAnotherHeader) {
  EXPECT_EQ(presented({{"authorization", "Bearer "}, {"x-api-key", "sk-3"}}), "sk-3");
  EXPECT_EQ(presented({{"authorization", "BEARER"}, {"api-key", "sk-4"}}), "sk-4");
  EXPECT_EQ(presented({{"authorization", "Bearer"}}), "");
}
