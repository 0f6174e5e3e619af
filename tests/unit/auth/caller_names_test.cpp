// read_caller_names / name_problem: the bounds on names a caller chooses.
#include "auth/caller_names.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace tollgate::auth {
namespace {
namespace json = boost::json;

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

json::object with_user(const std::string& user) {
  json::object o;
  o["model"] = "m";
  o["user"] = user;
  return o;
}

json::array tags(std::size_t n, std::size_t len = 3) {
  json::array a;
  for (std::size_t i = 0; i < n; ++i) a.emplace_back(std::string(len, static_cast<char>('a' + i % 26)));
  return a;
}

TEST(CallerNames, ReadsUserAndTagsInOrder) {
  auto n = read_caller_names(obj(R"({"user":"cust-1","metadata":{"tags":["a","","b"]},"tags":["c","a"]})"),
                             CallerApi::openai_chat);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(n->end_user, "cust-1");
  EXPECT_EQ(n->tags, (std::vector<std::string>{"a", "b", "c", "a"}));  // empty dropped, duplicates merged later
}

TEST(CallerNames, AbsentNullAndEmptyMeanNone) {
  for (auto text : {R"({})", R"({"user":null,"tags":null,"metadata":{"tags":null}})", R"({"user":""})",
                    R"({"metadata":"not an object"})", R"({"metadata":{"user_id":5}})"}) {
    auto n = read_caller_names(obj(text), CallerApi::openai_chat);
    ASSERT_TRUE(n.has_value()) << text << ": " << n.error().message;
    EXPECT_TRUE(n->end_user.empty()) << text;
    EXPECT_TRUE(n->tags.empty()) << text;
  }
}

TEST(CallerNames, UserAtTheLimitIsAcceptedOneByteMoreIs400) {
  auto ok = read_caller_names(with_user(std::string(kMaxNameBytes, 'u')), CallerApi::openai_chat);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->end_user.size(), 256u);
  auto bad = read_caller_names(with_user(std::string(kMaxNameBytes + 1, 'u')), CallerApi::openai_chat);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().status, 400);
  EXPECT_EQ(bad.error().type, "invalid_request_error");
  EXPECT_EQ(bad.error().param, "user");
  EXPECT_EQ(bad.error().code, "name_too_long");
  EXPECT_EQ(bad.error().message, "user is 257 bytes long; caller-supplied names are limited to 256 bytes");
}

TEST(CallerNames, LimitIsBytesNotCharacters) {
  std::string s;
  for (int i = 0; i < 86; ++i) s += "\xC3\xA9";  // é: 86 characters, 172 bytes
  s += s;                                        // 172 characters, 344 bytes
  auto bad = read_caller_names(with_user(s), CallerApi::openai_chat);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("344 bytes"), std::string::npos) << bad.error().message;
}

TEST(CallerNames, NonStringUserIs400) {
  for (auto text : {R"({"user":5})", R"({"user":{"id":"x"}})", R"({"user":["x"]})", R"({"user":true})"}) {
    auto n = read_caller_names(obj(text), CallerApi::openai_chat);
    ASSERT_FALSE(n.has_value()) << text;
    EXPECT_EQ(n.error().status, 400);
    EXPECT_EQ(n.error().param, "user");
    EXPECT_EQ(n.error().code, "invalid_caller_name");
    EXPECT_NE(n.error().message.find("user must be a string"), std::string::npos) << n.error().message;
  }
}

TEST(CallerNames, TagErrorsNameTheEntry) {
  struct Case {
    const char* body;
    const char* param;
    const char* code;
  };
  const Case cases[] = {
      {R"({"tags":"one"})", "tags", "invalid_caller_name"},
      {R"({"tags":["ok",7]})", "tags[1]", "invalid_caller_name"},
      {R"({"tags":["ok",null]})", "tags[1]", "invalid_caller_name"},
      {R"({"metadata":{"tags":{"a":1}}})", "metadata.tags", "invalid_caller_name"},
      {R"({"metadata":{"tags":["a",["b"]]}})", "metadata.tags[1]", "invalid_caller_name"},
  };
  for (const auto& c : cases) {
    auto n = read_caller_names(obj(c.body), CallerApi::openai_chat);
    ASSERT_FALSE(n.has_value()) << c.body;
    EXPECT_EQ(n.error().status, 400) << c.body;
    EXPECT_EQ(n.error().param, c.param) << c.body;
    EXPECT_EQ(n.error().code, c.code) << c.body;
  }
  json::object b;
  b["tags"] = json::array{"fine", std::string(257, 't')};
  auto n = read_caller_names(b, CallerApi::openai_chat);
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().param, "tags[1]");
  EXPECT_EQ(n.error().code, "name_too_long");
}

TEST(CallerNames, AtMost32TagsAcrossBothLists) {
  json::object ok;
  ok["metadata"] = json::object{{"tags", tags(20)}};
  ok["tags"] = tags(12);
  auto n = read_caller_names(ok, CallerApi::openai_chat);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->tags.size(), 32u);
  json::object over = ok;
  over["tags"] = tags(13);
  auto bad = read_caller_names(over, CallerApi::openai_chat);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().status, 400);
  EXPECT_EQ(bad.error().param, "tags");
  EXPECT_EQ(bad.error().code, "too_many_tags");
  EXPECT_NE(bad.error().message.find("33"), std::string::npos) << bad.error().message;
  // A huge list is refused by its length, before its entries are looked at.
  json::object huge;
  huge["metadata"] = json::object{{"tags", tags(100'000, 1)}};
  auto h = read_caller_names(huge, CallerApi::openai_chat);
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().param, "metadata.tags");
}

TEST(CallerNames, AnthropicEndUserIsMetadataUserId) {
  auto n = read_caller_names(obj(R"({"metadata":{"user_id":"cust-7","tags":["proj"]},"user":5,"tags":["eu"]})"),
                             CallerApi::anthropic_messages);
  ASSERT_TRUE(n.has_value()) << n.error().message;  // `user` is not an Anthropic field: not read
  EXPECT_EQ(n->end_user, "cust-7");
  // Tags are read on /v1/messages as on chat: a tag budget cannot be bypassed by the other API.
  EXPECT_EQ(n->tags, (std::vector<std::string>{"proj", "eu"}));
  EXPECT_FALSE(read_caller_names(obj(R"({"tags":5})"), CallerApi::anthropic_messages).has_value());
  json::object b;
  b["metadata"] = json::object{{"user_id", std::string(300, 'x')}};
  auto bad = read_caller_names(b, CallerApi::anthropic_messages);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().param, "metadata.user_id");
  EXPECT_EQ(bad.error().code, "name_too_long");
  EXPECT_EQ(bad.error().message, "metadata.user_id is 300 bytes long; caller-supplied names are limited to 256 bytes");
  auto typed = read_caller_names(obj(R"({"metadata":{"user_id":42}})"), CallerApi::anthropic_messages);
  ASSERT_FALSE(typed.has_value());
  EXPECT_EQ(typed.error().param, "metadata.user_id");
  EXPECT_EQ(typed.error().code, "invalid_caller_name");
}

TEST(CallerNames, LimitsCanBeLiftedForTheGatewaysOwnStoredBodies) {
  json::object b;
  b["user"] = std::string(300, 'u');
  b["metadata"] = json::object{{"tags", tags(40)}};
  const CallerNameLimits none{.max_name_bytes = SIZE_MAX, .max_tags = SIZE_MAX};
  auto n = read_caller_names(b, CallerApi::openai_chat, none);
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(n->end_user.size(), 300u);
  EXPECT_EQ(n->tags.size(), 40u);
  b["user"] = 3;  // types are still checked
  EXPECT_FALSE(read_caller_names(b, CallerApi::openai_chat, none).has_value());
}

TEST(CallerNames, NameProblem) {
  EXPECT_FALSE(name_problem("team_id", std::string(256, 'a')).has_value());
  EXPECT_FALSE(name_problem("team_id", "").has_value());
  EXPECT_FALSE(name_problem("team_id", "équipe café ☕ ~").has_value());
  auto p = name_problem("team_id", std::string(1000, 'a'));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->message, "team_id is 1000 bytes long; caller-supplied names are limited to 256 bytes");
  EXPECT_STREQ(p->code, "name_too_long");
  auto nul = name_problem("user", std::string("abc\0q", 5));
  ASSERT_TRUE(nul.has_value());
  EXPECT_EQ(nul->message, "user contains a control character (0x00 at byte 3); caller-supplied names must not");
  EXPECT_STREQ(nul->code, "invalid_caller_name");
  for (const char* bad : {"a\tb", "a\nb", "\x1f", "a\x7f"}) EXPECT_TRUE(name_problem("user", bad).has_value()) << bad;
  // Not UTF-8 (RFC 3629): a stray continuation, a truncated sequence, overlong forms, a surrogate,
  // past U+10FFFF, bytes never used.
  for (const char* bad : {"a\xff", "a\x80", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "\xf8\x88\x80\x80\x80", "\xe2\x82"}) {
    auto p = name_problem("x-litellm-tags", bad);
    ASSERT_TRUE(p.has_value()) << bad;
    EXPECT_STREQ(p->code, "invalid_caller_name");
  }
  EXPECT_EQ(name_problem("x-litellm-tags", "a\xff")->message, "x-litellm-tags is not valid UTF-8 (0xff at byte 1)");
  for (const char* good : {"\xc2\x80", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"})
    EXPECT_FALSE(name_problem("user", good).has_value()) << good;
}

// A NUL in an end user or a tag would be cut by PostgreSQL's text parameters ("z\0q" stored and
// rebuilt as "z": another end user's budget), so the request is refused.
TEST(CallerNames, ControlCharactersInNamesAre400) {
  json::object b;
  b["user"] = std::string("z\0q", 3);
  auto n = read_caller_names(b, CallerApi::openai_chat);
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().status, 400);
  EXPECT_EQ(n.error().param, "user");
  EXPECT_EQ(n.error().code, "invalid_caller_name");
  json::object t;
  t["metadata"] = json::object{{"tags", json::array{"ok", "line\nbreak"}}};
  auto tags = read_caller_names(t, CallerApi::openai_chat);
  ASSERT_FALSE(tags.has_value());
  EXPECT_EQ(tags.error().param, "metadata.tags[1]");
  CallerNames h;
  EXPECT_TRUE(add_header_tags("a,b\x01,c", h).has_value());
  EXPECT_TRUE(add_header_tags("a,b\xff", h).has_value());  // a header is not checked by the JSON parser
}

TEST(CallerNames, HeaderTagsAreSplitTrimmedAndBounded) {
  CallerNames n;
  n.tags = {"body"};
  ASSERT_FALSE(add_header_tags(" team-api ,production,,\tus-east-1 ,", n).has_value());
  EXPECT_EQ(n.tags, (std::vector<std::string>{"body", "team-api", "production", "us-east-1"}));
  CallerNames empty;
  ASSERT_FALSE(add_header_tags("", empty).has_value());
  EXPECT_TRUE(empty.tags.empty());

  CallerNames big;
  auto e = add_header_tags("ok," + std::string(300, 'x'), big);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "x-litellm-tags");
  EXPECT_EQ(e->code, "name_too_long");

  CallerNames many;
  many.tags.assign(kMaxRequestTags - 1, "t");
  ASSERT_FALSE(add_header_tags("one", many).has_value());
  auto over = add_header_tags("two", many);
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->code, "too_many_tags");
}

}  // namespace
}  // namespace tollgate::auth
