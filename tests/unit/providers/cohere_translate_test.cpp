// Cohere v2 chat: request translation, answers (billed_units is the bill), typed SSE streams
// split anywhere, error mapping (providers/cohere/translate.hpp, adapter.hpp).
#include "providers/cohere/adapter.hpp"
#include "providers/cohere/translate.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http/stream_frames.hpp"
#include "policy/failure.hpp"

using namespace tollgate;
namespace json = boost::json;
namespace co = tollgate::providers::cohere;

namespace {

json::object obj(std::string_view s) { return json::parse(s).as_object(); }

std::vector<std::string> decode(co::StreamToChat& d, std::string_view bytes, std::size_t step) {
  auto parser = http::make_frame_parser(http::StreamFraming::sse);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < bytes.size(); i += step)
    EXPECT_TRUE(parser->feed(bytes.substr(i, step), [&](const http::SseEvent& ev) { d.on_event(ev, out); }));
  return out;
}

const json::object& delta_of(const json::object& chunk) {
  return chunk.at("choices").as_array()[0].as_object().at("delta").as_object();
}

constexpr std::string_view kToolStream =
    "event: message-start\ndata: {\"id\":\"abc-1\",\"type\":\"message-start\",\"delta\":{\"message\":{\"role\":\"assistant\"}}}\n\n"
    "event: tool-plan-delta\ndata: {\"type\":\"tool-plan-delta\",\"delta\":{\"message\":{\"tool_plan\":\"I will\"}}}\n\n"
    "event: tool-call-start\ndata: {\"type\":\"tool-call-start\",\"index\":0,\"delta\":{\"message\":{\"tool_calls\":"
    "{\"id\":\"get_weather_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}}}}\n\n"
    "event: tool-call-delta\ndata: {\"type\":\"tool-call-delta\",\"index\":0,\"delta\":{\"message\":{\"tool_calls\":{\"function\":{\"arguments\":\"{\\\"city\\\":\"}}}}}\n\n"
    "event: tool-call-delta\ndata: {\"type\":\"tool-call-delta\",\"index\":0,\"delta\":{\"message\":{\"tool_calls\":{\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}}}}\n\n"
    "event: tool-call-end\ndata: {\"type\":\"tool-call-end\",\"index\":0}\n\n"
    "event: message-end\ndata: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"TOOL_CALL\",\"usage\":"
    "{\"billed_units\":{\"input_tokens\":20,\"output_tokens\":9},\"tokens\":{\"input_tokens\":84,\"output_tokens\":9}}}}\n\n";

}  // namespace

TEST(CohereTranslate, RequestFields) {
  const auto chat = obj(R"({"model":"x","max_completion_tokens":50,"top_p":0.3,"temperature":0.2,"stop":["a","b"],"tool_choice":"required",
    "response_format":{"type":"json_object"},
    "tools":[{"type":"function","function":{"name":"f","parameters":{}}}],
    "messages":[{"role":"system","content":"S"},{"role":"user","content":"U"},
      {"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
      {"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"R"}]}]})");
  const auto b = co::chat_to_cohere(chat, "command-r", true);
  EXPECT_EQ(b.at("model").as_string(), "command-r");
  EXPECT_EQ(b.at("max_tokens").as_int64(), 50);
  EXPECT_DOUBLE_EQ(b.at("p").as_double(), 0.3);
  EXPECT_EQ(b.at("stop_sequences").as_array().size(), 2u);
  EXPECT_EQ(b.at("tool_choice").as_string(), "REQUIRED");
  EXPECT_EQ(b.at("response_format").as_object().at("type").as_string(), "json_object");
  EXPECT_TRUE(b.at("stream").as_bool());
  const auto& ms = b.at("messages").as_array();
  ASSERT_EQ(ms.size(), 4u);
  EXPECT_FALSE(ms[2].as_object().contains("content"));  // an empty assistant text is not sent
  EXPECT_EQ(ms[2].as_object().at("tool_calls").as_array()[0].as_object().at("function").as_object().at("arguments").as_string(),
            R"({"a":1})");
  EXPECT_EQ(ms[3].as_object().at("tool_call_id").as_string(), "c1");
  EXPECT_EQ(ms[3].as_object().at("content").as_string(), "R");
}

TEST(CohereTranslate, AnswerIsBilledByBilledUnits) {
  providers::Usage u;
  auto c = co::response_to_chat(R"({"id":"r1","finish_reason":"MAX_TOKENS","message":{"role":"assistant",
      "content":[{"type":"text","text":"Hello"},{"type":"text","text":" world"}]},
      "usage":{"billed_units":{"input_tokens":12,"output_tokens":5},"tokens":{"input_tokens":76,"output_tokens":5}}})",
                                "command-r", u);
  ASSERT_TRUE(c) << c.error();
  const auto& choice = c->at("choices").as_array()[0].as_object();
  EXPECT_EQ(choice.at("message").as_object().at("content").as_string(), "Hello world");
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
  ASSERT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 12);  // not tokens.input_tokens (76: the template is not billed)
  EXPECT_EQ(u.completion_tokens, 5);

  auto t = co::response_to_chat(R"({"finish_reason":"TOOL_CALL","message":{"role":"assistant","tool_plan":"p",
      "tool_calls":[{"id":"f_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}})", "m", u);
  ASSERT_TRUE(t);
  const auto& tc = t->at("choices").as_array()[0].as_object();
  EXPECT_EQ(tc.at("finish_reason").as_string(), "tool_calls");
  EXPECT_EQ(tc.at("message").as_object().at("tool_calls").as_array()[0].as_object().at("id").as_string(), "f_1");
  EXPECT_FALSE(u.reported);  // no usage: unknown
  EXPECT_FALSE(co::response_to_chat(R"({"text":"v1 shape"})", "m", u));
}

TEST(CohereStream, ToolCallStreamSplitAnywhere) {
  for (std::size_t step : {kToolStream.size(), std::size_t{1}, std::size_t{3}, std::size_t{50}}) {
    co::StreamToChat d("command-r", true);
    auto out = decode(d, kToolStream, step);
    ASSERT_TRUE(d.finished());
    ASSERT_TRUE(d.usage_final());
    EXPECT_EQ(d.usage().prompt_tokens, 20);
    EXPECT_EQ(d.usage().completion_tokens, 9);
    ASSERT_EQ(out.size(), 6u) << step;  // role, call start, 2 argument deltas, finish, usage
    const auto first = json::parse(out[0]).as_object();
    EXPECT_EQ(first.at("id").as_string(), "abc-1");
    const auto start = json::parse(out[1]).as_object();
    const auto& call = delta_of(start).at("tool_calls").as_array()[0].as_object();
    EXPECT_EQ(call.at("id").as_string(), "get_weather_1");
    EXPECT_EQ(call.at("function").as_object().at("name").as_string(), "get_weather");
    std::string args;
    for (int i = 2; i <= 3; ++i)
      args += delta_of(json::parse(out[i]).as_object()).at("tool_calls").as_array()[0].as_object().at("function").as_object().at("arguments").as_string();
    EXPECT_EQ(args, R"({"city":"Paris"})");
    EXPECT_EQ(json::parse(out[4]).as_object().at("choices").as_array()[0].as_object().at("finish_reason").as_string(), "tool_calls");
  }
}

TEST(CohereStream, TextStreamCutAndErrorEnd) {
  const std::string text =
      "event: message-start\ndata: {\"id\":\"m\",\"type\":\"message-start\"}\n\n"
      "event: content-start\ndata: {\"type\":\"content-start\",\"index\":0}\n\n"
      "event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\n";
  co::StreamToChat cut("m", false);
  auto out = decode(cut, text, 4);
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(delta_of(json::parse(out[1]).as_object()).at("content").as_string(), "Hi");
  EXPECT_FALSE(cut.finished());
  EXPECT_FALSE(cut.usage_final());

  co::StreamToChat err("m", false);
  decode(err, text + "event: message-end\ndata: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"ERROR\",\"error\":\"boom\"}}\n\n", 7);
  ASSERT_TRUE(err.error());
  EXPECT_EQ(*err.error(), "boom");
}

TEST(CohereErrors, ClassifiedAsDocumented) {
  const auto cls = [](int status, std::string_view msg) {
    return policy::classify(co::outcome_from_cohere_error(status, std::string(R"({"id":"x","message":)") + "\"" + std::string(msg) + "\"}"));
  };
  EXPECT_EQ(cls(429, "You are past the per minute request limit"), config::FailureClass::retryable_capacity);
  EXPECT_EQ(cls(400, "too many tokens: size limit exceeded by 10 tokens."), config::FailureClass::context_overflow);
  EXPECT_EQ(cls(401, "invalid api token"), config::FailureClass::deployment_misconfigured);
  EXPECT_EQ(cls(500, "internal server error"), config::FailureClass::transient_provider_error);
  EXPECT_EQ(cls(400, "invalid request: messages must not be empty"), config::FailureClass::caller_fix_required);
  EXPECT_TRUE(co::outcome_from_cohere_error(500, R"({"message":"x"})").error_body);
  EXPECT_FALSE(co::outcome_from_cohere_error(502, "<html>").error_body);
}
