#include "core/json_valid.hpp"

#include <gtest/gtest.h>

#include <string>

using tollgate::core::is_json_text;

TEST(JsonValid, AcceptsOneJsonText) {
  for (const char* ok : {R"({"a":[1,2,{"b":null}],"c":"\u00e9\n"})", " 42 ", "\"x\"", "[]", "true", "null",
                         "{\"choices\":[{\"delta\":{\"content\":\"Z\xc3\xbcrich\"}}]}"})
    EXPECT_TRUE(is_json_text(ok)) << ok;
}

TEST(JsonValid, RefusesWhatAParserWouldRefuse) {
  for (const char* bad : {"", "{not json", "{\"a\":1", "{\"a\":1}}", "[1,]", "{\"a\":1} {\"b\":2}", "[DONE]",
                          "{\"a\":\"\\q\"}", "nul", "{'a':1}"})
    EXPECT_FALSE(is_json_text(bad)) << bad;
  EXPECT_TRUE(is_json_text(std::string(100, '[') + std::string(100, ']')));   // an echoed deep schema
  EXPECT_FALSE(is_json_text(std::string(200, '[') + std::string(200, ']')));  // beyond the depth limit
  EXPECT_FALSE(is_json_text(std::string("{\"a\":\"\xff\"}")));  // not UTF-8
}
