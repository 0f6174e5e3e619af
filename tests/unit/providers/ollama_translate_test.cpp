// Ollama /api/chat and /api/generate: request translation, answers, NDJSON streams split
// anywhere, usage evidence and error mapping (providers/ollama/translate.hpp, adapter.hpp).
#include "providers/ollama/adapter.hpp"
#include "providers/ollama/translate.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http/stream_frames.hpp"
#include "policy/failure.hpp"

using namespace tollgate;
namespace json = boost::json;
namespace ol = tollgate::providers::ollama;

namespace {

json::object obj(std::string_view s) { return json::parse(s).as_object(); }

/// Feeds `bytes` to an NDJSON frame parser in pieces of `step` bytes, the frames to a decoder.
std::vector<std::string> decode(ol::NdjsonToChat& d, std::string_view bytes, std::size_t step) {
  auto parser = http::make_frame_parser(http::StreamFraming::ndjson);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < bytes.size(); i += step)
    EXPECT_TRUE(parser->feed(bytes.substr(i, step), [&](const http::SseEvent& ev) { d.on_event(ev, out); }));
  return out;
}

std::string joined_content(const std::vector<std::string>& chunks) {
  std::string text;
  for (const auto& c : chunks) {
    auto v = json::parse(c).as_object();
    const auto& choices = v.at("choices").as_array();
    if (choices.empty()) continue;
    const auto& delta = choices[0].as_object().at("delta").as_object();
    if (const auto* t = delta.if_contains("content"); t && t->is_string()) text += t->get_string();
  }
  return text;
}

constexpr std::string_view kChatStream =
    "{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"done\":false}\n"
    "{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"lo \\u00e9\"},\"done\":false}\n"
    "{\"model\":\"llama3\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\","
    "\"prompt_eval_count\":26,\"eval_count\":3}\n";

}  // namespace

TEST(OllamaTranslate, ChatRequestCarriesOptionsFormatImagesAndToolCalls) {
  const auto chat = obj(R"({"model":"g","max_tokens":77,"temperature":0.5,"top_p":0.9,"seed":7,"stop":"END",
    "response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},
    "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
    "messages":[{"role":"developer","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"what is "},{"type":"text","text":"this?"},
        {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"sunny"}]})");
  auto body = ol::chat_to_ollama_chat(chat, "llama3.1", false);
  ASSERT_TRUE(body) << body.error();
  EXPECT_EQ(body->at("model").as_string(), "llama3.1");
  EXPECT_EQ(body->at("stream").as_bool(), false);  // Ollama streams unless told not to
  const auto& o = body->at("options").as_object();
  EXPECT_EQ(o.at("num_predict").as_int64(), 77);
  EXPECT_EQ(o.at("seed").as_int64(), 7);
  EXPECT_EQ(o.at("stop").as_array().at(0).as_string(), "END");
  EXPECT_EQ(body->at("format").as_object().at("type").as_string(), "object");
  const auto& ms = body->at("messages").as_array();
  ASSERT_EQ(ms.size(), 4u);
  EXPECT_EQ(ms[0].as_object().at("role").as_string(), "system");
  EXPECT_EQ(ms[1].as_object().at("content").as_string(), "what is this?");
  EXPECT_EQ(ms[1].as_object().at("images").as_array().at(0).as_string(), "iVBORw0KGgo=");
  // Ollama's arguments are an object; OpenAI's a JSON string.
  const auto& call = ms[2].as_object().at("tool_calls").as_array().at(0).as_object().at("function").as_object();
  EXPECT_EQ(call.at("arguments").as_object().at("city").as_string(), "Paris");
  EXPECT_EQ(ms[3].as_object().at("tool_name").as_string(), "get_weather");
  EXPECT_EQ(body->at("tools").as_array().size(), 1u);
}

TEST(OllamaTranslate, ImagesByUrlAreRefusedNotDropped) {
  const auto chat = obj(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]})");
  EXPECT_FALSE(ol::chat_to_ollama_chat(chat, "m", false));
  EXPECT_FALSE(ol::chat_to_ollama_generate(chat, "m", false));
}

TEST(OllamaTranslate, GeneratePromptIsFlattenedAsLiteLlmDoes) {
  const auto chat = obj(R"({"max_completion_tokens":5,"messages":[{"role":"system","content":"S"},{"role":"user","content":"U1"},
    {"role":"user","content":"U2"},{"role":"assistant","content":"A"},{"role":"user","content":"U3"}]})");
  auto body = ol::chat_to_ollama_generate(chat, "llama2", true);
  ASSERT_TRUE(body);
  EXPECT_EQ(body->at("prompt").as_string(), "### System:\nS\n\n### User:\nU1U2\n\n### Assistant:\nA\n\n### User:\nU3\n\n");
  EXPECT_EQ(body->at("options").as_object().at("num_predict").as_int64(), 5);
  EXPECT_TRUE(body->at("stream").as_bool());
  EXPECT_FALSE(body->contains("format"));
}

TEST(OllamaTranslate, GenerateWithToolsAsksForJsonAndListsTheFunctions) {
  const auto chat = obj(R"({"tools":[{"type":"function","function":{"name":"lookup","parameters":{}}}],
    "messages":[{"role":"user","content":"hi"}]})");
  auto body = ol::chat_to_ollama_generate(chat, "llama2", false);
  ASSERT_TRUE(body);
  EXPECT_EQ(body->at("format").as_string(), "json");
  EXPECT_NE(std::string(body->at("prompt").as_string()).find("\"name\":\"lookup\""), std::string::npos);
  EXPECT_NE(std::string(body->at("prompt").as_string()).find("Produce JSON OUTPUT ONLY!"), std::string::npos);
}

TEST(OllamaTranslate, ChatAnswerWithToolCallsEndsWithToolCallsAndStringArguments) {
  providers::Usage u;
  auto c = ol::response_to_chat(
      R"({"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]},
          "done":true,"done_reason":"stop","prompt_eval_count":10,"eval_count":4})",
      "m", false, u);
  ASSERT_TRUE(c) << c.error();
  const auto& choice = c->at("choices").as_array().at(0).as_object();
  EXPECT_EQ(choice.at("finish_reason").as_string(), "tool_calls");  // Ollama says "stop"
  const auto& call = choice.at("message").as_object().at("tool_calls").as_array().at(0).as_object();
  EXPECT_EQ(call.at("function").as_object().at("arguments").as_string(), R"({"a":1})");
  EXPECT_TRUE(choice.at("message").as_object().at("content").is_null());
  ASSERT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 10);
  EXPECT_EQ(u.completion_tokens, 4);
  EXPECT_EQ(c->at("usage").as_object().at("total_tokens").as_int64(), 14);
}

TEST(OllamaTranslate, LengthAndGenerateAnswers) {
  providers::Usage u;
  auto c = ol::response_to_chat(R"({"response":"abc","done":true,"done_reason":"length","prompt_eval_count":3,"eval_count":9})",
                                "m", true, u);
  ASSERT_TRUE(c);
  const auto& choice = c->at("choices").as_array().at(0).as_object();
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
  EXPECT_EQ(choice.at("message").as_object().at("content").as_string(), "abc");
  auto call = ol::response_to_chat(R"({"response":"{\"name\":\"lookup\",\"arguments\":{\"q\":\"x\"}}","done":true,
      "prompt_eval_count":3,"eval_count":9})", "m", true, u);
  ASSERT_TRUE(call);
  const auto& ch = call->at("choices").as_array().at(0).as_object();
  EXPECT_EQ(ch.at("finish_reason").as_string(), "tool_calls");
  EXPECT_EQ(ch.at("message").as_object().at("tool_calls").as_array().at(0).as_object().at("function").as_object().at("name").as_string(),
            "lookup");
  EXPECT_FALSE(ol::response_to_chat(R"({"message":"nope"})", "m", true, u));
  EXPECT_FALSE(ol::response_to_chat("not json", "m", false, u));
}

TEST(OllamaTranslate, AbsentPromptEvalCountIsUnknownNotZero) {
  // Ollama drops prompt_eval_count when the prompt came from its cache (ollama/ollama#2068).
  providers::Usage u;
  auto c = ol::response_to_chat(R"({"message":{"role":"assistant","content":"x"},"done":true,"eval_count":4})", "m", false, u);
  ASSERT_TRUE(c);
  EXPECT_FALSE(u.reported);
  EXPECT_FALSE(c->contains("usage"));
}

TEST(OllamaStream, NdjsonSplitAnywhereGivesTheSameChunks) {
  std::vector<std::string> reference;
  for (std::size_t step : {kChatStream.size(), std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{64}}) {
    ol::NdjsonToChat d("llama3", true, false);
    auto out = decode(d, kChatStream, step);
    EXPECT_TRUE(d.finished());
    EXPECT_TRUE(d.usage_final());
    EXPECT_EQ(d.usage().prompt_tokens, 26);
    EXPECT_EQ(d.usage().completion_tokens, 3);
    EXPECT_EQ(joined_content(out), "Hello \xc3\xa9");
    ASSERT_GE(out.size(), 3u);
    // Last: the usage chunk (include_usage), before it the finish chunk.
    EXPECT_TRUE(json::parse(out.back()).as_object().at("choices").as_array().empty());
    EXPECT_EQ(json::parse(out[out.size() - 2]).as_object().at("choices").as_array()[0].as_object().at("finish_reason").as_string(),
              "stop");
    if (reference.empty()) reference = out;
    EXPECT_EQ(out.size(), reference.size()) << "step " << step;
  }
}

TEST(OllamaStream, ACutStreamIsNotFinishedAndItsUsageIsNotTheBill) {
  ol::NdjsonToChat d("llama3", false, false);
  decode(d, kChatStream.substr(0, kChatStream.find("\"done\":true") - 10), 5);
  EXPECT_FALSE(d.finished());
  EXPECT_FALSE(d.usage_final());
}

TEST(OllamaStream, ToolCallChunkAndErrorLine) {
  ol::NdjsonToChat d("m", false, false);
  auto out = decode(d,
                    "{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"x\":2}}}]},\"done\":false}\n"
                    "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":1,\"eval_count\":2}\n",
                    3);
  ASSERT_EQ(out.size(), 3u);  // role, the call, finish
  const auto call = json::parse(out[1]).as_object().at("choices").as_array()[0].as_object().at("delta").as_object().at("tool_calls").as_array()[0].as_object();
  EXPECT_EQ(call.at("function").as_object().at("arguments").as_string(), R"({"x":2})");
  EXPECT_EQ(json::parse(out[2]).as_object().at("choices").as_array()[0].as_object().at("finish_reason").as_string(), "tool_calls");

  ol::NdjsonToChat e("m", false, false);
  decode(e, "{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"error\":\"an error was encountered while running the model\"}\n", 4);
  ASSERT_TRUE(e.error());
  EXPECT_NE(e.error()->find("error was encountered"), std::string::npos);
  EXPECT_FALSE(e.finished());
}

TEST(OllamaStream, GenerateTextThatIsACallIsHeldAndSentAsOne) {
  ol::NdjsonToChat d("m", false, true);
  auto out = decode(d,
                    "{\"response\":\"{\\\"name\\\":\\\"lookup\\\",\",\"done\":false}\n"
                    "{\"response\":\"\\\"arguments\\\":{\\\"q\\\":\\\"x\\\"}}\",\"done\":false}\n"
                    "{\"response\":\"\",\"done\":true,\"prompt_eval_count\":5,\"eval_count\":6}\n",
                    9);
  ASSERT_EQ(out.size(), 3u);
  const auto delta = json::parse(out[1]).as_object().at("choices").as_array()[0].as_object().at("delta").as_object();
  EXPECT_EQ(delta.at("tool_calls").as_array()[0].as_object().at("function").as_object().at("name").as_string(), "lookup");
  ol::NdjsonToChat t("m", false, true);
  auto text = decode(t, "{\"response\":\"Hi\",\"done\":false}\n{\"response\":\" there\",\"done\":false}\n{\"response\":\"\",\"done\":true}\n", 4);
  EXPECT_EQ(joined_content(text), "Hi there");
  EXPECT_TRUE(t.finished());
  EXPECT_FALSE(t.usage_final());  // no counts: unknown
}

TEST(OllamaErrors, ClassifiedAsDocumented) {
  const auto cls = [](int status, std::string_view body) { return policy::classify(ol::outcome_from_ollama_error(status, body)); };
  EXPECT_EQ(cls(404, R"({"error":"model \"llama9\" not found, try pulling it first"})"), config::FailureClass::deployment_misconfigured);
  EXPECT_EQ(cls(400, R"({"error":"the input length exceeds the context length"})"), config::FailureClass::context_overflow);
  EXPECT_EQ(cls(429, R"({"error":"too many requests"})"), config::FailureClass::retryable_capacity);
  EXPECT_EQ(cls(503, R"({"error":"server busy, please try again.  maximum pending requests exceeded"})"),
            config::FailureClass::retryable_capacity);
  EXPECT_EQ(cls(500, R"({"error":"llama runner process has terminated"})"), config::FailureClass::transient_provider_error);
  EXPECT_EQ(cls(401, R"({"error":"unauthorized"})"), config::FailureClass::deployment_misconfigured);
  EXPECT_TRUE(ol::outcome_from_ollama_error(500, R"({"error":"x"})").error_body);
  EXPECT_FALSE(ol::outcome_from_ollama_error(502, "<html>bad gateway</html>").error_body);
}
