#include "providers/responses/stream.hpp"
#include "providers/responses/translate.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tollgate::providers::responses {
namespace {

namespace json = boost::json;

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

TEST(ResponsesRequest, StringInputAndInstructions) {
  auto chat = request_to_chat(obj(
      R"({"model":"m","instructions":"Be brief.","input":"hi","max_output_tokens":40,"temperature":0.5,
          "stream":true,"store":true,"metadata":{"a":"b"},"truncation":"auto"})"));
  ASSERT_TRUE(chat) << chat.error().message;
  EXPECT_EQ(json::serialize((*chat)["messages"]),
            R"([{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}])");
  EXPECT_EQ((*chat)["max_tokens"].as_int64(), 40);
  EXPECT_EQ((*chat)["temperature"].as_double(), 0.5);
  EXPECT_TRUE((*chat)["stream_options"].as_object()["include_usage"].as_bool());
  EXPECT_FALSE(chat->contains("store")) << "a translated answer is never stored";
  EXPECT_FALSE(chat->contains("metadata"));
  EXPECT_FALSE(chat->contains("truncation"));
  EXPECT_FALSE(chat->contains("max_output_tokens"));
}

TEST(ResponsesRequest, ItemsPartsAndToolRoundTrip) {
  auto chat = request_to_chat(obj(R"({"model":"m","input":[
      {"role":"developer","content":"rules"},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"look"},
         {"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"low"},
         {"type":"input_file","file_data":"data:application/pdf;base64,BBBB","filename":"a.pdf"}]},
      {"type":"reasoning","id":"rs_1","summary":[]},
      {"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"x\":1}"},
      {"type":"function_call","call_id":"call_2","name":"g","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_1","output":"one"},
      {"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"two"}]},
      {"role":"assistant","content":[{"type":"output_text","text":"done"}]}],
    "tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}],
    "tool_choice":{"type":"function","name":"f"},
    "text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}})"));
  ASSERT_TRUE(chat) << chat.error().message;
  const auto& m = (*chat)["messages"].as_array();
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].as_object().at("role").as_string(), "developer");
  const auto& parts = m[1].as_object().at("content").as_array();
  EXPECT_EQ(json::serialize(parts[0]), R"({"type":"text","text":"look"})");
  EXPECT_EQ(json::serialize(parts[1]), R"({"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}})");
  EXPECT_EQ(parts[2].as_object().at("type").as_string(), "file");
  // Two consecutive calls are one assistant turn; the reasoning item is dropped.
  const auto& calls = m[2].as_object().at("tool_calls").as_array();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].as_object().at("id").as_string(), "call_1");
  EXPECT_EQ(calls[0].as_object().at("function").as_object().at("arguments").as_string(), R"({"x":1})");
  EXPECT_EQ(json::serialize(m[3]), R"({"role":"tool","tool_call_id":"call_1","content":"one"})");
  EXPECT_EQ(m[4].as_object().at("content").as_string(), "two");
  EXPECT_EQ(json::serialize(m[5]), R"({"role":"assistant","content":"done"})");
  EXPECT_EQ(json::serialize((*chat)["tools"]),
            R"([{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}}])");
  EXPECT_EQ(json::serialize((*chat)["tool_choice"]), R"({"type":"function","function":{"name":"f"}})");
  EXPECT_EQ(json::serialize((*chat)["response_format"]),
            R"({"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}})");
}

TEST(ResponsesRequest, BadInputIsA400NamingTheParameter) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"model":"m"})", "input"},
      {R"({"model":"m","input":5})", "input"},
      {R"({"model":"m","input":[{"type":"bogus"}]})", "input[0].type"},
      {R"({"model":"m","input":[{"role":"robot","content":"x"}]})", "input[0].role"},
      {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]})",
       "input[0].content[0].file_id"},
      {R"({"model":"m","input":"x","max_output_tokens":0})", "max_output_tokens"},
      {R"({"model":"m","input":"x","tools":[{"type":"function"}]})", "tools[0].name"},
      {R"({"model":"m","input":"x","text":{"format":{"type":"yaml"}}})", "text.format.type"},
  };
  for (const auto& c : cases) {
    auto chat = request_to_chat(obj(c.body));
    ASSERT_FALSE(chat) << c.body;
    EXPECT_EQ(chat.error().status, 400) << c.body;
    EXPECT_EQ(chat.error().param, c.param) << c.body;
  }
}

TEST(ResponsesRequest, NativeOnlyFeaturesAreNamed) {
  EXPECT_EQ(native_only_feature(obj(R"({"input":"x","tools":[{"type":"function","name":"f"},{"type":"web_search_preview"}]})")),
            "tools[1].type=web_search_preview");
  EXPECT_EQ(native_only_feature(obj(R"({"input":"x","tools":[{"type":"mcp","server_label":"s"}]})")), "tools[0].type=mcp");
  EXPECT_EQ(native_only_feature(obj(R"({"input":"x","tool_choice":{"type":"file_search"}})")),
            "tool_choice.type=file_search");
  EXPECT_EQ(native_only_feature(obj(R"({"input":"x","previous_response_id":"resp_1"})")), "previous_response_id");
  EXPECT_EQ(native_only_feature(obj(R"({"input":"x","background":true})")), "background");
  EXPECT_EQ(native_only_feature(obj(R"({"input":[{"type":"item_reference","id":"msg_1"}]})")),
            "input[0].type=item_reference");
  EXPECT_EQ(native_only_feature(obj(R"({"input":"x","background":false,"store":true,"previous_response_id":null})")),
            std::nullopt);
}

TEST(ResponsesRequest, HiddenInputFieldsAreNamedBeforeOtherFeatures) {
  EXPECT_EQ(hidden_input_field(obj(R"({"input":"x","tools":[{"type":"web_search_preview"}],"conversation":"c"})")),
            "conversation");
  EXPECT_EQ(hidden_input_field(obj(R"({"input":"x","prompt":{"id":"pmpt_1"}})")), "prompt");
  EXPECT_EQ(hidden_input_field(obj(R"({"input":["x",{"type":"item_reference","id":"m"}]})")), "input[1].type=item_reference");
  EXPECT_EQ(hidden_input_field(obj(R"({"input":"x","tools":[{"type":"web_search_preview"}],"background":true})")),
            std::nullopt);
  EXPECT_EQ(hidden_input_field(obj(R"({"input":"x","previous_response_id":null})")), std::nullopt);
}

TEST(ResponsesUsage, BothDirections) {
  Usage u;
  u.reported = true;
  u.prompt_tokens = 100;
  u.cached_tokens = 30;
  u.completion_tokens = 20;
  u.reasoning_tokens = 5;
  EXPECT_EQ(json::serialize(usage_to_responses(u)),
            R"({"input_tokens":100,"input_tokens_details":{"cached_tokens":30},"output_tokens":20,)"
            R"("output_tokens_details":{"reasoning_tokens":5},"total_tokens":120})");
  auto back = usage_from_responses(usage_to_responses(u));
  EXPECT_TRUE(back.reported);
  EXPECT_EQ(back.prompt_tokens, 100);
  EXPECT_EQ(back.cached_tokens, 30);
  EXPECT_EQ(back.completion_tokens, 20);
  EXPECT_EQ(back.reasoning_tokens, 5);
  EXPECT_FALSE(back.reasoning_outside_completion);
  EXPECT_FALSE(usage_from_responses(json::parse(R"({"input_tokens":3})")).reported);
  EXPECT_FALSE(usage_from_responses(json::value(nullptr)).reported);
}

TEST(ResponsesAnswer, ChatCompletionToResponse) {
  auto echo = response_echo(obj(R"({"input":"x","instructions":"I","max_output_tokens":9,"metadata":{"k":"v"}})"));
  auto r = chat_response_to_response(
      obj(R"({"id":"chatcmpl-1","created":1700000000,"choices":[{"index":0,"finish_reason":"tool_calls",
            "message":{"role":"assistant","content":"hello",
              "tool_calls":[{"id":"call_9","type":"function","function":{"name":"f","arguments":"{\"a\":2}"}}]}}],
            "usage":{"prompt_tokens":11,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":2}}})"),
      echo, "grp");
  EXPECT_TRUE(r["id"].as_string().starts_with("resp_"));
  EXPECT_EQ(r["object"].as_string(), "response");
  EXPECT_EQ(r["created_at"].as_int64(), 1700000000);
  EXPECT_EQ(r["status"].as_string(), "completed");
  EXPECT_EQ(r["model"].as_string(), "grp");
  EXPECT_EQ(r["instructions"].as_string(), "I");
  EXPECT_EQ(r["max_output_tokens"].as_int64(), 9);
  EXPECT_FALSE(r["store"].as_bool());
  const auto& out = r["output"].as_array();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].as_object().at("type").as_string(), "message");
  EXPECT_EQ(out[0].as_object().at("content").as_array()[0].as_object().at("text").as_string(), "hello");
  EXPECT_EQ(out[1].as_object().at("type").as_string(), "function_call");
  EXPECT_EQ(out[1].as_object().at("call_id").as_string(), "call_9");
  EXPECT_EQ(out[1].as_object().at("arguments").as_string(), R"({"a":2})");
  EXPECT_EQ(r["usage"].as_object()["input_tokens"].as_int64(), 11);
  EXPECT_EQ(r["usage"].as_object()["output_tokens"].as_int64(), 7);

  auto capped = chat_response_to_response(
      obj(R"({"choices":[{"finish_reason":"length","message":{"content":"x"}}]})"), echo, "grp");
  EXPECT_EQ(capped["status"].as_string(), "incomplete");
  EXPECT_EQ(capped["incomplete_details"].as_object()["reason"].as_string(), "max_output_tokens");
  EXPECT_TRUE(capped["usage"].is_null()) << "no usage reported: null, not zero";
}

std::vector<json::object> datas(const std::vector<ResponsesSseEvent>& events) {
  std::vector<json::object> out;
  for (const auto& [name, data] : events) {
    auto o = json::parse(data).as_object();
    EXPECT_EQ(o["type"].as_string(), name);
    out.push_back(std::move(o));
  }
  return out;
}

TEST(ResponsesStream, TextThenToolCallThenCompletedWithUsage) {
  ChatStreamToResponses conv(response_echo(obj(R"({"input":"x"})")), "grp");
  std::vector<ResponsesSseEvent> ev;
  conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})"), ev);
  conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"content":"Hel"}}]})"), ev);
  conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"content":"lo"}}]})"), ev);
  conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",
                      "function":{"name":"f","arguments":""}}]}}]})"), ev);
  conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]})"), ev);
  conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]})"), ev);
  conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})"), ev);
  conv.on_chunk(obj(R"({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4}})"), ev);
  conv.finish(ev);
  auto d = datas(ev);
  std::vector<std::string> types;
  for (std::size_t i = 0; i < d.size(); ++i) {
    types.emplace_back(d[i]["type"].as_string());
    EXPECT_EQ(d[i]["sequence_number"].as_int64(), static_cast<std::int64_t>(i));
  }
  const std::vector<std::string> want = {
      "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
      "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
      "response.content_part.done", "response.output_item.done", "response.output_item.added",
      "response.function_call_arguments.delta", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done", "response.completed"};
  EXPECT_EQ(types, want);
  EXPECT_EQ(d[6]["text"].as_string(), "Hello");
  EXPECT_EQ(d[9]["output_index"].as_int64(), 1);
  EXPECT_EQ(d[12]["arguments"].as_string(), R"({"a":1})");
  const auto& done = d.back()["response"].as_object();
  EXPECT_EQ(done.at("id").as_string(), conv.id());
  EXPECT_EQ(done.at("status").as_string(), "completed");
  EXPECT_EQ(done.at("output").as_array().size(), 2u);
  EXPECT_EQ(done.at("usage").as_object().at("input_tokens").as_int64(), 10);
  EXPECT_EQ(done.at("usage").as_object().at("output_tokens").as_int64(), 4);
  EXPECT_EQ(d[0]["response"].as_object().at("status").as_string(), "in_progress");
}

TEST(ResponsesStream, LengthIsIncompleteAndErrorsFail) {
  {
    ChatStreamToResponses conv(json::object{}, "grp");
    std::vector<ResponsesSseEvent> ev;
    conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}]})"), ev);
    conv.finish(ev);
    EXPECT_EQ(ev.back().first, "response.incomplete");
    EXPECT_EQ(json::parse(ev.back().second).as_object()["response"].as_object()["incomplete_details"].as_object()["reason"]
                  .as_string(),
              "max_output_tokens");
  }
  {
    ChatStreamToResponses conv(json::object{}, "grp");
    std::vector<ResponsesSseEvent> ev;
    conv.on_chunk(obj(R"({"choices":[{"index":0,"delta":{"content":"a"}}]})"), ev);
    conv.fail("server_error", "upstream broke", ev);
    ASSERT_GE(ev.size(), 2u);
    EXPECT_EQ(ev[ev.size() - 2].first, "error");
    EXPECT_EQ(ev.back().first, "response.failed");
    auto failed = json::parse(ev.back().second).as_object()["response"].as_object();
    EXPECT_EQ(failed["status"].as_string(), "failed");
    EXPECT_EQ(failed["error"].as_object()["code"].as_string(), "server_error");
    std::vector<ResponsesSseEvent> more;
    conv.finish(more);
    EXPECT_TRUE(more.empty()) << "nothing after the end";
  }
}

}  // namespace
}  // namespace tollgate::providers::responses
