// Assistant prefill per provider (providers/prefill.hpp).
#include "providers/prefill.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace tollgate::providers {
namespace {

namespace json = boost::json;

config::Deployment dep(config::ProviderKind kind, std::string prefix, std::string model = "m") {
  config::Deployment d;
  d.provider = kind;
  d.provider_prefix = std::move(prefix);
  d.upstream_model = std::move(model);
  return d;
}

TEST(Prefill, ProviderDefaultsAndTheModelInfoOverride) {
  EXPECT_TRUE(accepts_prefill(dep(config::ProviderKind::anthropic, "anthropic")));
  EXPECT_TRUE(accepts_prefill(dep(config::ProviderKind::bedrock, "bedrock", "anthropic.claude-3-haiku")));
  EXPECT_FALSE(accepts_prefill(dep(config::ProviderKind::bedrock, "bedrock", "amazon.nova-pro-v1:0")));
  EXPECT_TRUE(accepts_prefill(dep(config::ProviderKind::openai, "mistral")));
  EXPECT_FALSE(accepts_prefill(dep(config::ProviderKind::openai, "openai")));
  EXPECT_FALSE(accepts_prefill(dep(config::ProviderKind::azure, "azure")));
  EXPECT_FALSE(accepts_prefill(dep(config::ProviderKind::gemini, "gemini")));
  auto vllm = dep(config::ProviderKind::openai, "hosted_vllm");
  vllm.supports_assistant_prefill = true;
  EXPECT_TRUE(accepts_prefill(vllm));
  auto off = dep(config::ProviderKind::anthropic, "anthropic");
  off.supports_assistant_prefill = false;
  EXPECT_FALSE(accepts_prefill(off));
}

TEST(Prefill, TheCallersOwnFinalAssistantMessage) {
  auto chat = json::parse(R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"{\"a\":"}]})").as_object();
  EXPECT_EQ(final_assistant_text(chat), std::optional<std::string>("{\"a\":"));
  auto blocks = json::parse(R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"one "},{"type":"image"},{"type":"text","text":"two"}]}]})").as_object();
  EXPECT_EQ(final_assistant_text(blocks), std::optional<std::string>("one two"));
  auto user_last = json::parse(R"({"messages":[{"role":"assistant","content":"x"},{"role":"user","content":"q"}]})").as_object();
  EXPECT_EQ(final_assistant_text(user_last), std::nullopt);
  EXPECT_EQ(final_assistant_text(json::object{}), std::nullopt);
  auto empty = json::parse(R"({"messages":[]})").as_object();
  EXPECT_EQ(final_assistant_text(empty), std::nullopt);
  // Merged: the caller's message takes the delivered text after its own, no second message.
  put_prefill(chat, "{\"a\": 1", false, true);
  ASSERT_EQ(chat["messages"].as_array().size(), 2u);
  EXPECT_EQ(chat["messages"].as_array()[1].as_object()["content"].as_string(), "{\"a\": 1");
}

TEST(Prefill, TextLosesTrailingWhitespaceOnly) {
  EXPECT_EQ(prefill_text("  Hello world \n\t"), "  Hello world");
  EXPECT_EQ(prefill_text("   "), "");
}

TEST(Prefill, PutAppendsThenReplaces) {
  auto body = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})").as_object();
  put_prefill(body, "Hel", false, false);
  put_prefill(body, "Hello wor", false, true);
  const auto& msgs = body["messages"].as_array();
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[1].as_object().at("role").as_string(), "assistant");
  EXPECT_EQ(msgs[1].as_object().at("content").as_string(), "Hello wor");
  auto native = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})").as_object();
  put_prefill(native, "Hel", true, false);
  EXPECT_EQ(native["messages"].as_array()[1].as_object().at("content").as_array()[0].as_object().at("text").as_string(), "Hel");
  auto none = json::parse(R"({"input":"x"})").as_object();
  put_prefill(none, "Hel", false, false);
  EXPECT_FALSE(none.contains("messages"));
}

TEST(Prefill, MarksPerProvider) {
  auto body = json::parse(R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"He"}]})").as_object();
  auto m = body;
  mark_prefill(dep(config::ProviderKind::openai, "mistral"), m);
  EXPECT_TRUE(m["messages"].as_array()[1].as_object().at("prefix").as_bool());
  EXPECT_FALSE(m.contains("continue_final_message"));
  auto v = body;
  mark_prefill(dep(config::ProviderKind::openai, "hosted_vllm"), v);
  EXPECT_TRUE(v.at("continue_final_message").as_bool());
  EXPECT_FALSE(v.at("add_generation_prompt").as_bool());
  auto a = body;
  mark_prefill(dep(config::ProviderKind::anthropic, "anthropic"), a);
  EXPECT_EQ(a, body) << "Anthropic continues a final assistant message as it is";
}

}  // namespace
}  // namespace tollgate::providers
