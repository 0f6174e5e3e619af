#include "cache/request_key.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace tollgate::cache {
namespace {
namespace json = boost::json;

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

TEST(CanonicalJson, SortsMembersAtEveryDepth) {
  EXPECT_EQ(canonical_json(json::parse(R"({"b":1,"a":{"d":[{"z":1,"y":2}],"c":"x"}})")),
            R"({"a":{"c":"x","d":[{"y":2,"z":1}]},"b":1})");
  // Arrays keep their order: message order is part of the request.
  EXPECT_NE(canonical_json(json::parse("[1,2]")), canonical_json(json::parse("[2,1]")));
}

TEST(RequestKey, MemberOrderAndGatewayOnlyMembersDoNotMatter) {
  const auto a = obj(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.5})");
  const auto b = obj(R"({"temperature":0.5,"stream":true,"stream_options":{"include_usage":true},
                        "metadata":{"tags":["x"]},"cache":{"ttl":5},"messages":[{"content":"hi","role":"user"}],"model":"m"})");
  EXPECT_EQ(request_key("", "master", "m", a), request_key("", "master", "m", b));
}

TEST(RequestKey, AnythingThatShapesTheAnswerChangesTheKey) {
  const auto base = obj(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  const std::string k = request_key("", "master", "m", base);
  EXPECT_EQ(k.size(), 64u);
  for (const char* other : {R"({"model":"m","messages":[{"role":"user","content":"hi!"}]})",
                            R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1})",
                            R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5})",
                            R"({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[]})",
                            R"({"model":"m","messages":[{"role":"user","content":"hi"}],"user":"u1"})"})
    EXPECT_NE(request_key("", "master", "m", obj(other)), k) << other;
  // The model as the caller asked for it, never the body's (an adapter rewrites that one).
  EXPECT_EQ(request_key("", "master", "m", obj(R"({"model":"gpt-upstream","messages":[{"role":"user","content":"hi"}]})")), k);
  EXPECT_NE(request_key("", "master", "other-group", base), k);
  // One caller never gets another's answer.
  EXPECT_NE(request_key("", "key:abc", "m", base), k);
}

TEST(RequestKey, NoAmbiguityWhenPartsRunIntoEachOther) {
  const auto body = obj(R"({"messages":[]})");
  EXPECT_NE(request_key("", "ab", "c", body), request_key("", "a", "bc", body));
  EXPECT_NE(request_key("", "a", "g", obj(R"({"messages":[],"x":"ab"})")), request_key("", "a", "g", obj(R"({"messages":[],"xa":"b"})")));
  EXPECT_EQ(request_key("", "a", "g", body), request_key("", "a", "g", body));
}

TEST(RequestKey, NamespaceIsAPrefix) {
  const auto base = obj(R"({"messages":[]})");
  const std::string plain = request_key("", "master", "m", base);
  EXPECT_EQ(request_key("team-a", "master", "m", base), "team-a:" + plain);
  EXPECT_NE(request_key("team-a", "master", "m", base), request_key("team-b", "master", "m", base));
}

}  // namespace
}  // namespace tollgate::cache
