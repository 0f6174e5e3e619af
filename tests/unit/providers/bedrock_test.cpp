// Bedrock Converse translation, ConverseStream decoding and AWS error reading.
#include "http/aws_eventstream.hpp"
#include "http/stream_frames.hpp"
#include "policy/failure.hpp"
#include "providers/bedrock/adapter.hpp"
#include "providers/bedrock/converse.hpp"
#include "providers/bedrock/converse_stream.hpp"
#include "providers/bedrock/errors.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

using namespace tollgate;
using namespace tollgate::providers;
using namespace tollgate::providers::bedrock;
namespace json = boost::json;

namespace {

json::object obj(std::string_view s) { return json::parse(s).as_object(); }

config::Deployment deployment() {
  config::Deployment d;
  d.id = "b1";
  d.model_name = "claude-bedrock";
  d.provider = config::ProviderKind::bedrock;
  d.upstream_model = "us.anthropic.claude-3-5-sonnet-20240620-v1:0";
  d.cloud.aws_access_key_id = "AKIDEXAMPLE";
  d.cloud.aws_secret_access_key = "secret";
  d.cloud.aws_region_name = "us-west-2";
  return d;
}

}  // namespace

TEST(BedrockConverse, RequestTranslation) {
  const auto chat = obj(R"({"model":"x","max_tokens":100,"temperature":0.5,"top_p":0.9,"stop":"END",
    "messages":[{"role":"system","content":"be brief"},
                {"role":"user","content":[{"type":"text","text":"look","cache_control":{"type":"ephemeral"}},
                                          {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},
                {"role":"user","content":"and answer"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"get","arguments":"{\"q\":1}"}}]},
                {"role":"tool","tool_call_id":"t1","content":"42"}],
    "tools":[{"type":"function","function":{"name":"get","description":"fetch","parameters":{"type":"object","properties":{"q":{"type":"integer"}}}}}],
    "tool_choice":"required","n":3,"seed":7})");
  const auto c = chat_to_converse(chat);
  EXPECT_EQ(json::serialize(c.at("system")), R"([{"text":"be brief"}])");
  const auto& msgs = c.at("messages").as_array();
  ASSERT_EQ(msgs.size(), 3u);  // the two user turns merged
  EXPECT_EQ(json::serialize(msgs[0]),
            R"({"role":"user","content":[{"text":"look"},{"cachePoint":{"type":"default"}},)"
            R"({"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}},{"text":"and answer"}]})");
  EXPECT_EQ(json::serialize(msgs[1]), R"({"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"get","input":{"q":1}}}]})");
  EXPECT_EQ(json::serialize(msgs[2]), R"({"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"42"}]}}]})");
  EXPECT_EQ(json::serialize(c.at("inferenceConfig")), R"({"maxTokens":100,"temperature":5E-1,"topP":9E-1,"stopSequences":["END"]})");
  EXPECT_EQ(json::serialize(c.at("toolConfig")),
            R"({"tools":[{"toolSpec":{"name":"get","description":"fetch","inputSchema":{"json":{"type":"object","properties":{"q":{"type":"integer"}}}}}}],"toolChoice":{"any":{}}})");
  EXPECT_FALSE(c.contains("n"));
  EXPECT_FALSE(c.contains("seed"));
}

TEST(BedrockConverse, OutputLimitIsTheMaxTokensTheReservationPaysFor) {
  const auto& p = bedrock::adapter();
  auto chat = obj(R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":900})");
  p.set_output_limit(deployment(), chat, 250, OutputField::max_completion_tokens);
  EXPECT_EQ(chat_to_converse(chat).at("inferenceConfig").at("maxTokens").as_int64(), 250);
}

TEST(BedrockConverse, ReasoningEffortBecomesAThinkingBudget) {
  const auto c = chat_to_converse(obj(R"({"messages":[],"reasoning_effort":"medium"})"));
  EXPECT_EQ(json::serialize(c.at("additionalModelRequestFields")), R"({"thinking":{"type":"enabled","budget_tokens":2048}})");
}

TEST(BedrockConverse, ResponseAndUsage) {
  const auto r = obj(R"({"output":{"message":{"role":"assistant","content":[
      {"reasoningContent":{"reasoningText":{"text":"hmm","signature":"s"}}},{"text":"Hel"},{"text":"lo"},
      {"toolUse":{"toolUseId":"tu1","name":"get","input":{"q":2}}}]}},
    "stopReason":"tool_use",
    "usage":{"inputTokens":10,"outputTokens":7,"totalTokens":47,"cacheReadInputTokens":20,"cacheWriteInputTokens":10}})");
  const auto chat = converse_to_chat(r, "m");
  const auto& ch = chat.at("choices").as_array()[0].as_object();
  EXPECT_EQ(ch.at("finish_reason"), "tool_calls");
  EXPECT_EQ(ch.at("message").at("content"), "Hello");
  EXPECT_EQ(ch.at("message").at("reasoning_content"), "hmm");
  EXPECT_EQ(json::serialize(ch.at("message").at("tool_calls")),
            R"([{"index":0,"id":"tu1","type":"function","function":{"name":"get","arguments":"{\"q\":2}"}}])");
  const Usage u = usage_from_converse(r.at("usage"));
  ASSERT_TRUE(u.reported);
  EXPECT_EQ(u.prompt_tokens, 40);
  EXPECT_EQ(u.cached_tokens, 20);
  EXPECT_EQ(u.cache_write_tokens, 10);
  EXPECT_EQ(u.completion_tokens, 7);
  EXPECT_EQ(chat.at("usage").at("prompt_tokens").as_int64(), 40);
  EXPECT_FALSE(usage_from_converse(json::parse(R"({"inputTokens":"10","outputTokens":1})")).reported);
  EXPECT_FALSE(usage_from_converse(json::value(nullptr)).reported);
}

TEST(BedrockConverse, StopReasons) {
  EXPECT_EQ(finish_reason_from_stop_reason("end_turn"), "stop");
  EXPECT_EQ(finish_reason_from_stop_reason("stop_sequence"), "stop");
  EXPECT_EQ(finish_reason_from_stop_reason("max_tokens"), "length");
  EXPECT_EQ(finish_reason_from_stop_reason("tool_use"), "tool_calls");
  EXPECT_EQ(finish_reason_from_stop_reason("guardrail_intervened"), "content_filter");
  EXPECT_EQ(finish_reason_from_stop_reason("content_filtered"), "content_filter");
}

TEST(BedrockAdapter, BuildsASignedConverseRequest) {
  auto d = deployment();
  auto chat = obj(R"({"model":"claude-bedrock","messages":[{"role":"user","content":"hi"}]})");
  auto req = bedrock::adapter().build_request(d, chat, true);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->target.host, "bedrock-runtime.us-west-2.amazonaws.com");
  EXPECT_EQ(req->target.path_and_query, "/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream");
  std::string auth;
  for (const auto& [k, v] : req->headers)
    if (k == "Authorization") auth = v;
  EXPECT_TRUE(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")) << auth;
  EXPECT_NE(auth.find("/us-west-2/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature="), std::string::npos);
  EXPECT_EQ(bedrock::adapter().stream_framing(d), http::StreamFraming::aws_eventstream);
  d.api_base = "http://127.0.0.1:9999/";
  req = bedrock::adapter().build_request(d, chat, false);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->target.port, "9999");
  EXPECT_EQ(req->target.path_and_query, "/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse");
}

TEST(BedrockAdapter, MissingCredentialsAreNamed) {
  auto d = deployment();
  EXPECT_FALSE(bedrock::adapter().credentials_error(d));
  d.cloud.aws_secret_access_key.clear();
  d.cloud.aws_region_name.clear();
  const auto why = bedrock::adapter().credentials_error(d);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("aws_secret_access_key"), std::string::npos);
  EXPECT_NE(why->find("aws_region_name"), std::string::npos);
}

TEST(BedrockErrors, ClassifiedByExceptionName) {
  const auto& p = bedrock::adapter();
  auto cls = [&](int st, std::string_view body, std::string_view type) {
    return policy::classify(p.parse_typed_error(st, body, type));
  };
  using FC = policy::FailureClass;
  EXPECT_EQ(cls(429, R"({"message":"Too many requests"})", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            FC::retryable_capacity);
  EXPECT_EQ(cls(503, R"({"message":"unavailable"})", "ServiceUnavailableException"), FC::retryable_capacity);
  EXPECT_EQ(cls(400, R"({"message":"Input is too long for requested model."})", "ValidationException"), FC::context_overflow);
  EXPECT_EQ(cls(400, R"({"message":"prompt has too many input tokens"})", "ValidationException"), FC::context_overflow);
  EXPECT_EQ(cls(400, R"({"message":"Malformed input request"})", "ValidationException"), FC::caller_fix_required);
  EXPECT_EQ(cls(403, R"({"message":"The security token included in the request is invalid."})", "UnrecognizedClientException"),
            FC::deployment_misconfigured);
  EXPECT_EQ(cls(404, R"({"message":"no such model"})", "ResourceNotFoundException"), FC::deployment_misconfigured);
  EXPECT_EQ(cls(500, R"({"message":"boom"})", "InternalServerException"), FC::transient_provider_error);
  EXPECT_EQ(cls(424, R"({"message":"model error"})", "ModelErrorException"), FC::transient_provider_error);
  EXPECT_EQ(cls(408, R"({"message":"slow"})", "ModelTimeoutException"), FC::retryable_capacity);
  // The name may come in the body instead.
  const auto o = p.parse_error(400, R"({"__type":"com.amazon.coral.validate#ValidationException","message":"bad"})");
  EXPECT_EQ(o.error_type, "ValidationException");
  EXPECT_TRUE(o.error_body);
  // A proxy's bare {"message"} is no evidence of an unbilled AWS error.
  EXPECT_FALSE(p.parse_error(504, R"({"message":"Gateway Timeout"})").error_body);
}

TEST(BedrockStream, DecodesTextToolCallsUsageAndExceptions) {
  auto frames = http::make_frame_parser(http::StreamFraming::aws_eventstream);
  bedrock::ConverseStreamDecoder dec("m", true);
  auto ev = [](std::string type, std::string payload) {
    return http::encode_event_stream_message({{":event-type", type}, {":message-type", "event"}}, payload);
  };
  const std::string bytes =
      ev("messageStart", R"({"role":"assistant"})") +
      ev("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"text":"Hi"}})") +
      ev("contentBlockStop", R"({"contentBlockIndex":0})") +
      ev("contentBlockStart", R"({"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"tu","name":"get"}}})") +
      ev("contentBlockDelta", R"({"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"q\""}}})") +
      ev("contentBlockDelta", R"({"contentBlockIndex":1,"delta":{"toolUse":{"input":":1}"}}})") +
      ev("messageStop", R"({"stopReason":"tool_use"})") +
      ev("metadata", R"({"usage":{"inputTokens":5,"outputTokens":9,"cacheReadInputTokens":4},"metrics":{"latencyMs":1}})");
  std::vector<std::string> out;
  ASSERT_TRUE(frames->feed(bytes, [&](const http::SseEvent& e) { dec.on_event(e, out); }));
  ASSERT_EQ(out.size(), 7u);
  auto delta = [&](std::size_t i) { return json::parse(out[i]).at("choices").as_array()[0].at("delta"); };
  EXPECT_EQ(delta(0).at("role"), "assistant");
  EXPECT_EQ(delta(1).at("content"), "Hi");
  EXPECT_EQ(json::serialize(delta(2).at("tool_calls")),
            R"([{"index":0,"id":"tu","type":"function","function":{"name":"get","arguments":""}}])");
  EXPECT_EQ(delta(3).at("tool_calls").as_array()[0].at("function").at("arguments"), "{\"q\"");
  EXPECT_EQ(json::parse(out[5]).at("choices").as_array()[0].at("finish_reason"), "tool_calls");
  EXPECT_EQ(json::parse(out[6]).at("usage").at("prompt_tokens").as_int64(), 9);
  EXPECT_TRUE(dec.finished());
  EXPECT_TRUE(dec.usage_final());
  EXPECT_EQ(dec.usage().cached_tokens, 4);

  bedrock::ConverseStreamDecoder dec2("m", false);
  std::vector<std::string> out2;
  auto f2 = http::make_frame_parser(http::StreamFraming::aws_eventstream);
  f2->feed(http::encode_event_stream_message({{":exception-type", "throttlingException"}, {":message-type", "exception"}},
                                             R"({"message":"Too many tokens, please wait"})"),
           [&](const http::SseEvent& e) { dec2.on_event(e, out2); });
  ASSERT_TRUE(dec2.error());
  EXPECT_EQ(dec2.error()->status, 429);
  EXPECT_EQ(dec2.error()->error_type, "ThrottlingException");
  EXPECT_EQ(policy::classify(*dec2.error()), policy::FailureClass::retryable_capacity);
  EXPECT_FALSE(dec2.finished());
}
