#include "providers/anthropic/translate.hpp"

#include "http/sse.hpp"
#include "providers/usage.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef TOLLGATE_SOURCE_DIR
#define TOLLGATE_SOURCE_DIR "."
#endif

namespace tollgate::providers::anthropic {
namespace {

namespace json = boost::json;

json::object obj(std::string_view text) { return json::parse(text).as_object(); }

std::string read_fixture(std::string_view name) {
  const std::string path = std::string(TOLLGATE_SOURCE_DIR) + "/tests/unit/providers/fixtures/" + std::string(name);
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<http::SseEvent> sse_events(std::string_view wire) {
  http::SseParser p;
  auto events = p.feed(wire);
  EXPECT_FALSE(p.failed());
  EXPECT_FALSE(p.finish());
  return events;
}

std::vector<json::object> parse_chunks(const std::vector<std::string>& chunks) {
  std::vector<json::object> out;
  for (const auto& c : chunks) out.push_back(obj(c));
  return out;
}

// Reassembled view of an OpenAI chunk stream.
struct ChatStreamSummary {
  std::string role, content, finish_reason;
  struct Call {
    std::string id, name, arguments;
  };
  std::vector<Call> calls;
  std::optional<json::object> usage;
};

ChatStreamSummary summarize(const std::vector<json::object>& chunks) {
  ChatStreamSummary s;
  for (const auto& c : chunks) {
    if (c.at("choices").as_array().empty()) {
      s.usage = c.at("usage").as_object();
      continue;
    }
    const auto& choice = c.at("choices").as_array()[0].as_object();
    const auto& d = choice.at("delta").as_object();
    if (auto* r = d.if_contains("role")) s.role = r->as_string();
    if (auto* t = d.if_contains("content"); t && t->is_string()) s.content += t->as_string();
    if (auto* tcs = d.if_contains("tool_calls")) {
      for (const auto& tcv : tcs->as_array()) {
        const auto& tc = tcv.as_object();
        const auto idx = static_cast<std::size_t>(tc.at("index").as_int64());
        if (s.calls.size() <= idx) s.calls.resize(idx + 1);
        if (auto* id = tc.if_contains("id")) s.calls[idx].id = id->as_string();
        const auto& fn = tc.at("function").as_object();
        if (auto* n = fn.if_contains("name")) s.calls[idx].name = n->as_string();
        if (auto* a = fn.if_contains("arguments")) s.calls[idx].arguments += a->as_string();
      }
    }
    if (const auto& fr = choice.at("finish_reason"); fr.is_string()) s.finish_reason = fr.as_string();
  }
  return s;
}

// ============================================================================================
// usage.hpp
// ============================================================================================

// A tool call whose arguments hold a number beyond a double's range cannot become an `input`
// object that is written back as JSON (it would read `Infinity`): it is sent as `{}`, like
// arguments that do not parse (found by the anthropic_translate fuzz target).
TEST(AnthropicTranslate, OutOfRangeToolArgumentsBecomeAnEmptyInput) {
  const auto chat = obj(R"({"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,
    "message":{"role":"assistant","content":null,"tool_calls":[
      {"id":"call_0","type":"function","function":{"name":"f","arguments":"{\"n\": 1}"}},
      {"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"n\": 1e4001}"}}]},
    "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})");
  const auto msg = chat_response_to_messages(chat, "m");
  const std::string text = json::serialize(msg);
  EXPECT_EQ(text.find("Infinity"), std::string::npos) << text;
  const auto& content = msg.at("content").as_array();
  ASSERT_EQ(content.size(), 2u) << text;
  EXPECT_EQ(content[0].at("input"), json::parse(R"({"n":1})"));
  EXPECT_EQ(content[1].at("input"), json::object{});
  EXPECT_EQ(content[1].at("id"), "call_1");
}

TEST(Usage, FromOpenAi) {
  const auto u = usage_from_openai(json::parse(
      R"({"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,
          "prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},
          "completion_tokens_details":{"reasoning_tokens":0}})"));
  EXPECT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 2006);
  EXPECT_EQ(u.completion_tokens, 300);
  EXPECT_EQ(u.cached_tokens, 1920);
}

TEST(Usage, NullOrAbsentIsUnreported) {
  EXPECT_FALSE(usage_from_openai(json::value()).reported);
  EXPECT_FALSE(usage_from_openai(json::parse("null")).reported);
  // A usage without both counts is not evidence of what was billed: unknown, never zero.
  EXPECT_FALSE(usage_from_openai(json::parse(R"({"prompt_tokens":5})")).reported);
  EXPECT_FALSE(usage_from_openai(json::parse(R"({"prompt_tokens":"5","completion_tokens":"7"})")).reported);
  EXPECT_FALSE(usage_from_openai(json::parse(R"({})")).reported);
  const auto u = usage_from_openai(json::parse(R"({"prompt_tokens":5,"completion_tokens":0})"));
  EXPECT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 5);
  EXPECT_EQ(u.completion_tokens, 0);
  EXPECT_EQ(u.cached_tokens, 0);
}

TEST(Usage, EveryTokenKindOfOpenAiAndXai) {
  const auto o = usage_from_openai(json::parse(
      R"({"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,
          "prompt_tokens_details":{"cached_tokens":20,"audio_tokens":30},
          "completion_tokens_details":{"reasoning_tokens":10,"audio_tokens":5,"rejected_prediction_tokens":3}})"));
  ASSERT_TRUE(o.reported);
  EXPECT_EQ(o.audio_input_tokens, 30);
  EXPECT_EQ(o.reasoning_tokens, 10);
  EXPECT_FALSE(o.reasoning_outside_completion);  // OpenAI: part of completion_tokens
  EXPECT_EQ(o.billed_output_tokens(), 50);
  // xAI: 143 completion + 760 reasoning, total = prompt + both.
  const auto x = usage_from_openai(json::parse(
      R"({"prompt_tokens":20,"completion_tokens":143,"total_tokens":923,"completion_tokens_details":{"reasoning_tokens":760}})"));
  EXPECT_TRUE(x.reasoning_outside_completion);
  EXPECT_EQ(x.billed_output_tokens(), 903);
}

TEST(Usage, AnthropicCacheWritesByTtlWebSearchAndTier) {
  const auto u = usage_from_anthropic(json::parse(
      R"({"input_tokens":10,"output_tokens":20,"cache_read_input_tokens":100,"cache_creation_input_tokens":300,
          "cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":100},
          "server_tool_use":{"web_search_requests":2},"service_tier":"priority"})"));
  ASSERT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 410);
  EXPECT_EQ(u.cache_write_tokens, 200);
  EXPECT_EQ(u.cache_write_1h_tokens, 100);
  EXPECT_EQ(u.web_search_calls, 2);
  EXPECT_EQ(u.service_tier, "priority");
  const auto plain = usage_from_anthropic(json::parse(R"({"input_tokens":10,"output_tokens":2,"cache_creation_input_tokens":7})"));
  EXPECT_EQ(plain.cache_write_tokens, 7);  // no per-TTL split: the 5-minute price
  EXPECT_FALSE(usage_from_anthropic(json::parse(R"({"output_tokens":2})")).reported);
}

// An answer whose parts claim more than its prompt (20 cached of 12): the parts are cut to the
// prompt, as the cost counts them, so the Anthropic view's input_tokens is never negative and its
// counts add up to the prompt again.
TEST(Usage, PromptPartsBeyondThePromptAreCutAndTheAnthropicViewAddsUp) {
  const auto u = usage_from_openai(json::parse(
      R"({"prompt_tokens":12,"completion_tokens":5,"cache_creation_input_tokens":4,
          "prompt_tokens_details":{"cached_tokens":20,"audio_tokens":3}})"));
  ASSERT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 12);
  EXPECT_EQ(u.cached_tokens, 12);
  EXPECT_EQ(u.cache_write_tokens, 0);
  EXPECT_EQ(u.audio_input_tokens, 0);
  const auto partial = usage_from_openai(json::parse(
      R"({"prompt_tokens":12,"completion_tokens":5,"cache_creation_input_tokens":9,"prompt_tokens_details":{"cached_tokens":8}})"));
  EXPECT_EQ(partial.cached_tokens, 8);
  EXPECT_EQ(partial.cache_write_tokens, 4);

  const auto msg = chat_response_to_messages(obj(R"({"id":"chatcmpl-1","object":"chat.completion","model":"m",
      "choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
      "usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":20}}})"),
                                                 "m");
  const auto& usage = msg.at("usage").as_object();
  EXPECT_EQ(usage.at("input_tokens").as_int64(), 0);
  EXPECT_EQ(usage.at("cache_read_input_tokens").as_int64(), 12);
  const auto back = usage_from_anthropic(msg.at("usage"));
  EXPECT_EQ(back.prompt_tokens, 12);
  EXPECT_EQ(back.cached_tokens, 12);
}

TEST(Usage, ToOpenAi) {
  const auto o = usage_to_openai(Usage{.prompt_tokens = 100, .completion_tokens = 20, .cached_tokens = 64, .reported = true});
  EXPECT_EQ(o, obj(R"({"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,
                       "prompt_tokens_details":{"cached_tokens":64}})"));
  const auto back = usage_from_openai(o);
  EXPECT_EQ(back.prompt_tokens, 100);
  EXPECT_EQ(back.cached_tokens, 64);
}

TEST(Usage, FromAnthropicSumsCacheCounts) {
  const auto u = usage_from_anthropic(json::parse(
      R"({"input_tokens":50,"cache_creation_input_tokens":248,"cache_read_input_tokens":1000,"output_tokens":503})"));
  EXPECT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 1298);
  EXPECT_EQ(u.completion_tokens, 503);
  EXPECT_EQ(u.cached_tokens, 1000);
  EXPECT_FALSE(usage_from_anthropic(json::value()).reported);
}

// ============================================================================================
// a) chat_request_to_messages
// ============================================================================================

TEST(ChatRequestToMessages, FullConversation) {
  const auto chat = obj(R"({
    "model": "claude-group",
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
      {"role": "user", "content": "What's the weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "not json"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
      {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "14:00"}]},
      {"role": "user", "content": [
        {"type": "text", "text": "And this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}}]},
      {"role": "user", "content": "Thanks."}
    ],
    "max_completion_tokens": 512, "max_tokens": 99,
    "temperature": 0.2, "top_p": 0.9, "stop": "END", "stream": true,
    "stream_options": {"include_usage": true}, "n": 1, "logprobs": false,
    "presence_penalty": 0.5, "frequency_penalty": 0.1, "seed": 7,
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather by city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
              {"type": "function", "function": {"name": "get_time"}}],
    "tool_choice": "required",
    "user": "end-user-42"
  })");
  const auto req = chat_request_to_messages(chat, "claude-sonnet-4-5-20250929", 4096);
  const auto expected = obj(R"({
    "model": "claude-sonnet-4-5-20250929",
    "system": "You are terse.\nUse metric units.",
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "What's the weather in Paris?"}]},
      {"role": "assistant", "content": [
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "18C"},
        {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "14:00"}]},
        {"type": "text", "text": "And this picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
        {"type": "text", "text": "Thanks."}]}
    ],
    "max_tokens": 512,
    "temperature": 0.2, "top_p": 0.9, "stop_sequences": ["END"], "stream": true,
    "tools": [{"name": "get_weather", "description": "Weather by city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
              {"name": "get_time", "input_schema": {"type": "object", "properties": {}}}],
    "tool_choice": {"type": "any"},
    "metadata": {"user_id": "end-user-42"}
  })");
  EXPECT_EQ(req, expected) << json::serialize(req);
}

TEST(ChatRequestToMessages, DefaultsAndVariants) {
  auto req = chat_request_to_messages(obj(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"),
                                      "claude-haiku-4-5", 1024);
  EXPECT_EQ(req.at("max_tokens"), 1024);  // Anthropic requires max_tokens
  EXPECT_FALSE(req.contains("system"));
  EXPECT_FALSE(req.contains("stop_sequences"));
  EXPECT_FALSE(req.contains("metadata"));

  req = chat_request_to_messages(
      obj(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":77,"stop":["a","b"]})"), "m", 1024);
  EXPECT_EQ(req.at("max_tokens"), 77);
  EXPECT_EQ(req.at("stop_sequences"), json::parse(R"(["a","b"])"));
}

TEST(ChatRequestToMessages, ToolChoiceMapping) {
  const auto base = R"({"messages":[{"role":"user","content":"x"}],
      "tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":)";
  auto choice = [&](std::string_view tc, std::string_view extra = "") {
    return chat_request_to_messages(obj(std::string(base) + std::string(tc) + std::string(extra) + "}"), "m", 1)
        .at("tool_choice");
  };
  EXPECT_EQ(choice(R"("auto")"), json::parse(R"({"type":"auto"})"));
  EXPECT_EQ(choice(R"("required")"), json::parse(R"({"type":"any"})"));
  EXPECT_EQ(choice(R"("none")"), json::parse(R"({"type":"none"})"));
  EXPECT_EQ(choice(R"({"type":"function","function":{"name":"f"}})"), json::parse(R"({"type":"tool","name":"f"})"));
  EXPECT_EQ(choice(R"("auto")", R"(,"parallel_tool_calls":false)"),
            json::parse(R"({"type":"auto","disable_parallel_tool_use":true})"));
}

TEST(ChatRequestToMessages, ConsecutiveSameRoleMergedAndEmptyDropped) {
  const auto req = chat_request_to_messages(obj(R"({"messages":[
      {"role":"user","content":"a"},{"role":"user","content":""},{"role":"user","content":"b"},
      {"role":"assistant","content":"c"},{"role":"assistant","content":[{"type":"text","text":"d"}]}]})"),
                                            "m", 1);
  EXPECT_EQ(req.at("messages"), json::parse(R"([
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"assistant","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}]}])"));
}

TEST(ChatRequestToMessages, CacheControlAndPdfKept) {
  const auto req = chat_request_to_messages(obj(R"({"messages":[{"role":"user","content":[
      {"type":"text","text":"long doc","cache_control":{"type":"ephemeral"}},
      {"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}]})"),
                                            "m", 1);
  EXPECT_EQ(req.at("messages").as_array()[0].at("content"), json::parse(R"([
      {"type":"text","text":"long doc","cache_control":{"type":"ephemeral"}},
      {"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}])"));
}

// ============================================================================================
// b) messages_response_to_chat
// ============================================================================================

TEST(MessagesResponseToChat, TextAndToolUse) {
  const auto msg = obj(R"({
    "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
    "content": [
      {"type": "text", "text": "I'll check "},
      {"type": "text", "text": "the weather."},
      {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
       "input": {"location": "San Francisco, CA", "unit": "celsius"}}],
    "stop_reason": "tool_use", "stop_sequence": null,
    "usage": {"input_tokens": 2095, "output_tokens": 503, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 1000}
  })");
  const auto chat = messages_response_to_chat(msg, "claude-group");
  EXPECT_EQ(chat.at("id"), "msg_01Aq9w938a90dw8q");
  EXPECT_EQ(chat.at("object"), "chat.completion");
  EXPECT_EQ(chat.at("model"), "claude-group");
  EXPECT_GT(chat.at("created").as_int64(), 1700000000);
  const auto& choice = chat.at("choices").as_array()[0].as_object();
  EXPECT_EQ(choice.at("index"), 0);
  EXPECT_EQ(choice.at("finish_reason"), "tool_calls");
  const auto& m = choice.at("message").as_object();
  EXPECT_EQ(m.at("role"), "assistant");
  EXPECT_EQ(m.at("content"), "I'll check the weather.");
  const auto& call = m.at("tool_calls").as_array()[0].as_object();
  EXPECT_EQ(call.at("id"), "toolu_01A09q90qw90lq917835lq9");
  EXPECT_EQ(call.at("type"), "function");
  EXPECT_EQ(call.at("function").at("name"), "get_weather");
  EXPECT_EQ(json::parse(call.at("function").at("arguments").as_string()),
            json::parse(R"({"location":"San Francisco, CA","unit":"celsius"})"));
  // Cache writes have no OpenAI field: Anthropic's names beside OpenAI's (as LiteLLM answers).
  EXPECT_EQ(chat.at("usage"), json::parse(R"({"prompt_tokens":3105,"completion_tokens":503,"total_tokens":3608,
                                              "prompt_tokens_details":{"cached_tokens":1000},
                                              "cache_creation_input_tokens":10,
                                              "cache_creation":{"ephemeral_5m_input_tokens":10,"ephemeral_1h_input_tokens":0}})"));
}

TEST(MessagesResponseToChat, ToolOnlyHasNullContent) {
  const auto chat = messages_response_to_chat(
      obj(R"({"id":"msg_1","content":[{"type":"tool_use","id":"t","name":"f","input":{}}],"stop_reason":"tool_use",
              "usage":{"input_tokens":1,"output_tokens":2}})"),
      "m");
  EXPECT_TRUE(chat.at("choices").as_array()[0].at("message").at("content").is_null());
}

TEST(MessagesResponseToChat, StopReasonMapping) {
  auto fr = [](std::string_view sr) {
    return messages_response_to_chat(obj(std::string(R"({"id":"msg_1","content":[],"stop_reason":)") +
                                         std::string(sr) + "}"),
                                     "m")
        .at("choices")
        .as_array()[0]
        .at("finish_reason");
  };
  EXPECT_EQ(fr(R"("end_turn")"), "stop");
  EXPECT_EQ(fr(R"("stop_sequence")"), "stop");
  EXPECT_EQ(fr(R"("max_tokens")"), "length");
  EXPECT_EQ(fr(R"("tool_use")"), "tool_calls");
  EXPECT_EQ(fr(R"("refusal")"), "content_filter");
  EXPECT_TRUE(fr("null").is_null());
}

// ============================================================================================
// c) MessagesStreamToChat
// ============================================================================================

TEST(MessagesStreamToChat, DocsBasicStreamingExample) {
  MessagesStreamToChat conv("claude-group", /*include_usage=*/false, /*created=*/1700000000);
  std::vector<std::string> chunks;
  for (const auto& ev : sse_events(read_fixture("anthropic_stream_basic.sse"))) conv.on_event(ev, chunks);
  ASSERT_EQ(chunks.size(), 4u);  // role, "Hello", "!", finish
  const auto parsed = parse_chunks(chunks);
  for (const auto& c : parsed) {
    EXPECT_EQ(c.at("id"), "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY");
    EXPECT_EQ(c.at("object"), "chat.completion.chunk");
    EXPECT_EQ(c.at("created"), 1700000000);
    EXPECT_EQ(c.at("model"), "claude-group");
    EXPECT_FALSE(c.contains("usage"));
  }
  EXPECT_EQ(parsed[0].at("choices").as_array()[0].at("delta"), json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_EQ(parsed[1].at("choices").as_array()[0].at("delta"), json::parse(R"({"content":"Hello"})"));
  EXPECT_TRUE(parsed[1].at("choices").as_array()[0].at("finish_reason").is_null());
  EXPECT_EQ(parsed[3].at("choices").as_array()[0].at("finish_reason"), "stop");
  const auto s = summarize(parsed);
  EXPECT_EQ(s.role, "assistant");
  EXPECT_EQ(s.content, "Hello!");
  EXPECT_TRUE(conv.finished());
  EXPECT_FALSE(conv.error());
  EXPECT_EQ(conv.finish_reason(), "stop");
  const auto u = conv.usage();
  EXPECT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 25);
  EXPECT_EQ(u.completion_tokens, 15);
}

TEST(MessagesStreamToChat, IncludeUsageEmitsFinalUsageChunk) {
  MessagesStreamToChat conv("claude-group", /*include_usage=*/true);
  std::vector<std::string> chunks;
  for (const auto& ev : sse_events(read_fixture("anthropic_stream_basic.sse"))) conv.on_event(ev, chunks);
  ASSERT_EQ(chunks.size(), 5u);
  const auto parsed = parse_chunks(chunks);
  for (std::size_t i = 0; i + 1 < parsed.size(); ++i) EXPECT_TRUE(parsed[i].at("usage").is_null());
  const auto& last = parsed.back();
  EXPECT_TRUE(last.at("choices").as_array().empty());
  EXPECT_EQ(last.at("usage"), json::parse(R"({"prompt_tokens":25,"completion_tokens":15,"total_tokens":40,
                                             "prompt_tokens_details":{"cached_tokens":0}})"));
}

TEST(MessagesStreamToChat, AStreamClosedAfterItsStopReasonAndUsageWithoutMessageStopIsWhole) {
  MessagesStreamToChat conv("claude-group", /*include_usage=*/true);
  std::vector<std::string> chunks;
  for (const auto& ev : sse_events(read_fixture("anthropic_stream_basic.sse")))
    if (ev.event != "message_stop") conv.on_event(ev, chunks);
  EXPECT_FALSE(conv.finished());
  const auto before = chunks.size();
  EXPECT_TRUE(conv.end_without_stop(chunks));
  EXPECT_TRUE(conv.finished());
  ASSERT_EQ(chunks.size(), before + 1) << "the usage chunk message_stop would have given";
  EXPECT_EQ(parse_chunks(chunks).back().at("usage").at("completion_tokens"), 15);

  // Cut before the stop reason: not whole.
  MessagesStreamToChat cut("claude-group", true);
  std::vector<std::string> out;
  for (const auto& ev : sse_events(read_fixture("anthropic_stream_basic.sse")))
    if (ev.event == "message_start" || ev.event == "content_block_start" || ev.event == "content_block_delta")
      cut.on_event(ev, out);
  EXPECT_FALSE(cut.end_without_stop(out));
  EXPECT_FALSE(cut.finished());
}

TEST(MessagesStreamToChat, DocsToolUseStreamingExample) {
  MessagesStreamToChat conv("claude-group");
  std::vector<std::string> chunks;
  for (const auto& ev : sse_events(read_fixture("anthropic_stream_tool_use.sse"))) conv.on_event(ev, chunks);
  const auto s = summarize(parse_chunks(chunks));
  EXPECT_EQ(s.content, "Okay, let's check the weather for San Francisco, CA:");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(s.calls[0].arguments),
            json::parse(R"({"location": "San Francisco, CA", "unit": "fahrenheit"})"));
  EXPECT_EQ(s.finish_reason, "tool_calls");
  EXPECT_TRUE(conv.finished());
  EXPECT_EQ(conv.usage().prompt_tokens, 472);
  EXPECT_EQ(conv.usage().completion_tokens, 89);
  // The first tool chunk has the OpenAI shape: index, id, type, function{name, arguments:""}.
  bool seen = false;
  for (const auto& c : parse_chunks(chunks)) {
    const auto& d = c.at("choices").as_array()[0].at("delta").as_object();
    if (d.contains("tool_calls") && !seen) {
      seen = true;
      EXPECT_EQ(d.at("tool_calls"), json::parse(R"([{"index":0,"id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6",
          "type":"function","function":{"name":"get_weather","arguments":""}}])"));
    }
  }
  EXPECT_TRUE(seen);
}

TEST(MessagesStreamToChat, SplitAtEveryByteGivesSameChunks) {
  const std::string wire = read_fixture("anthropic_stream_tool_use.sse");
  MessagesStreamToChat whole_conv("m", true, 1);
  std::vector<std::string> whole;
  for (const auto& ev : sse_events(wire)) whole_conv.on_event(ev, whole);

  MessagesStreamToChat conv("m", true, 1);
  http::SseParser p;
  std::vector<std::string> got;
  for (std::size_t i = 0; i < wire.size(); i += 7) {
    p.feed(std::string_view(wire).substr(i, 7), [&](http::SseEvent&& ev) { conv.on_event(ev, got); });
  }
  EXPECT_FALSE(p.finish());
  EXPECT_EQ(got, whole);
}

TEST(MessagesStreamToChat, CumulativeOutputTokensAndCache) {
  MessagesStreamToChat conv("m");
  std::vector<std::string> chunks;
  auto feed = [&](std::string_view event, std::string_view data) {
    conv.on_event(http::SseEvent{std::string(event), std::string(data), {}, {}}, chunks);
  };
  feed("message_start", R"({"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant",
       "content":[],"model":"claude","stop_reason":null,"stop_sequence":null,
       "usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":200,"output_tokens":1}}})");
  EXPECT_EQ(conv.usage().prompt_tokens, 215);
  EXPECT_EQ(conv.usage().cached_tokens, 200);
  EXPECT_EQ(conv.usage().completion_tokens, 1);
  feed("message_delta", R"({"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":40}})");
  feed("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},
       "usage":{"output_tokens":64}})");
  EXPECT_EQ(conv.usage().completion_tokens, 64);  // last value, not 40 + 64
  EXPECT_EQ(conv.usage().prompt_tokens, 215);
  EXPECT_EQ(conv.finish_reason(), "length");
  EXPECT_FALSE(conv.finished());
  feed("message_stop", R"({"type":"message_stop"})");
  EXPECT_TRUE(conv.finished());
}

TEST(MessagesStreamToChat, ADeltaRepeatingInputKeepsTheCacheTtlSplitAndTier) {
  MessagesStreamToChat conv("m");
  std::vector<std::string> chunks;
  auto feed = [&](std::string_view event, std::string_view data) {
    conv.on_event(http::SseEvent{std::string(event), std::string(data), {}, {}}, chunks);
  };
  feed("message_start", R"({"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant",
       "content":[],"model":"claude","stop_reason":null,"stop_sequence":null,
       "usage":{"input_tokens":10,"cache_creation_input_tokens":300,"cache_read_input_tokens":0,
                "cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200},
                "output_tokens":1,"service_tier":"priority"}}})");
  feed("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},
       "usage":{"input_tokens":10,"cache_creation_input_tokens":300,"cache_read_input_tokens":0,"output_tokens":50}})");
  EXPECT_TRUE(conv.usage_final());
  EXPECT_EQ(conv.usage().prompt_tokens, 310);
  EXPECT_EQ(conv.usage().cache_write_1h_tokens, 200);  // the 1-hour writes stay 1-hour writes
  EXPECT_EQ(conv.usage().cache_write_tokens, 100);
  EXPECT_EQ(conv.usage().service_tier, "priority");
  EXPECT_EQ(conv.usage().completion_tokens, 50);
  // A delta that only sends cache counts (some gateways): they are read, not ignored.
  feed("message_delta", R"({"type":"message_delta","delta":{},"usage":{"cache_read_input_tokens":40,"output_tokens":50}})");
  EXPECT_EQ(conv.usage().cached_tokens, 40);
  EXPECT_EQ(conv.usage().prompt_tokens, 350);
}

TEST(MessagesStreamToChat, ErrorEventAfterPartialOutput) {
  MessagesStreamToChat conv("m");
  std::vector<std::string> chunks;
  for (const auto& ev : sse_events(read_fixture("anthropic_stream_error.sse"))) conv.on_event(ev, chunks);
  ASSERT_TRUE(conv.error().has_value());
  EXPECT_EQ(*conv.error(), obj(R"({"type":"overloaded_error","message":"Overloaded"})"));
  EXPECT_FALSE(conv.finished());
  EXPECT_EQ(summarize(parse_chunks(chunks)).content, "Partial");
  EXPECT_EQ(conv.usage().prompt_tokens, 132);  // 12 + 100 read + 20 creation
  EXPECT_EQ(conv.usage().cached_tokens, 100);
  const auto f = parse_anthropic_error(json::parse(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  EXPECT_EQ(f.type, "overloaded_error");
}

TEST(MessagesStreamToChat, MalformedDataIsAnError) {
  MessagesStreamToChat conv("m");
  std::vector<std::string> chunks;
  conv.on_event(http::SseEvent{"content_block_delta", "{\"type\":", {}, {}}, chunks);
  EXPECT_TRUE(conv.error().has_value());
  EXPECT_TRUE(chunks.empty());
}

TEST(MessagesStreamToChat, PingAndUnknownIgnored) {
  MessagesStreamToChat conv("m");
  std::vector<std::string> chunks;
  conv.on_event(http::SseEvent{"ping", R"({"type": "ping"})", {}, {}}, chunks);
  conv.on_event(http::SseEvent{"future_event", R"({"type":"future_event","x":1})", {}, {}}, chunks);
  conv.on_event(http::SseEvent{"content_block_start",
                               R"({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})",
                               {},
                               {}},
                chunks);
  conv.on_event(http::SseEvent{"content_block_delta",
                               R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}})",
                               {},
                               {}},
                chunks);
  EXPECT_TRUE(chunks.empty());
  EXPECT_FALSE(conv.error());
}

TEST(MessagesStreamToChat, EscapesTextInChunks) {
  MessagesStreamToChat conv("m\"odel");
  std::vector<std::string> chunks;
  conv.on_event(http::SseEvent{"content_block_delta",
                               R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\"b\\c\nd\u0001é"}})",
                               {},
                               {}},
                chunks);
  ASSERT_EQ(chunks.size(), 1u);
  const auto c = obj(chunks[0]);
  EXPECT_EQ(c.at("model"), "m\"odel");
  EXPECT_EQ(c.at("choices").as_array()[0].at("delta").at("content"), "a\"b\\c\nd\x01\xC3\xA9");
}

// ============================================================================================
// d) messages_request_to_chat
// ============================================================================================

TEST(MessagesRequestToChat, Validation) {
  auto err = [](std::string_view body) {
    auto r = messages_request_to_chat(obj(body));
    EXPECT_FALSE(r.has_value()) << body;
    return r.has_value() ? std::string() : r.error();
  };
  EXPECT_EQ(err(R"({"model":"m","messages":[]})"), "max_tokens: Field required");
  EXPECT_EQ(err(R"({"model":"m","messages":[],"max_tokens":"10"})"), "max_tokens: Input should be a valid integer");
  EXPECT_EQ(err(R"({"model":"m","messages":[],"max_tokens":0})"),
            "max_tokens: Input should be greater than or equal to 1");
  EXPECT_EQ(err(R"({"messages":[],"max_tokens":10})"), "model: Field required");
  EXPECT_EQ(err(R"({"model":5,"messages":[],"max_tokens":10})"), "model: Input should be a valid string");
  EXPECT_EQ(err(R"({"model":"m","max_tokens":10})"), "messages: Field required");
  EXPECT_EQ(err(R"({"model":"m","messages":{},"max_tokens":10})"), "messages: Input should be a valid list");
  EXPECT_EQ(err(R"({"model":"m","messages":[{"role":"system","content":"x"}],"max_tokens":10})"),
            "messages.0.role: Input should be 'user' or 'assistant'");
  EXPECT_EQ(err(R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"user","content":3}],"max_tokens":10})"),
            "messages.1.content: Input should be a valid string or list");
  EXPECT_TRUE(messages_request_to_chat(obj(R"({"model":"m","messages":[],"max_tokens":10})")).has_value());
}

TEST(MessagesRequestToChat, FullRequest) {
  const auto req = obj(R"({
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are a weather bot."}, {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
      {"role": "user", "content": [
        {"type": "text", "text": "What is in this image and what's the weather?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
        {"type": "image", "source": {"type": "url", "url": "https://upload.example/ant.jpg"}}]},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"location": "San Francisco, CA"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": [{"type": "text", "text": "15 degrees"}]},
        {"type": "text", "text": "Thanks!"}]}
    ],
    "stop_sequences": ["\n\nHuman:"],
    "temperature": 0.5, "top_p": 0.8, "top_k": 40,
    "stream": true,
    "tools": [{"name": "get_weather", "description": "Get the current weather",
               "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}},
              {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
    "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    "metadata": {"user_id": "user-123"}
  })");
  const auto r = messages_request_to_chat(req);
  ASSERT_TRUE(r.has_value()) << r.error();
  const auto expected = obj(R"({
    "model": "claude-sonnet-4-5",
    "messages": [
      {"role": "system", "content": [
        {"type": "text", "text": "You are a weather bot."},
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]},
      {"role": "user", "content": [
        {"type": "text", "text": "What is in this image and what's the weather?"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
        {"type": "image_url", "image_url": {"url": "https://upload.example/ant.jpg"}}]},
      {"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "toolu_01A", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\":\"San Francisco, CA\"}"}}]},
      {"role": "tool", "tool_call_id": "toolu_01A", "content": "15 degrees"},
      {"role": "user", "content": "Thanks!"}
    ],
    "max_tokens": 1024,
    "temperature": 0.5, "top_p": 0.8,
    "stop": ["\n\nHuman:"],
    "stream": true, "stream_options": {"include_usage": true},
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather",
               "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}],
    "tool_choice": "required",
    "parallel_tool_calls": false,
    "user": "user-123"
  })");
  EXPECT_EQ(*r, expected) << json::serialize(*r);
}

TEST(MessagesRequestToChat, ToolChoiceVariants) {
  auto tc = [](std::string_view choice) {
    auto r = messages_request_to_chat(obj(std::string(R"({"model":"m","max_tokens":5,"messages":[],
        "tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":)") + std::string(choice) + "}"));
    return r->at("tool_choice");
  };
  EXPECT_EQ(tc(R"({"type":"auto"})"), "auto");
  EXPECT_EQ(tc(R"({"type":"none"})"), "none");
  EXPECT_EQ(tc(R"({"type":"tool","name":"f"})"), json::parse(R"({"type":"function","function":{"name":"f"}})"));
}

TEST(MessagesRequestToChat, NonStreamingHasNoStreamOptions) {
  auto r = messages_request_to_chat(obj(R"({"model":"m","max_tokens":5,"system":"sys","stream":false,
      "messages":[{"role":"user","content":"hi"}]})"));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->contains("stream_options"));
  EXPECT_EQ(r->at("messages"), json::parse(R"([{"role":"system","content":"sys"},{"role":"user","content":"hi"}])"));
}

// ============================================================================================
// e) chat_response_to_messages
// ============================================================================================

TEST(ChatResponseToMessages, RealisticCompletion) {
  const auto chat = obj(R"({
    "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion", "created": 1741569952,
    "model": "gpt-4.1-2025-04-14",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Checking.", "refusal": null,
      "tool_calls": [{"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      "logprobs": null, "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230,
              "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0}}
  })");
  const auto msg = chat_response_to_messages(chat, "claude-group");
  EXPECT_EQ(msg, obj(R"({
    "id": "msg_chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "type": "message", "role": "assistant", "model": "claude-group",
    "content": [{"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_abc", "name": "get_weather", "input": {"city": "Paris"}}],
    "stop_reason": "tool_use", "stop_sequence": null,
    "usage": {"input_tokens": 176, "output_tokens": 30, "cache_read_input_tokens": 1024, "cache_creation_input_tokens": 0}
  })")) << json::serialize(msg);
}

TEST(ChatResponseToMessages, IdKeptAndStopReasons) {
  auto conv = [](std::string_view fr) {
    return chat_response_to_messages(obj(std::string(R"({"id":"msg_abc","choices":[{"index":0,
        "message":{"role":"assistant","content":"x"},"finish_reason":)") + std::string(fr) + "}]}"),
                                     "m");
  };
  EXPECT_EQ(conv(R"("stop")").at("id"), "msg_abc");
  EXPECT_EQ(conv(R"("stop")").at("stop_reason"), "end_turn");
  EXPECT_EQ(conv(R"("length")").at("stop_reason"), "max_tokens");
  EXPECT_EQ(conv(R"("tool_calls")").at("stop_reason"), "tool_use");
  EXPECT_EQ(conv(R"("content_filter")").at("stop_reason"), "refusal");
  EXPECT_TRUE(conv("null").at("stop_reason").is_null());
}

// ============================================================================================
// Round trips
// ============================================================================================

TEST(RoundTrip, ResponseAnthropicToOpenAiToAnthropic) {
  const auto original = obj(R"({
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "model": "claude-group",
    "content": [{"type": "text", "text": "Hi!"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": [1, 2], "b": {"c": null}}}],
    "stop_reason": "tool_use", "stop_sequence": null,
    "usage": {"input_tokens": 12, "output_tokens": 6, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 0}
  })");
  const auto back = chat_response_to_messages(messages_response_to_chat(original, "claude-group"), "claude-group");
  EXPECT_EQ(back, original) << json::serialize(back);
}

TEST(RoundTrip, RequestOpenAiToAnthropicToOpenAi) {
  const auto chat = obj(R"({
    "model": "m",
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": "hello"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "42"},
      {"role": "assistant", "content": "The answer is 42."}
    ],
    "max_tokens": 100, "temperature": 0.0, "stop": ["\n"],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}],
    "tool_choice": {"type": "function", "function": {"name": "f"}},
    "user": "u1"
  })");
  auto anthropic_req = chat_request_to_messages(chat, "m", 4096);
  auto back = messages_request_to_chat(anthropic_req);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(*back, chat) << json::serialize(*back);
}

TEST(RoundTrip, StreamOpenAiChunksToAnthropicAndBack) {
  // OpenAI stream (text, then two parallel tool calls, then the include_usage chunk) →
  // Anthropic events → formatted SSE → parsed → OpenAI chunks again.
  const std::vector<std::string> openai = {
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"content":"look."},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]},"finish_reason":null}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":null})",
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt","choices":[],"usage":{"prompt_tokens":90,"completion_tokens":21,"total_tokens":111,"prompt_tokens_details":{"cached_tokens":64}}})",
  };
  ChatStreamToMessages to_anthropic("claude-group");
  std::vector<AnthropicSseEvent> events;
  for (const auto& c : openai) to_anthropic.on_chunk(obj(c), events);
  EXPECT_TRUE(to_anthropic.finished());  // finish_reason + usage: final events already out
  const std::size_t n = events.size();
  to_anthropic.finish(events);
  EXPECT_EQ(events.size(), n);  // nothing twice

  std::vector<std::string> names;
  for (const auto& [e, d] : events) {
    names.push_back(e);
    EXPECT_EQ(obj(d).at("type").as_string(), e);  // the data's type always matches the event name
  }
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                             "content_block_delta", "content_block_stop", "content_block_start",
                                             "content_block_delta", "content_block_delta", "content_block_stop",
                                             "content_block_start", "content_block_delta", "content_block_stop",
                                             "message_delta", "message_stop"}));
  const auto start = obj(events[0].second);
  EXPECT_EQ(start.at("message").at("id"), "msg_chatcmpl-1");
  EXPECT_EQ(start.at("message").at("model"), "claude-group");
  EXPECT_EQ(start.at("message").at("usage").at("input_tokens"), 0);
  EXPECT_EQ(obj(events[9].second).at("index"), 2);
  EXPECT_EQ(obj(events[9].second).at("content_block"),
            json::parse(R"({"type":"tool_use","id":"call_b","name":"g","input":{}})"));
  const auto delta = obj(events[12].second);
  EXPECT_EQ(delta.at("delta").at("stop_reason"), "tool_use");
  EXPECT_EQ(delta.at("usage"),
            json::parse(R"({"output_tokens":21,"input_tokens":26,"cache_read_input_tokens":64,"cache_creation_input_tokens":0})"));

  std::string wire;
  for (const auto& [e, d] : events) http::append_sse_event(wire, e, d);
  MessagesStreamToChat back("gpt", true, 1);
  std::vector<std::string> chunks;
  for (const auto& ev : sse_events(wire)) back.on_event(ev, chunks);
  const auto s = summarize(parse_chunks(chunks));
  EXPECT_EQ(s.content, "Let me look.");
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[0].id, "call_a");
  EXPECT_EQ(s.calls[0].arguments, "{\"q\":1}");
  EXPECT_EQ(s.calls[1].name, "g");
  EXPECT_EQ(s.calls[1].arguments, "{}");
  EXPECT_EQ(s.finish_reason, "tool_calls");
  ASSERT_TRUE(s.usage.has_value());
  EXPECT_EQ(usage_from_openai(*s.usage).prompt_tokens, 90);
  EXPECT_EQ(usage_from_openai(*s.usage).cached_tokens, 64);
  EXPECT_EQ(usage_from_openai(*s.usage).completion_tokens, 21);
  EXPECT_TRUE(back.finished());
}

// ============================================================================================
// f) ChatStreamToMessages edge cases
// ============================================================================================

TEST(ChatStreamToMessages, WithoutUsageChunkFinishEmitsFinal) {
  ChatStreamToMessages conv("m");
  std::vector<AnthropicSseEvent> out;
  conv.on_chunk(obj(R"({"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]})"), out);
  conv.on_chunk(obj(R"({"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]})"), out);
  EXPECT_FALSE(conv.finished());  // waits for a possible usage chunk
  conv.finish(out);
  EXPECT_TRUE(conv.finished());
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out[out.size() - 2].first, "message_delta");
  EXPECT_EQ(obj(out[out.size() - 2].second),
            obj(R"({"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":0}})"));
  EXPECT_EQ(out.back().first, "message_stop");
  EXPECT_FALSE(conv.usage().reported);
}

TEST(ChatStreamToMessages, TruncatedStreamHasNullStopReason) {
  ChatStreamToMessages conv("m");
  std::vector<AnthropicSseEvent> out;
  conv.on_chunk(obj(R"({"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]})"), out);
  conv.finish(out);
  std::vector<std::string> names;
  for (const auto& e : out) names.push_back(e.first);
  EXPECT_EQ(names, (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                             "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_TRUE(obj(out[4].second).at("delta").at("stop_reason").is_null());
}

TEST(ChatStreamToMessages, EmptyStreamStillWellFormed) {
  ChatStreamToMessages conv("m");
  std::vector<AnthropicSseEvent> out;
  conv.finish(out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].first, "message_start");
  EXPECT_EQ(out[2].first, "message_stop");
}

// ============================================================================================
// g) errors
// ============================================================================================

TEST(Errors, Body) {
  EXPECT_EQ(anthropic_error_body("not_found_error", "model: claude-x"),
            obj(R"({"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}})"));
}

TEST(Errors, TypeForStatus) {
  EXPECT_EQ(anthropic_error_type_for_status(400), "invalid_request_error");
  EXPECT_EQ(anthropic_error_type_for_status(401), "authentication_error");
  EXPECT_EQ(anthropic_error_type_for_status(402), "billing_error");
  EXPECT_EQ(anthropic_error_type_for_status(403), "permission_error");
  EXPECT_EQ(anthropic_error_type_for_status(404), "not_found_error");
  EXPECT_EQ(anthropic_error_type_for_status(413), "request_too_large");
  EXPECT_EQ(anthropic_error_type_for_status(422), "invalid_request_error");
  EXPECT_EQ(anthropic_error_type_for_status(429), "rate_limit_error");
  EXPECT_EQ(anthropic_error_type_for_status(500), "api_error");
  EXPECT_EQ(anthropic_error_type_for_status(502), "api_error");
  EXPECT_EQ(anthropic_error_type_for_status(503), "overloaded_error");
  EXPECT_EQ(anthropic_error_type_for_status(504), "timeout_error");
  EXPECT_EQ(anthropic_error_type_for_status(529), "overloaded_error");
}

TEST(Errors, Parse) {
  auto f = parse_anthropic_error(json::parse(
      R"({"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"})"));
  EXPECT_EQ(f.type, "rate_limit_error");
  EXPECT_EQ(f.message, "Number of request tokens has exceeded your per-minute rate limit");
  EXPECT_EQ(f.code, "");
  f = parse_anthropic_error(json::parse(R"({"type":"overloaded_error","message":"Overloaded"})"));
  EXPECT_EQ(f.type, "overloaded_error");
  EXPECT_EQ(f.message, "Overloaded");
  f = parse_anthropic_error(json::parse(R"("upstream connect error")"));
  EXPECT_EQ(f.type, "");
  EXPECT_EQ(f.message, "");
  const auto body = anthropic_error_body("api_error", "boom");
  f = parse_anthropic_error(body);
  EXPECT_EQ(f.type, "api_error");
  EXPECT_EQ(f.message, "boom");
}


TEST(MessagesRoundTrip, PromptCacheMarksReachTheProvider) {
  // /v1/messages → chat → Anthropic upstream: cache_control on system and user blocks survives
  // (a dropped mark silently turns cache reads into full-price input).
  const auto req = obj(R"({"model":"c","max_tokens":10,
    "system":[{"type":"text","text":"Long rules.","cache_control":{"type":"ephemeral","ttl":"1h"}}],
    "messages":[{"role":"user","content":[{"type":"text","text":"Doc.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Q?"}]}]})");
  const auto chat = messages_request_to_chat(req);
  ASSERT_TRUE(chat.has_value()) << chat.error();
  const auto back = chat_request_to_messages(*chat, "claude-x", 10);
  const auto& system = back.at("system").as_array();
  ASSERT_EQ(system.size(), 1u);
  EXPECT_EQ(system[0].at("cache_control").at("ttl").as_string(), "1h");
  const auto& blocks = back.at("messages").as_array()[0].at("content").as_array();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].at("cache_control").at("type").as_string(), "ephemeral");
  EXPECT_FALSE(blocks[1].as_object().contains("cache_control"));
  // Without marks the system stays one string.
  const auto plain = chat_request_to_messages(
      *messages_request_to_chat(obj(R"({"model":"c","max_tokens":10,"system":"Rules.","messages":[{"role":"user","content":"hi"}]})")),
      "claude-x", 10);
  EXPECT_TRUE(plain.at("system").is_string());
}

// Found by fuzz_anthropic_stream (tests/fuzz/regressions/anthropic_stream/): events an upstream
// sent after message_stop were still translated, so the client got text chunks after the final
// usage chunk (and a second finish). message_stop ends the stream.
TEST(MessagesStreamToChat, NothingAfterMessageStopIsRelayed) {
  MessagesStreamToChat conv("m", true, 1);
  std::vector<std::string> chunks;
  const auto feed = [&](const char* event, const char* data) {
    conv.on_event(http::SseEvent{event, data, {}, {}}, chunks);
  };
  feed("message_start", R"({"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3,"output_tokens":0}}})");
  feed("content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})");
  feed("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})");
  feed("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}})");
  feed("message_stop", R"({"type":"message_stop"})");
  ASSERT_TRUE(conv.finished());
  const auto whole = chunks.size();
  ASSERT_NE(chunks.back().find(R"("usage":{"prompt_tokens":3)"), std::string::npos) << chunks.back();
  feed("content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"more"}})");
  feed("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":99}})");
  feed("message_stop", R"({"type":"message_stop"})");
  EXPECT_EQ(chunks.size(), whole) << chunks.back();
  EXPECT_EQ(conv.usage().completion_tokens, 1);
  EXPECT_EQ(conv.finish_reason(), "stop");
}

// UBSan under fuzz_upstream_decode (tests/fuzz/regressions/upstream_decode/anthropic-usage-sum-overflow):
// input_tokens + cache_read_input_tokens overflowed int64 (undefined; in practice a negative
// prompt count, so a negative charge). A count above kMaxTokenCount is not a count.
TEST(AnthropicUsage, AbsurdCountsAreNotReadAndNeverOverflow) {
  auto u = usage_from_anthropic(json::parse(
      R"({"input_tokens":9223372036854775807,"output_tokens":1,"cache_read_input_tokens":5})"));
  EXPECT_FALSE(u.reported) << "the required input count is unreadable: the bill is unknown";
  u = usage_from_anthropic(json::parse(
      R"({"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":9223372036854775807,"cache_creation_input_tokens":9223372036854775807})"));
  ASSERT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 10);
  EXPECT_EQ(u.cached_tokens, 0);
  u = usage_from_anthropic(json::parse(
      R"({"input_tokens":1000000000000000,"output_tokens":1000000000000000,"cache_read_input_tokens":1000000000000000,"cache_creation_input_tokens":1000000000000000})"));
  ASSERT_TRUE(u.reported) << "kMaxTokenCount itself is a count";
  EXPECT_EQ(u.prompt_tokens, 3 * kMaxTokenCount);
  EXPECT_FALSE(usage_from_openai(json::parse(R"({"prompt_tokens":1000000000000001,"completion_tokens":1})")).reported);
  EXPECT_TRUE(usage_from_openai(json::parse(R"({"prompt_tokens":1e15,"completion_tokens":1})")).reported);
}

}  // namespace
}  // namespace tollgate::providers::anthropic
